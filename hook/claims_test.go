package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// claim has mesh-gw claim resource in the fixture's database.
func (f *fixture) claim(t *testing.T, who store.Identity, resource, reason string) store.ClaimResult {
	t.Helper()
	res, err := f.db.Claim(context.Background(), who, store.ClaimArgs{Resource: resource, Reason: reason, TTL: time.Hour, Exclusive: true, MaxLifetime: 8 * time.Hour})
	if err != nil || !res.Granted {
		t.Fatalf("claim %s: %+v, %v", resource, res, err)
	}
	return res
}

// edit runs the PreToolUse hook of node-dash's session for a call of tool
// with input, and reports whether it read the claims.
func (f *fixture) edit(t *testing.T, tool string, input any, extra map[string]any) (out string, read bool) {
	t.Helper()
	payload := map[string]any{"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": f.dashRoot, "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1"}
	for k, v := range extra {
		payload[k] = v
	}
	data, _ := json.Marshal(payload)
	var b bytes.Buffer
	Run(context.Background(), Options{Env: f.env, Stdin: bytes.NewReader(data), Stdout: &b, Stderr: io.Discard, readClaims: func() { read = true }})
	return b.String(), read
}

type preTool struct {
	HookSpecificOutput struct {
		HookEventName, PermissionDecision, PermissionDecisionReason, AdditionalContext string
	}
}

func decode(t *testing.T, out string) preTool {
	t.Helper()
	var p preTool
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.HookSpecificOutput.HookEventName != "PreToolUse" {
		t.Fatalf("not a PreToolUse answer: %q (%v)", out, err)
	}
	return p
}

// An edit of a file another party's path claim holds is denied, with a
// reason that names the holder, its reason and until when; an edit
// elsewhere, and every other tool, passes silently.
func TestEditOfAClaimedPathIsDenied(t *testing.T) {
	f := newFixture(t)
	got := f.claim(t, f.gw, "path:node-dash/proto/**", "regenerating the frame enum")
	target := filepath.Join(f.dashRoot, "proto", "frame.proto")
	for _, c := range []struct {
		tool  string
		input any
		extra map[string]any
	}{
		{"Edit", map[string]any{"file_path": target, "old_string": "a", "new_string": "b"}, nil},
		{"Write", map[string]any{"file_path": filepath.Join(f.dashRoot, "proto", "new", "x.proto"), "content": "x"}, nil},
		{"MultiEdit", map[string]any{"file_path": target, "edits": []any{}}, nil},
		{"NotebookEdit", map[string]any{"notebook_path": filepath.Join(f.dashRoot, "proto", "n.ipynb")}, nil},
		{"apply_patch", map[string]any{"command": "*** Begin Patch\n*** Update File: README.md\n*** Update File: proto/frame.proto\n@@\n-a\n+b\n*** End Patch\n"},
			map[string]any{"turn_id": "t1"}},
	} {
		out, _ := f.edit(t, c.tool, c.input, c.extra)
		p := decode(t, out)
		reason := p.HookSpecificOutput.PermissionDecisionReason
		if p.HookSpecificOutput.PermissionDecision != "deny" {
			t.Errorf("%s: decision %q", c.tool, p.HookSpecificOutput.PermissionDecision)
		}
		for _, want := range []string{"is claimed by mesh-gw", `"regenerating the frame enum"`, utcMinute(got.Until), "path:node-dash/proto/**", "chat_ask"} {
			if !strings.Contains(reason, want) {
				t.Errorf("%s: the reason %q does not say %q", c.tool, reason, want)
			}
		}
	}
	for _, c := range []struct {
		tool  string
		input any
	}{
		{"Edit", map[string]any{"file_path": filepath.Join(f.dashRoot, "src", "main.go")}},
		{"Edit", map[string]any{"file_path": filepath.Join(f.dashRoot, "protos.txt")}},
		{"Read", map[string]any{"file_path": target}},
		{"Bash", map[string]any{"command": "rm -rf proto"}},
		{"Edit", "not an object"},
	} {
		if out, _ := f.edit(t, c.tool, c.input, nil); out != "" {
			t.Errorf("%s %v: %q, want nothing", c.tool, c.input, out)
		}
	}
}

// A holder's own claim never stops it, and a party in no channel with the
// holder is not stopped either.
func TestOwnClaimsAndUnseenClaimsLetEditsPass(t *testing.T) {
	f := newFixture(t)
	f.claim(t, f.dash, "path:proto/**", "mine")
	if out, read := f.edit(t, "Edit", map[string]any{"file_path": filepath.Join(f.dashRoot, "proto", "a.proto")}, nil); out != "" || !read {
		t.Errorf("node-dash's own claim: %q (read %v)", out, read)
	}
	fw := store.Identity{Name: "fw-core", Workspace: filepath.Join(filepath.Dir(f.dashRoot), "fw-core")}
	os.MkdirAll(filepath.Join(fw.Workspace, ".git"), 0o755)
	f.claim(t, fw, "path:node-dash/src/**", "fw-core sits in no channel with node-dash")
	if out, _ := f.edit(t, "Edit", map[string]any{"file_path": filepath.Join(f.dashRoot, "src", "a.go")}, nil); out != "" {
		t.Errorf("a claim node-dash cannot see stopped it: %q", out)
	}
}

// With claims.enforce: ask, Claude Code asks the person, and the model is
// told through additionalContext; Codex, which cannot ask, is denied.
func TestEnforceAskAsksThePerson(t *testing.T) {
	f := newFixture(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("claims:\n  enforce: ask\n"), 0o600)
	f.withEnv(map[string]string{"MCPP_CHAT_CONFIG": cfg})
	f.claim(t, f.gw, "path:node-dash/gen", "regenerating")
	file := map[string]any{"file_path": filepath.Join(f.dashRoot, "gen", "a.go")}
	p := decode(t, first(f.edit(t, "Edit", file, nil)))
	if h := p.HookSpecificOutput; h.PermissionDecision != "ask" || !strings.Contains(h.PermissionDecisionReason, "mesh-gw") ||
		!strings.Contains(h.AdditionalContext, "is claimed by mesh-gw") || !strings.Contains(h.AdditionalContext, "The person was asked") {
		t.Errorf("Claude Code is answered %+v", h)
	}
	p = decode(t, first(f.edit(t, "apply_patch", map[string]any{"command": "*** Begin Patch\n*** Add File: gen/b.go\n+x\n*** End Patch"}, map[string]any{"turn_id": "t1"})))
	if h := p.HookSpecificOutput; h.PermissionDecision != "deny" || !strings.Contains(h.PermissionDecisionReason, "cannot ask") {
		t.Errorf("Codex is answered %+v", h)
	}
	os.WriteFile(cfg, []byte("claims:\n  enforce: off\n"), 0o600)
	if out, read := f.edit(t, "Edit", file, nil); out != "" || read {
		t.Errorf("with enforce off: %q (read %v)", out, read)
	}
}

func first(s string, _ bool) string { return s }

// Nothing claimed: the hook decides from the mark beside the database,
// without reading the claims; an expired or released path claim leaves it
// so again.
func TestQuietEditReadsNoClaims(t *testing.T) {
	f := newFixture(t)
	file := map[string]any{"file_path": filepath.Join(f.dashRoot, "proto", "a.proto")}
	if out, read := f.edit(t, "Edit", file, nil); out != "" || read {
		t.Fatalf("nothing ever claimed: %q (read %v)", out, read)
	}
	f.claim(t, f.gw, "env:staging", "not a path")
	if out, read := f.edit(t, "Edit", file, nil); out != "" || read {
		t.Fatalf("no path claimed: %q (read %v)", out, read)
	}
	f.claim(t, f.gw, "path:node-dash/docs", "a path")
	if out, read := f.edit(t, "Edit", file, nil); out != "" || !read {
		t.Fatalf("a path claimed elsewhere: %q (read %v), want nothing after a read", out, read)
	}
	if _, err := f.db.Release(context.Background(), f.gw, "path:node-dash/docs"); err != nil {
		t.Fatal(err)
	}
	if out, read := f.edit(t, "Edit", file, nil); out != "" || read {
		t.Fatalf("after the release: %q (read %v)", out, read)
	}
}

// A claim that runs out is told to its holder once, by the next prompt,
// though nothing was written since the session was last told everything.
func TestExpiredClaimIsToldOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// node-dash's session claims for 10 seconds (the shortest), made
	// to have been a few seconds ago: it runs out shortly.
	past := store.Timestamp(time.Now().Add(-8 * time.Second))
	old, err := store.OpenWith(ctx, f.db.Path(), store.Options{Clock: func() time.Time { t, _ := time.Parse(time.RFC3339Nano, past); return t }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := old.Claim(ctx, f.dash, store.ClaimArgs{Resource: "env:staging", Reason: "deploying", TTL: 10 * time.Second, Exclusive: true, MaxLifetime: time.Hour})
	old.Close()
	if err != nil || !res.Granted {
		t.Fatal(res, err)
	}
	out := f.run(t, UserPromptSubmit, "s1")
	if strings.Contains(out, "env:staging") {
		t.Fatalf("told before it ran out:\n%s", out)
	}
	f.letFilesAge(t)
	if out := f.run(t, UserPromptSubmit, "s1"); out != "" {
		t.Fatalf("a prompt with nothing new: %q", out)
	}
	for deadline := time.Now().Add(time.Minute); store.Now() <= res.Until; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the claim never ran out")
		}
	}
	// A Stop in between reads (it may) but tells no claims: the prompt
	// still has the news.
	f.run(t, Stop, "s1")
	out = f.run(t, UserPromptSubmit, "s1")
	mustContain(t, out, "your claim on env:staging expired at")
	mustContain(t, out, "it is no longer yours")
	if out := f.run(t, UserPromptSubmit, "s1"); out != "" {
		t.Errorf("told again: %q", out)
	}
}

// On a member machine the edit hook decides from the cache a running
// serve keeps of the hub's summary: a peer's live claim there stops an
// edit, a claim past its time does not, and with no fresh cache and no
// hub to ask it stays silent.
func TestMemberEditHookDecidesFromTheCache(t *testing.T) {
	home := t.TempDir()
	repo := filepath.Join(home, "node-dash")
	os.MkdirAll(filepath.Join(repo, ".git"), 0o700)
	env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": filepath.Join(home, "module"),
		"MCPP_CHAT_STORE": "http://127.0.0.1:1", "MCPP_CHAT_TOKEN": "mcc_x_y", "XDG_STATE_HOME": filepath.Join(home, "state")}
	paths, _, err := config.Resolve(func(k string) string { return env[k] }, "")
	if err != nil {
		t.Fatal(err)
	}
	claim := store.Claim{Resource: "path:node-dash/proto/**", Holder: "mesh-gw", Reason: "regenerating", Until: store.Timestamp(time.Now().Add(time.Hour)),
		Exclusive: true, Kind: "path", Pattern: "proto/**", Owner: "node-dash"}
	write := func(c store.Claim) {
		pending := store.Pending{Party: "node-dash", Claims: []store.Claim{c}}
		if err := WriteHubCache(HubCachePath(paths, "node-dash"), HubCache{Party: "node-dash", ETag: `"e1"`, Pending: pending, CheckedAt: time.Now(), ServePID: os.Getpid()}); err != nil {
			t.Fatal(err)
		}
	}
	edit := func() string {
		var out bytes.Buffer
		payload, _ := json.Marshal(map[string]any{"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": repo, "tool_name": "Write",
			"tool_input": map[string]any{"file_path": filepath.Join(repo, "proto", "a.proto"), "content": "x"}})
		Command(context.Background(), []string{"--event", "PreToolUse"}, "test", Options{
			Env: func(k string) string { return env[k] }, Exe: filepath.Join(home, "bin", "mcpp-chat-hook"),
			Stdin: bytes.NewReader(payload), Stdout: &out, Stderr: &out})
		return out.String()
	}
	write(claim)
	if p := decode(t, edit()); p.HookSpecificOutput.PermissionDecision != "deny" || !strings.Contains(p.HookSpecificOutput.PermissionDecisionReason, "is claimed by mesh-gw") {
		t.Errorf("from the cache: %+v", p)
	}
	claim.Until = store.Timestamp(time.Now().Add(-time.Second))
	write(claim)
	if got := edit(); got != "" {
		t.Errorf("a claim past its time stopped the edit: %q", got)
	}
	os.RemoveAll(filepath.Dir(HubCachePath(paths, "node-dash")))
	if got := edit(); got != "" {
		t.Errorf("no cache, no hub: %q", got)
	}
}

// The end of a claim the party was refused stops its Stop once, with the
// news and a headline that says it may claim the thing now — while the
// end is recent (claimWakeFor). The end of its own claim, or one long
// past, stops nothing: both are only told.
func TestAClaimWaitedForEndingStopsTheStopOnce(t *testing.T) {
	ended := func(ago time.Duration, yours bool) store.Pending {
		return store.Pending{Party: "node-dash", Workspace: "/srv/node-dash",
			ClaimNews: []store.ClaimEnd{{ID: 7, Resource: "env:staging", Holder: "mesh-gw", How: "released", By: "mesh-gw",
				At: store.Timestamp(time.Now().Add(-ago)), Yours: yours}}}
	}
	var s session
	out := s.respond(Stop, ended(time.Minute, false))
	b := decodeBlock(t, out)
	mustContain(t, b.Reason, "mesh-gw's claim on env:staging, which you were refused, was released by mesh-gw", "chat_claim it if you still need it")
	if want := "mcpp-chat: mesh-gw's claim on env:staging, which node-dash was refused, has ended — node-dash may claim it now"; !strings.Contains(out, want) {
		t.Errorf("the headline is not %q:\n%s", want, out)
	}
	if out := s.respond(Stop, ended(time.Minute, false)); out != "" {
		t.Errorf("stopped twice for one end: %s", out)
	}
	for name, p := range map[string]store.Pending{"long past": ended(claimWakeFor+time.Minute, false), "its own": ended(time.Minute, true)} {
		var fresh session
		if out := fresh.respond(Stop, p); out != "" {
			t.Errorf("%s: a Stop was stopped: %s", name, out)
		}
	}
}

// The Codex doorbell plans a ring for the same end, as for any wake.
func TestAClaimWaitedForEndingRingsTheDoorbell(t *testing.T) {
	p := store.Pending{Party: "node-dash", Workspace: "/srv/node-dash",
		ClaimNews: []store.ClaimEnd{{ID: 7, Resource: "env:staging", Holder: "mesh-gw", How: "released", By: "mesh-gw", At: store.Timestamp(time.Now())}}}
	r := PlanRing(t.TempDir(), "/srv/node-dash", p, 6, time.Now())
	if !slices.Contains(r.Keys, "freed/7") || !isRingPrompt(r.Line) {
		t.Errorf("keys %v, line %q", r.Keys, r.Line)
	}
}
