package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/tools"
)

func demo(ctx context.Context, args []string, _ func(string) string, stdout, stderr io.Writer) int {
	fs := flags("demo", "demo [--keep]\n\nRuns the worked example end to end in a temporary folder with its own database:\ntwo repositories, mesh-gw and node-dash, ask → reply → resolve → prune-ok → archived,\nplus what Claude Code's hook shows each time. Your own chat database is never touched.", stderr)
	keep := fs.Bool("keep", false, "keep the temporary folder (database and repositories) and print where it is")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	dir, err := os.MkdirTemp("", "mcpp-chat-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat demo: cannot make a temporary folder: %v — set TMPDIR to a writable folder\n", err)
		return exitError
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	d, err := newDemoRun(dir, stdout, newLog(stderr))
	if err == nil {
		err = d.run(ctx)
		d.close() // writes each session's last tick: the tick file is only now final
	}
	if err == nil {
		d.lastTick()
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat demo: %v\n", err)
		return exitError
	}
	if *keep {
		fmt.Fprintf(stdout, "\nKept %s — try: MCPP_CHAT_DB=%s mcpp-chat call --workspace %s chat_read '{\"archived\": true}'\n",
			dir, d.env["MCPP_CHAT_DB"], filepath.Join(dir, "repos", "node-dash"))
	}
	return exitOK
}

// demoRun is one isolated universe: its own database, home and repos, and
// one tool service per party, as two sessions would have.
type demoRun struct {
	out  io.Writer
	log  *slog.Logger
	dir  string
	env  map[string]string
	hook string
	// hookMissing: the hook binary was not found (said once).
	hookMissing bool
	parties     []*demoParty
	step        int
}

type demoParty struct {
	name string
	repo string
	svc  *tools.Service
}

func newDemoRun(dir string, out io.Writer, log *slog.Logger) (*demoRun, error) {
	home := filepath.Join(dir, "home")
	d := &demoRun{out: out, log: log, dir: dir, env: map[string]string{
		"MCPP_CHAT_DB":    filepath.Join(dir, "data", "chat.db"),
		"MCPP_CHAT_HOME":  filepath.Join(dir, "module"), // no config.yaml there: the defaults
		"HOME":            home,
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
	}}
	if exe, err := executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		d.hook = filepath.Join(filepath.Dir(exe), "mcpp-chat-hook")
	}
	return d, os.MkdirAll(home, 0o700)
}

// party makes a repository (a .git folder is what identity looks for) and
// a session started in sub, a folder inside it.
func (d *demoRun) party(ctx context.Context, name, sub string) (*demoParty, error) {
	repo := filepath.Join(d.dir, "repos", name)
	start := filepath.Join(repo, sub)
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(start, 0o755); err != nil {
		return nil, err
	}
	in, err := locate(func(k string) string { return d.env[k] }, start)
	if err != nil {
		return nil, err
	}
	svc, err := in.service(ctx, d.log)
	if err != nil {
		return nil, err
	}
	p := &demoParty{name: in.party.Name, repo: in.party.Root, svc: svc}
	d.parties = append(d.parties, p)
	return p, nil
}

func (d *demoRun) close() {
	for _, p := range d.parties {
		p.svc.DB.Close()
	}
}

func (d *demoRun) run(ctx context.Context) error {
	d.printf("mcpp-chat demo: two coding sessions in two repositories share one chat.\n")
	d.printf("Everything lives in %s (its own database; yours is not touched).\n", d.dir)
	gw, err := d.party(ctx, "mesh-gw", filepath.Join("src", "radio"))
	if err != nil {
		return err
	}
	dash, err := d.party(ctx, "node-dash", "")
	if err != nil {
		return err
	}
	d.printf("One session runs in %s (a subfolder), the other in %s.\n", filepath.Join(gw.repo, "src", "radio"), dash.repo)

	d.section("Each session says what its repository is")
	if _, err := d.call(ctx, dash, "chat_whoami", map[string]any{"about": "web dashboard for the mesh nodes"}); err != nil {
		return err
	}
	if _, err := d.call(ctx, gw, "chat_whoami", map[string]any{"about": "gateway firmware: radio framing and the chunk protocol"}); err != nil {
		return err
	}

	d.section("mesh-gw asks node-dash a question it must not guess about")
	if _, err := d.call(ctx, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "about": "gateway and dashboard contracts", "parties": []string{dash.name}}); err != nil {
		return err
	}
	if _, err := d.call(ctx, gw, "chat_ask", map[string]any{
		"slug":  "chunk-api",
		"title": "Is the chunk header enum closed?",
		"body":  "The gateway needs a FRAME_AUX chunk kind. Does the dashboard's decoder accept unknown kinds, or must its enum grow?",
	}); err != nil {
		return err
	}

	d.section("node-dash's Claude Code notices without anyone relaying (the hook)")
	d.runHook(ctx, dash, "SessionStart")
	d.runHook(ctx, dash, "Stop")

	d.section("node-dash answers from its own repository")
	if _, err := d.call(ctx, dash, "chat_inbox", nil); err != nil {
		return err
	}
	if _, err := d.call(ctx, dash, "chat_read", nil); err != nil {
		return err
	}
	if _, err := d.call(ctx, dash, "chat_reply", map[string]any{"item": "chunk-api", "text": "I own the decoder: the enum was closed. FRAME_AUX is now kind 7, and unknown kinds are skipped with a warning."}); err != nil {
		return err
	}

	d.section("mesh-gw reads the answer; only the raiser says it is satisfied")
	if _, err := d.call(ctx, gw, "chat_read", nil); err != nil {
		return err
	}
	if _, err := d.call(ctx, gw, "chat_resolve", map[string]any{"item": "chunk-api", "note": "Confirmed against the new decoder; no workaround needed."}); err != nil {
		return err
	}
	d.runHook(ctx, dash, "SessionStart")

	d.section("Both consumers say prune-ok: the item leaves the live channel")
	if _, err := d.call(ctx, gw, "chat_prune_ok", map[string]any{"item": "chunk-api"}); err != nil {
		return err
	}
	var pruned struct {
		ArchivedNow bool `json:"archived_now"`
	}
	if err := d.callInto(ctx, dash, "chat_prune_ok", map[string]any{"item": "gw--dash:chunk-api"}, &pruned); err != nil {
		return err
	}
	if !pruned.ArchivedNow {
		return errors.New("the item was not archived after both prune-oks — this is a bug; please report it")
	}
	if _, err := d.call(ctx, dash, "chat_read", nil); err != nil {
		return err
	}
	var archived struct {
		Messages []struct {
			Slug     string `json:"slug"`
			Archived bool   `json:"archived"`
		} `json:"messages"`
	}
	if err := d.callInto(ctx, gw, "chat_read", map[string]any{"archived": true}, &archived); err != nil {
		return err
	}
	if len(archived.Messages) == 0 || archived.Messages[0].Slug != "chunk-api" || !archived.Messages[0].Archived {
		return errors.New("chunk-api is missing from the archive — this is a bug; please report it")
	}
	d.runHook(ctx, dash, "SessionStart")

	d.section("Done")
	d.printf("[chunk-api] is archived: DONE and every consumer gave prune-ok. Nothing was deleted;\n")
	d.printf("chat_read archived=true still shows it. Each party only ever wrote about its own repository.\n")
	return nil
}

// lastTick shows the tick file's line once the sessions are closed. A
// session writes its tick a moment after each commit, in the background,
// so read any earlier the file could still name an earlier write.
func (d *demoRun) lastTick() {
	if tick, err := os.ReadFile(filepath.Join(filepath.Dir(d.env["MCPP_CHAT_DB"]), ".tick")); err == nil {
		d.printf("A shell watcher (tail -F .tick) saw one line per write; the last: %s\n", strings.TrimSpace(string(tick)))
	}
}

func (d *demoRun) printf(format string, args ...any) {
	fmt.Fprintf(d.out, format, args...)
}

func (d *demoRun) section(title string) {
	d.step++
	d.printf("\n── %d. %s\n", d.step, title)
}

// call runs one tool as party p and prints what the user would see: the
// call and its display.
func (d *demoRun) call(ctx context.Context, p *demoParty, tool string, args map[string]any) (tools.Result, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return tools.Result{}, err
	}
	if args == nil {
		raw = []byte("{}")
	}
	d.printf("\n%s ▸ %s %s\n", p.name, tool, raw)
	res, err := p.svc.Call(ctx, tool, raw)
	if err != nil {
		return res, fmt.Errorf("%s %s: %w", p.name, tool, err)
	}
	d.quote("  │ ", res.Display)
	return res, nil
}

func (d *demoRun) callInto(ctx context.Context, p *demoParty, tool string, args map[string]any, into any) error {
	res, err := d.call(ctx, p, tool, args)
	if err != nil {
		return err
	}
	return json.Unmarshal(res.JSON, into)
}

func (d *demoRun) quote(prefix, text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		d.printf("%s%s\n", prefix, line)
	}
}

// runHook runs the built hook binary as Claude Code would for p's session
// and prints what it would hand the model.
func (d *demoRun) runHook(ctx context.Context, p *demoParty, event string) {
	d.printf("\nClaude Code in %s runs the hook at %s:\n", p.name, event)
	if d.hook == "" || !fileExists(d.hook) {
		if !d.hookMissing {
			d.printf("  (skipped: the hook binary %s is not built — run `make build` to see this part)\n", d.hook)
		} else {
			d.printf("  (skipped: no hook binary)\n")
		}
		d.hookMissing = true
		return
	}
	payload, _ := json.Marshal(map[string]any{
		"session_id": "demo-" + p.name, "hook_event_name": event, "cwd": p.repo,
		"source": "startup", "stop_hook_active": false,
	})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.hook, "--event", event)
	cmd.Dir = p.repo
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "CLAUDE_PROJECT_DIR=" + p.repo}, envList(d.env)...)
	cmd.Stdin = bytes.NewReader(payload)
	out, err := cmd.Output()
	if err != nil {
		d.printf("  (the hook failed: %v — Claude Code would show nothing)\n", err)
		return
	}
	d.describeHook(p, out)
}

func (d *demoRun) describeHook(p *demoParty, out []byte) {
	text := strings.TrimSpace(string(out))
	var answer struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
		Specific struct {
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	switch {
	case text == "":
		d.printf("  (silent: nothing waits on %s)\n", p.name)
	case json.Unmarshal([]byte(text), &answer) != nil:
		d.quote("  ┊ ", text)
	case answer.Decision == "block":
		d.printf("  the turn does not end (decision: block); the model reads:\n")
		d.quote("  ┊ ", answer.Reason)
	case answer.Specific.Context != "":
		d.printf("  added to the model's context:\n")
		d.quote("  ┊ ", answer.Specific.Context)
	default:
		d.quote("  ┊ ", text)
	}
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}
