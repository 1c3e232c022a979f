package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// The Claude Code CLI (2.1.332) against a scripted model, with our server
// registered by the `claude mcp add` line `mcpp-chat setup claude` prints
// and our hooks written by `mcpp-chat setup hooks --write --settings`.

// claudeCode is one user's Claude Code install in a world: its HOME with
// the chat server registered and a settings file with our hooks.
type claudeCode struct {
	w        *world
	bin      string
	settings string
}

// newClaude installs Claude Code for the world as a user would.
func newClaude(t *testing.T, w *world) *claudeCode {
	t.Helper()
	c := &claudeCode{w: w, bin: realClient(t, "claude"), settings: filepath.Join(w.dir, "claude-settings.json")}
	// Claude Code starts background hooks (the wake waiter) in a session
	// of their own, out of reach of its process group: they go last.
	t.Cleanup(func() { killOurs(w) })
	// Skips the first-run screens, which otherwise check the network.
	writeFile(t, filepath.Join(w.home, ".claude.json"), `{"hasCompletedOnboarding": true, "theme": "dark"}`)

	add := setupLine(t, w, "claude", "claude mcp add ")
	ctx, cancel := context.WithTimeout(t.Context(), cliRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", add)
	cmd.Dir, cmd.Env = w.dir, c.env("")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the printed line %q: %v\n%s", add, err, out)
	}
	// With the pinned CLI on PATH, as a user's is: setup checks its version
	// before it writes the idle wake.
	setupHooks := exec.CommandContext(ctx, chatBin, "setup", "hooks", "--write", "--settings", c.settings)
	setupHooks.Dir, setupHooks.Env = w.dir, c.env("")
	if out, err := setupHooks.CombinedOutput(); err != nil {
		t.Fatalf("mcpp-chat setup hooks --write: %v\n%s", err, out)
	}
	return c
}

// setupLine is the line of `mcpp-chat setup TARGET` that starts with
// prefix.
func setupLine(t *testing.T, w *world, target, prefix string) string {
	t.Helper()
	out, errs, code := w.run("setup", target)
	if code != 0 {
		t.Fatalf("mcpp-chat setup %s: exit %d\n%s%s", target, code, out, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	t.Fatalf("mcpp-chat setup %s printed no line starting %q:\n%s", target, prefix, out)
	return ""
}

// env is Claude Code's environment, talking to the model at url.
func (c *claudeCode) env(url string) []string {
	return cliEnv(c.w,
		"PATH="+filepath.Dir(c.bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1")
}

// args are the flags of a non-interactive run: every event as a JSON
// line, our hooks, the chat tools allowed (as `-p` cannot ask).
func (c *claudeCode) args(extra ...string) []string {
	return append([]string{c.bin, "-p", "--output-format", "stream-json", "--verbose", "--include-hook-events",
		"--settings", c.settings, "--allowedTools", "mcp__chat__*"}, extra...)
}

// claudeRun is a finished `claude -p` run.
type claudeRun struct {
	events []map[string]any
	err    error
}

// run runs `claude -p prompt` in dir against model and waits for it.
func (c *claudeCode) run(t *testing.T, dir string, model *scripted.Server, prompt string) claudeRun {
	t.Helper()
	p := startCLI(t, dir, c.env(model.URL), nil, c.args("--", prompt)...)
	err := p.wait(t)
	all, _, _ := p.stdout.snapshot()
	r := claudeRun{events: jsonLines(all), err: err}
	if err != nil {
		t.Fatalf("claude -p %q in %s: %v", prompt, dir, err)
	}
	if res := r.result(); res == nil || res["is_error"] == true {
		t.Fatalf("claude -p %q: the run did not end in a result: %v", prompt, res)
	}
	return r
}

func (r claudeRun) result() map[string]any {
	for _, e := range r.events {
		if e["type"] == "result" {
			return e
		}
	}
	return nil
}

// claudeSession is a multi-turn `claude -p --input-format stream-json`:
// each prompt is a user message on its standard input.
type claudeSession struct {
	p     *cliProcess
	stdin io.WriteCloser
	turns int // prompts answered
}

// start starts a session in dir against model.
func (c *claudeCode) start(t *testing.T, dir string, model *scripted.Server) *claudeSession {
	t.Helper()
	r, wr := io.Pipe()
	p := startCLI(t, dir, c.env(model.URL), r, c.args("--input-format", "stream-json")...)
	// Before startCLI's cleanup, which waits for the process: the copy of
	// the input to it ends only when the input does (a test that fails
	// mid-session would otherwise hang there).
	t.Cleanup(func() { wr.Close() })
	return &claudeSession{p: p, stdin: wr}
}

// prompt sends text as the user's next message and waits until Claude
// Code reports the turn's result (its Stop hooks have run by then).
func (s *claudeSession) prompt(t *testing.T, text string) {
	t.Helper()
	msg, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
	if _, err := s.stdin.Write(append(msg, '\n')); err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	s.turns++
	want := s.turns
	if !s.p.stdout.await(cliRunTimeout, func(all []string) bool { return countType(jsonLines(all), "result") >= want }) {
		t.Fatalf("prompt %q: no result from Claude Code (exit: %v)", text, s.p.err)
	}
}

// close ends the input and waits for Claude Code to exit.
func (s *claudeSession) close(t *testing.T) {
	t.Helper()
	s.stdin.Close()
	if err := s.p.wait(t); err != nil {
		t.Fatalf("claude session: %v", err)
	}
}

func countType(events []map[string]any, typ string) int {
	n := 0
	for _, e := range events {
		if e["type"] == typ {
			n++
		}
	}
	return n
}

// Hook context as Claude Code hands it to the model: a system message
// with these prefixes (docs/hooks.md).
const (
	sessionStartContext = "SessionStart hook additional context: "
	promptContext       = "UserPromptSubmit hook additional context: "
	stopFeedback        = "Stop hook feedback:"
	stopReason          = "A peer is waiting on this session."
	ourSummary          = "mcpp-chat: you are "
)

// seatPair makes two repositories, mesh-gw and node-dash, seated in the
// channel gw--dash, and returns their paths.
func seatPair(t *testing.T, w *world) (gw, dash string) {
	t.Helper()
	gw, dash = gitRepo(t, w, "mesh-gw"), gitRepo(t, w, "node-dash")
	w.mustCall(dash, "chat_whoami", map[string]any{}, nil)
	w.mustCall(gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)
	return gw, dash
}

// 1. The server starts, the tools are offered, and a call returns both
// text contents — the display, then the result JSON — to the model.
func TestClaudeOffersTheToolsAndReturnsBothContents(t *testing.T) {
	w := newWorld(t)
	c := newClaude(t, w)
	gw := gitRepo(t, w, "mesh-gw")
	model := startModel(t,
		scripted.Do(scripted.MCP("chat", "chat_whoami", map[string]any{"about": "the gateway"})),
		scripted.End("done"))
	c.run(t, gw, model, "who am I on the chat?")

	first := firstTurn(t, model)
	tools, instructions := serverFacts(t, w, gw)
	for _, tool := range tools {
		if !first.Contains(scripted.ClaudeName("chat", tool)) {
			t.Errorf("the model was not offered %s", scripted.ClaudeName("chat", tool))
		}
	}
	// Claude Code cuts instructions at 2 KB: their opening must arrive.
	if opening, _, _ := strings.Cut(instructions, "\n"); !first.Contains(opening) {
		t.Errorf("the server's instructions did not reach the model: %q", opening)
	}
	got := results(model, "chat_whoami")
	if len(got) != 1 {
		t.Fatalf("the model got %d chat_whoami results, want 1", len(got))
	}
	r := got[0]
	if r.IsError || len(r.Contents) != 2 {
		t.Fatalf("chat_whoami reached the model as %d contents (error %v), want 2: %q", len(r.Contents), r.IsError, r.Contents)
	}
	if !strings.HasPrefix(r.Contents[0], "**You are mesh-gw**") {
		t.Errorf("the first content is not the display: %q", r.Contents[0])
	}
	var who struct {
		Me    string  `json:"me"`
		About *string `json:"about"`
	}
	if err := json.Unmarshal([]byte(r.Contents[1]), &who); err != nil || who.Me != "mesh-gw" || who.About == nil || *who.About != "the gateway" {
		t.Errorf("the second content is not the result JSON of mesh-gw (%v): %q", err, r.Contents[1])
	}
}

// serverFacts are the tools our server lists in dir and its
// instructions, asked over MCP.
func serverFacts(t *testing.T, w *world, dir string) (tools []string, instructions string) {
	t.Helper()
	s := w.serve(dir)
	res, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		tools = append(tools, tool.Name)
	}
	if len(tools) == 0 {
		t.Fatal("the server lists no tools")
	}
	return tools, s.InitializeResult().Instructions
}

// 2. SessionStart and UserPromptSubmit context reaches the model as the
// system messages Claude Code makes of it, once; nothing is injected
// while nothing waits.
func TestClaudeHookContextReachesTheModel(t *testing.T) {
	w := newWorld(t)
	c := newClaude(t, w)
	gw, dash := seatPair(t, w)

	model := startModel(t, scripted.End("one"), scripted.End("two"), scripted.End("two, after the stop"), scripted.End("three"),
		scripted.Do(scripted.MCP("chat", "chat_say", map[string]any{"channel": "gw--dash", "text": "looking into it"})), scripted.End("four"),
		scripted.End("five"), scripted.End("six"), scripted.End("seven"))
	s := c.start(t, gw, model)
	s.prompt(t, "prompt-1: nothing waits yet")
	if first := firstTurn(t, model); first.Contains(ourSummary) {
		t.Errorf("with nothing waiting, the model was told:\n%s", describe(first.Parts))
	}

	w.mustCall(dash, "chat_ask", map[string]any{"title": "Is the enum closed?", "body": "I need FRAME_AUX.", "slug": "enum"}, nil)
	s.prompt(t, "prompt-2: after the ask")
	turn := promptTurn(t, model, "prompt-2")
	if p := partWith(turn.New, "system", promptContext); p == nil || !strings.Contains(p.Text, `[enum] "Is the enum closed?"`) {
		t.Errorf("the prompt after the ask carries no UserPromptSubmit context naming it:\n%s", describe(turn.New))
	}
	s.prompt(t, "prompt-3: nothing new")
	if turn := promptTurn(t, model, "prompt-3"); turn.NewContains(ourSummary) {
		t.Errorf("with nothing new, the prompt was told again:\n%s", describe(turn.New))
	}
	// The session's own say, which node-dash has not read yet: no news.
	s.prompt(t, "prompt-4: say something")
	var said struct{ Seq int64 }
	mustResult(t, model, "chat_say", &said)
	s.prompt(t, "prompt-5: nothing new after the session's own say")
	if turn := promptTurn(t, model, "prompt-5"); turn.NewContains(ourSummary) {
		t.Errorf("after the session's own say, a prompt with nothing new was told:\n%s", describe(turn.New))
	}
	// node-dash reads it: news once.
	w.mustCall(dash, "chat_read", map[string]any{"channel": "gw--dash"}, nil)
	s.prompt(t, "prompt-6: after node-dash read it")
	if p := partWith(promptTurn(t, model, "prompt-6").New, "system", promptContext); p == nil || !strings.Contains(p.Text, fmt.Sprintf("#gw--dash #%d — seen by node-dash", said.Seq)) {
		t.Errorf("the prompt after node-dash read the say does not say so:\n%s", describe(promptTurn(t, model, "prompt-6").New))
	}
	s.prompt(t, "prompt-7: nothing new")
	if turn := promptTurn(t, model, "prompt-7"); turn.NewContains(ourSummary) {
		t.Errorf("the receipt was told again:\n%s", describe(turn.New))
	}
	s.close(t)

	// A new session is told everything at its start, and its first
	// prompt is not told it again.
	model = startModel(t, scripted.End("new session"))
	c.run(t, gw, model, "prompt-4: a new session")
	first := firstTurn(t, model)
	if p := partWith(first.Parts, "system", sessionStartContext+ourSummary+"mesh-gw"); p == nil || !strings.Contains(p.Text, `[enum] "Is the enum closed?" from node-dash — needs your ack`) {
		t.Errorf("a new session's first turn has no SessionStart context with the item:\n%s", describe(first.Parts))
	}
	if partWith(first.New, "system", promptContext) != nil {
		t.Errorf("the first prompt repeats what SessionStart told:\n%s", describe(first.New))
	}
}

// promptTurn is the turn that carries the user's prompt starting with
// label.
func promptTurn(t *testing.T, m *scripted.Server, label string) *scripted.Turn {
	t.Helper()
	for _, turn := range turns(m) {
		for _, p := range turn.New {
			if p.Role == "user" && strings.HasPrefix(p.Text, label) {
				return turn
			}
		}
	}
	t.Fatalf("no turn carries the prompt %q", label)
	return nil
}

// 3. Stop blocks exactly when a peer waits on this session: not for an
// item that only needs this session's prune-ok, not twice for the same
// state; Claude Code goes on with the reason.
func TestClaudeStopBlocksOnlyWhenAPeerWaits(t *testing.T) {
	w := newWorld(t)
	c := newClaude(t, w)
	gw, dash := seatPair(t, w)
	// mesh-gw's own item, answered and resolved: it waits for prune-oks.
	w.mustCall(gw, "chat_ask", map[string]any{"title": "TLS upgrade", "body": "Please move to TLS 1.3.", "slug": "tls"}, nil)
	w.mustCall(dash, "chat_reply", map[string]any{"item": "tls", "text": "done on our side"}, nil)
	w.mustCall(gw, "chat_read", map[string]any{}, nil)
	w.mustCall(gw, "chat_resolve", map[string]any{"item": "tls"}, nil)

	var ends []scripted.Step // every turn ends at once; what counts is how many come
	for i := range 6 {
		ends = append(ends, scripted.End(fmt.Sprintf("turn %d", i+1)))
	}
	model := startModel(t, ends...)
	s := c.start(t, gw, model)
	s.prompt(t, "prompt-1: only a prune-ok waits")
	w.mustCall(dash, "chat_say", map[string]any{"text": "the radio build is green"}, nil)
	s.prompt(t, "prompt-2: a peer said something")
	s.prompt(t, "prompt-3: the same state")
	w.mustCall(dash, "chat_say", map[string]any{"text": "and the dashboard is deployed"}, nil)
	s.prompt(t, "prompt-4: something new")
	s.close(t)

	var got []string
	for _, turn := range turns(model) {
		switch {
		case turn.NewContains(stopFeedback):
			got = append(got, "stop")
			if !turn.NewContains(stopReason) {
				t.Errorf("the turn after a Stop block lacks the reason:\n%s", describe(turn.New))
			}
		default:
			for _, p := range turn.New {
				if label, _, ok := strings.Cut(p.Text, ":"); ok && p.Role == "user" && strings.HasPrefix(label, "prompt-") {
					got = append(got, label)
				}
			}
		}
	}
	want := []string{"prompt-1", "prompt-2", "stop", "prompt-3", "prompt-4", "stop"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("turns the model received: %v, want %v (a stop is Claude Code going on after a Stop block)", got, want)
	}
	if stop := findTurn(model.Exchanges(), func(turn *scripted.Turn) bool { return turn.NewContains(stopFeedback) }); !stop.NewContains("the radio build is green") {
		t.Errorf("the first block does not quote the peer's message:\n%s", describe(stop.New))
	}
}

// agent is a CLI the scenarios shared by Claude Code and Codex drive.
type agent interface {
	// session runs one session in dir to the end: prompt, then steps.
	session(t *testing.T, dir, prompt string, steps ...scripted.Step) *scripted.Server
	// toldAtStart reports whether the first turn of a session carries
	// what waits on it (hooks).
	toldAtStart() bool
}

func (c *claudeCode) session(t *testing.T, dir, prompt string, steps ...scripted.Step) *scripted.Server {
	t.Helper()
	model := startModel(t, steps...)
	c.run(t, dir, model, prompt)
	return model
}

func (c *claudeCode) toldAtStart() bool { return true }

// 4. Two sessions in two git repositories converse.
func TestClaudeTwoReposConverse(t *testing.T) {
	w := newWorld(t)
	converse(t, w, newClaude(t, w))
}

// converse is the worked example between two sessions of a CLI, each a
// process of its own: mesh-gw asks, node-dash is told and answers,
// mesh-gw is told, resolves and prune-oks, node-dash prune-oks, and the
// item is archived. A session learns what waits on it at its start (Claude
// Code's SessionStart hook) or, without hooks (Codex), from chat_inbox.
func converse(t *testing.T, w *world, a agent) {
	gw, dash := gitRepo(t, w, "mesh-gw"), gitRepo(t, w, "node-dash")
	w.mustCall(dash, "chat_whoami", map[string]any{}, nil) // node-dash is known
	const (
		title  = "Is the chunk header enum closed?"
		answer = "I own the generator; FRAME_AUX added."
	)
	item := map[string]any{"item": "chunk-api"}

	// mesh-gw asks.
	m := a.session(t, gw, "ask node-dash about the enum",
		scripted.Do(scripted.MCP("chat", "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}})),
		scripted.Do(scripted.MCP("chat", "chat_ask", map[string]any{"title": title, "body": "I need FRAME_AUX.", "slug": "chunk-api"})),
		scripted.End("asked"))
	var asked struct{ Slug, Status string }
	mustResult(t, m, "chat_ask", &asked)
	if asked.Slug != "chunk-api" || asked.Status != "open" {
		t.Fatalf("the ask reached the model as %+v", asked)
	}
	noStopBlock(t, m, "mesh-gw after asking (only a peer owes an answer)")

	// node-dash learns of it, reads and answers.
	m = a.session(t, dash, "see what the chat holds", lookFirst(a,
		scripted.Do(scripted.MCP("chat", "chat_read", map[string]any{})),
		scripted.Do(scripted.MCP("chat", "chat_reply", map[string]any{"item": "chunk-api", "text": answer})),
		scripted.End("answered"))...)
	told(t, a, m, `[chunk-api] "`+title+`" from mesh-gw — needs your ack`, "ack")
	var replied struct {
		AutoAcked bool `json:"auto_acked"`
	}
	if mustResult(t, m, "chat_reply", &replied); !replied.AutoAcked {
		t.Errorf("node-dash's reply did not ack the item")
	}
	noStopBlock(t, m, "node-dash after answering")

	// mesh-gw learns of the answer, reads it, resolves and prune-oks.
	m = a.session(t, gw, "see what the chat holds", lookFirst(a,
		scripted.Do(scripted.MCP("chat", "chat_read", map[string]any{})),
		scripted.Do(scripted.MCP("chat", "chat_resolve", item)),
		scripted.Do(scripted.MCP("chat", "chat_prune_ok", item)),
		scripted.End("resolved"))...)
	told(t, a, m, "answered; resolve when you are satisfied", "resolve")
	var read struct {
		Messages []struct{ From, Body, Kind string }
	}
	mustResult(t, m, "chat_read", &read)
	if n := len(read.Messages); n == 0 || read.Messages[n-1].From != "node-dash" || read.Messages[n-1].Body != answer {
		t.Errorf("mesh-gw read %+v, want node-dash's answer last", read.Messages)
	}
	noStopBlock(t, m, "mesh-gw after resolving")

	// node-dash learns it is resolved and gives its prune-ok: archived.
	m = a.session(t, dash, "see what the chat holds", lookFirst(a,
		scripted.Do(scripted.MCP("chat", "chat_prune_ok", item)),
		scripted.End("done"))...)
	told(t, a, m, "resolved; needs your prune-ok", "prune")
	var pruned struct {
		ArchivedNow bool `json:"archived_now"`
	}
	if mustResult(t, m, "chat_prune_ok", &pruned); !pruned.ArchivedNow {
		t.Errorf("the second prune-ok did not archive the item")
	}

	var archived struct {
		Messages []struct {
			Slug     string `json:"slug"`
			Status   string `json:"status"`
			Archived bool   `json:"archived"`
		}
	}
	w.mustCall(gw, "chat_read", map[string]any{"archived": true}, &archived)
	if len(archived.Messages) == 0 || archived.Messages[0].Slug != "chunk-api" || archived.Messages[0].Status != "done" || !archived.Messages[0].Archived {
		t.Fatalf("the archive holds %+v, want chunk-api done and archived", archived.Messages)
	}
}

// lookFirst is a session's steps: with hooks the session was told at its
// start and goes straight on; without, it calls chat_inbox first.
func lookFirst(a agent, steps ...scripted.Step) []scripted.Step {
	if a.toldAtStart() {
		return steps
	}
	return append([]scripted.Step{scripted.Do(scripted.MCP("chat", "chat_inbox", map[string]any{}))}, steps...)
}

// told checks that the session learned what waits on it: line in its
// first turn's SessionStart context (hooks), else the chunk-api item
// waiting on it for needs in chat_inbox's result.
func told(t *testing.T, a agent, m *scripted.Server, line, needs string) {
	t.Helper()
	if a.toldAtStart() {
		first := firstTurn(t, m)
		if p := partWith(first.Parts, "system", sessionStartContext); p == nil || !strings.Contains(p.Text, line) {
			t.Errorf("the session was not told at its start %q:\n%s", line, describe(first.Parts))
		}
		return
	}
	var inbox struct {
		WaitingOnMe []struct{ Item, Needs string } `json:"waiting_on_me"`
	}
	mustResult(t, m, "chat_inbox", &inbox)
	for _, wait := range inbox.WaitingOnMe {
		if wait.Item == "chunk-api" && strings.Contains(wait.Needs, needs) {
			return
		}
	}
	t.Errorf("chat_inbox did not tell the session that chunk-api needs its %s: %+v", needs, inbox.WaitingOnMe)
}

// mustResult decodes the JSON of the first result of tool the model got.
func mustResult(t *testing.T, m *scripted.Server, tool string, into any) {
	t.Helper()
	got := results(m, tool)
	if len(got) == 0 {
		t.Fatalf("the model got no %s result", tool)
	}
	if got[0].IsError {
		t.Fatalf("%s failed: %s", tool, got[0].Text)
	}
	if err := got[0].JSON(into); err != nil {
		t.Fatalf("%s result: %v in %q", tool, err, got[0].Text)
	}
}

// noStopBlock checks that no turn of the session came from a Stop block.
func noStopBlock(t *testing.T, m *scripted.Server, what string) {
	t.Helper()
	if turn := findTurn(m.Exchanges(), func(turn *scripted.Turn) bool { return turn.NewContains(stopFeedback) }); turn != nil {
		t.Errorf("%s: Stop blocked:\n%s", what, describe(turn.New))
	}
}

// 5. A backlog of 60 messages of 500 characters: a session that reads
// while the answer says there is more gets every message, whole, in what
// reaches the model.
func TestClaudeReadsALongBacklogWhole(t *testing.T) {
	w := newWorld(t)
	backlogReachesTheModel(t, w, newClaude(t, w))
}

func backlogReachesTheModel(t *testing.T, w *world, a agent) {
	gw, dash := seatPair(t, w)
	bodies := make([]string, 60)
	for i := range bodies {
		bodies[i] = backlogBody(i+1, 500)
		w.mustCall(dash, "chat_say", map[string]any{"text": bodies[i]}, nil)
	}
	m := a.session(t, gw, "read everything on the chat", readWhileMore(12))

	var got []string
	for _, r := range results(m, "chat_read") {
		got = append(got, r.Text)
	}
	all := strings.Join(got, "\n")
	var missing []int
	for i, body := range bodies {
		if !strings.Contains(all, body) {
			missing = append(missing, i+1)
		}
	}
	if len(missing) > 0 {
		for i, r := range got {
			t.Logf("chat_read result %d as the model got it (%d characters): %.300q…", i+1, len(r), r)
		}
		t.Fatalf("%d of the 60 messages never reached the model whole in %d chat_read results (%d characters); missing: %v",
			len(missing), len(got), len(all), missing)
	}
}

// backlogBody is message n of the backlog: size characters, its number
// at both ends, so that a cut shows.
func backlogBody(n, size int) string {
	head, end := fmt.Sprintf("backlog message %02d begins", n), fmt.Sprintf("message %02d ends", n)
	filler := strings.Repeat(fmt.Sprintf(" filler of %02d", n), size/len(" filler of 00")+1)
	return head + filler[:size-len(head)-len(end)-1] + " " + end
}

// readWhileMore calls chat_read while its last answer says there is more
// (or could not be read, as when the client cut it), at most limit times,
// then ends the turn.
func readWhileMore(limit int) scripted.Step {
	reads := 0
	return func(turn *scripted.Turn) scripted.Reply {
		if last := turn.Last(); reads > 0 && last.IsMCP("chat", "chat_read") {
			var r struct {
				More int `json:"more"`
			}
			if last.JSON(&r) == nil && r.More == 0 {
				return scripted.Reply{Text: "read it all"}
			}
		}
		if reads == limit {
			return scripted.Reply{Text: "gave up reading"}
		}
		reads++
		return scripted.Reply{Calls: []scripted.Call{scripted.MCP("chat", "chat_read", map[string]any{})}, Again: true}
	}
}

// The idle wake entry `setup hooks --write` writes must not keep a
// non-interactive run alive: `claude -p` waits for background hooks. The
// bound only tells "ends" from "hangs" (a waiter runs up to an hour).
const printRunEnd = 30 * time.Second

func TestClaudePrintRunEndsWithTheWakeHookInstalled(t *testing.T) {
	w := newWorld(t)
	c := newClaude(t, w)
	requireWakeHook(t, c.settings)
	gw := gitRepo(t, w, "mesh-gw")
	model := startModel(t, scripted.End("done"))

	p := startCLI(t, gw, c.env(model.URL), nil, c.args("--", "say done")...)
	if !model.AwaitSteps(t.Context(), 1) {
		t.Fatal("the model was never asked")
	}
	answered := time.Now()
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("claude -p: %v", p.err)
		}
		t.Logf("claude -p ended %v after the model's answer", time.Since(answered).Round(time.Millisecond))
	case <-time.After(printRunEnd):
		t.Fatalf("claude -p still runs %v after its answer, held by: %q", printRunEnd, ourProcesses(w))
	}
}

// requireWakeHook fails unless the settings file holds the idle wake,
// the asyncRewake Stop entry `setup hooks --write` writes.
func requireWakeHook(t *testing.T, settings string) {
	t.Helper()
	data, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Hooks map[string][]any `json:"hooks"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	for _, group := range s.Hooks["Stop"] {
		if bytes.Contains(mustJSON(t, group), []byte(`"asyncRewake":true`)) {
			return
		}
	}
	t.Fatalf("mcpp-chat setup hooks --write wrote no idle wake (asyncRewake) entry:\n%s", data)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
