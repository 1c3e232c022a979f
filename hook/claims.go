package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// PreToolUse is the event Claude Code (and Codex) runs before a tool call:
// the hook stops an edit of a path another party claimed (chat_claim),
// and lets everything else pass silently.
const PreToolUse = "PreToolUse"

// EditTools are the tools whose calls the PreToolUse hook looks at:
// Claude Code's file edits, and Codex's apply_patch. setup's matcher
// names them, so that no other tool call pays for the hook.
var EditTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"}

// checkEdit answers PreToolUse: nothing, unless the call edits a file an
// exclusive path claim of another party holds. Its quiet path — nothing
// claimed — reads the payload and, on a database file, one small file
// beside it (sqlite.PathClaimsUntil): no SQLite.
func (o Options) checkEdit(ctx context.Context, pl Payload) string {
	if !slices.Contains(EditTools, pl.ToolName) {
		return ""
	}
	r := o.resolved
	if r == nil {
		r = &resolved{}
		r.paths, r.cfg, r.err = config.Resolve(o.Env, o.Exe)
	}
	if r.err != nil || r.cfg.Claims.Enforce == config.EnforceOff {
		return ""
	}
	if !config.IsHub(r.paths.Store) && !config.IsPostgres(r.paths.Store) {
		until, ok := store.PathClaimsUntil(r.paths.DB)
		if ok && (until == "" || until <= store.Now()) {
			return "" // no path claim can be live
		}
	}
	targets := editTargets(pl)
	if len(targets) == 0 {
		return ""
	}
	me, err := config.Identify(config.StartDir(o.Env, "", pl.Cwd), r.cfg.Identity.GitRoot)
	if err != nil {
		return ""
	}
	claims, err := o.editClaims(ctx, pl, r.paths, me)
	if err != nil || len(claims) == 0 {
		return ""
	}
	team := config.IsHub(r.paths.Store)
	for _, target := range targets {
		if c, rel, ok := claimOn(claims, target, r.cfg.Identity.GitRoot, team); ok {
			return editStopped(c, rel, r.cfg.Claims.Enforce, pl.TurnID != "")
		}
	}
	return ""
}

// editClaims are the claims that stop an edit of the party me: read from
// the store, or on a member machine from the cache its serve keeps (or
// the hub itself).
func (o Options) editClaims(ctx context.Context, pl Payload, paths config.Paths, me config.Party) ([]store.Claim, error) {
	if o.readClaims != nil {
		o.readClaims()
	}
	if !config.IsHub(paths.Store) {
		open := o.opener(paths)
		ro, err := open(ctx)
		if err != nil {
			return nil, err
		}
		defer ro.Close()
		return ro.EditClaims(ctx, store.Identity{Name: me.Name, Workspace: me.Root})
	}
	var p store.Pending
	if c, ok := o.cachedFor(paths, me.Name); ok {
		p = c.Pending
	} else {
		if o.TeamHub == nil {
			return nil, errNoTeamStore
		}
		var err error
		if p, _, _, err = o.TeamHub(ctx, paths, me.Name, ""); err != nil {
			return nil, err
		}
	}
	var out []store.Claim
	for _, c := range p.Claims {
		if c.Kind == "path" && c.Exclusive && c.Holder != p.Party && c.Until > store.Now() {
			out = append(out, c)
		}
	}
	return out, nil
}

// editTargets are the files a tool call would change, absolute: Claude
// Code's file_path (notebook_path), and the files an apply_patch names.
func editTargets(pl Payload) []string {
	if len(pl.ToolInput) == 0 {
		return nil
	}
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Command      string `json:"command"`
		Input        string `json:"input"`
	}
	if json.Unmarshal(pl.ToolInput, &in) != nil {
		return nil
	}
	var paths []string
	switch pl.ToolName {
	case "Edit", "Write", "MultiEdit":
		paths = []string{in.FilePath}
	case "NotebookEdit":
		paths = []string{in.NotebookPath}
	case "apply_patch":
		paths = patchFiles(in.Command + in.Input)
	}
	var out []string
	for _, p := range paths {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(pl.Cwd, p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out
}

// patchFiles are the files an apply_patch patch adds, updates, deletes or
// moves to.
func patchFiles(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, head := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if f, ok := strings.CutPrefix(line, head); ok {
				out = append(out, f)
			}
		}
		if len(out) >= maxPatchFiles {
			break
		}
	}
	return out
}

// maxPatchFiles bounds the files of one patch the hook checks.
const maxPatchFiles = 200

// claimOn finds the claim that holds target: target's repository (the
// party a session there would be) must be the claim's owner, and its path
// there must match. rel is target within that repository.
func claimOn(claims []store.Claim, target string, gitRoot, team bool) (c store.Claim, rel string, ok bool) {
	real := realPath(target)
	owner, err := config.Identify(filepath.Dir(real), gitRoot)
	if err != nil {
		return c, "", false
	}
	rel, err = filepath.Rel(owner.Root, real)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return c, "", false
	}
	rel = filepath.ToSlash(rel)
	for _, c := range claims {
		same := c.OwnerRoot == owner.Root
		if c.OwnerRoot == "" || team {
			same = c.Owner == owner.Name
		}
		if same && c.Holds(rel) {
			return c, rel, true
		}
	}
	return c, "", false
}

// realPath is path with the symbolic links of its nearest existing folder
// resolved, as a party's root is: a file not written yet has no links of
// its own.
func realPath(path string) string {
	dir, rest := path, ""
	for {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if _, err := os.Lstat(dir); err == nil || filepath.Dir(dir) == dir {
			return path
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = filepath.Dir(dir)
	}
}

// preToolOutput is the PreToolUse output shape.
type preToolOutput struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
		AdditionalContext        string `json:"additionalContext,omitempty"`
	} `json:"hookSpecificOutput"`
}

// editStopped is the answer to an edit of rel (in c's owner's repository)
// that c holds: a deny whose reason the model reads (Claude Code and
// Codex show it), or with claims.enforce ask a question for the person,
// whose reason only the person sees — the model is told the same through
// additionalContext. Codex (0.171) cannot ask: it lets an "ask" through,
// so there the edit is stopped instead, and the reason says why.
func editStopped(c store.Claim, rel, enforce string, codex bool) string {
	what := fmt.Sprintf("%s/%s is claimed by %s until %s (claim %s", clean(c.Owner, 80), clean(rel, 300), clean(c.Holder, 80), utcMinute(c.Until), clean(c.Resource, 300))
	if c.Reason != "" {
		what += ": " + quote(c.Reason, 300)
	}
	what += ")."
	var out preToolOutput
	out.HookSpecificOutput.HookEventName = PreToolUse
	out.HookSpecificOutput.PermissionDecision = "deny"
	ask := fmt.Sprintf("Ask %s with chat_ask or chat_say before changing it, or chat_claim the path to be told when the claim ends.", clean(c.Holder, 80))
	switch {
	case enforce == config.EnforceAsk && !codex:
		out.HookSpecificOutput.PermissionDecision = "ask"
		out.HookSpecificOutput.PermissionDecisionReason = "mcpp-chat: " + what + " Let this edit go ahead anyway?"
		out.HookSpecificOutput.AdditionalContext = "mcpp-chat: " + what + " The person was asked whether this edit may go ahead. " + ask
	case enforce == config.EnforceAsk:
		out.HookSpecificOutput.PermissionDecisionReason = "mcpp-chat: " + what + " (claims.enforce is ask, but Codex's hooks cannot ask the person, so the edit is stopped.) " + ask
	default:
		out.HookSpecificOutput.PermissionDecisionReason = "mcpp-chat: " + what + " " + ask
	}
	if codex {
		// Codex puts its own ". Command: …" after the reason.
		out.HookSpecificOutput.PermissionDecisionReason = strings.TrimSuffix(out.HookSpecificOutput.PermissionDecisionReason, ".")
	}
	return encode(out)
}

// claimsShown is how many ended claims a summary lists; chat_claims
// lists them all.
const claimsShown = 10

// claimNews are the summary's lines for the claims that ended and concern
// the party: its own that it did not end itself, and those it was refused
// while they stood. A line is told once (its key is the claim and how it
// ended).
func claimNews(news []store.ClaimEnd) []line {
	var out []line
	for _, n := range news {
		out = append(out, line{key: fmt.Sprintf("c/%d/%s", n.ID, n.How), text: claimNewsLine(n)})
	}
	return out
}

func claimNewsLine(n store.ClaimEnd) string {
	how := n.How
	switch n.How {
	case "freed":
		how = "was freed by the person who runs the chat"
	case "resolved":
		how = "was released when " + clean(n.By, 80) + " resolved the item it served"
	case "released":
		how = "was released by " + clean(n.By, 80)
	}
	at := utcMinute(n.At)
	if n.Yours {
		return fmt.Sprintf("- your claim on %s %s at %s — it is no longer yours; chat_claim it again before changing it", clean(n.Resource, 300), how, at)
	}
	return fmt.Sprintf("- %s's claim on %s, which you were refused, %s at %s — chat_claim it if you still need it", clean(n.Holder, 80), clean(n.Resource, 300), how, at)
}

// claimWakeFor is how long the end of a claim the party was refused
// wakes it, and keeps its Stop from ending the turn: the moment it may
// take the thing at last. A session whose Stop comes later reads the end
// in its summary and is not stopped for it.
const claimWakeFor = 10 * time.Minute

// freedKeys name the claims the party was refused that ended within
// claimWakeFor: each a reason to wake it once (blockingKeys).
func freedKeys(p store.Pending) []string {
	var out []string
	for _, n := range p.ClaimNews {
		at, err := time.Parse(time.RFC3339Nano, n.At)
		if n.Yours || err != nil || now().Sub(at) > claimWakeFor {
			continue
		}
		out = append(out, freedKey(n))
	}
	return out
}

func freedKey(n store.ClaimEnd) string { return fmt.Sprintf("freed/%d", n.ID) }

// nextClaimEnd is the first time a claim the party sees runs out: until
// then, an unchanged store has no news of claims; after, one may have
// expired without anyone writing.
func nextClaimEnd(p store.Pending) string {
	next := ""
	for _, c := range p.Claims {
		if next == "" || c.Until < next {
			next = c.Until
		}
	}
	return next
}

// claimsDue reports whether a claim the session's record knew of has run
// out since: news no write announced.
func claimsDue(st State) bool { return st.ClaimsUntil != "" && st.ClaimsUntil <= store.Now() }
