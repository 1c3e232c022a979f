package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/codexwake"
	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// The Codex doorbell with the real Codex (0.171.0) as a person runs it:
// a plain interactive `codex` in a tmux pane, on the shared background
// server it starts, with what `setup codex --write` merges into its
// config.toml (the server, the hooks); the model is scripted, on
// loopback, its provider in that config.toml. A peer's post makes the
// party's serve run `codex queue`, and the pane's idle session takes the
// queued line as a turn of its own.
//
// Each test has its own CODEX_HOME: Codex copies its server's binary
// there at the first start (about 424 MB, gone with the test's folder),
// and the test stops that server and its updater by their PIDs.

// ringFrom is the line the doorbell queues when the peer is node-dash.
const ringFrom = "mcpp-chat: node-dash is waiting on this session. Call chat_inbox to see what waits, then answer from this repository."

// codexWakeWorld is mesh-gw and node-dash seated together and Codex
// installed with `setup codex --write`, its folder trusted and its
// start-up notices seen, so that it opens on its prompt.
func codexWakeWorld(t *testing.T) (w *world, c *codex, gw, dash string) {
	t.Helper()
	if !codexwake.Supported {
		t.Skip("the Codex doorbell runs on Linux only")
	}
	w = newWorld(t)
	c = withHooks(t, w)
	gw, dash = seatPair(t, w)
	c.server = "[projects." + tomlString(gw) + "]\ntrust_level = \"trusted\"\n\n" +
		"[notice.model_migrations]\n\"gpt-5.5\" = \"gpt-6-sol\"\n\n" +
		"[tui.model_availability_nux]\n\"gpt-6.1-sol\" = 1\n"
	return w, c, gw, dash
}

// codexPane is an interactive Codex in a tmux pane.
type codexPane struct {
	*terminal
	w     *world
	home  string // its CODEX_HOME
	model *scripted.Server
}

// interactive starts a plain `codex` in dir against model and trusts
// our hooks as a person does ("Hooks need review": trust all). At the
// end of the test it is stopped — the terminal, then Codex's background
// server and its updater — each by its PID.
func (c *codex) interactive(t *testing.T, dir string, model *scripted.Server) *codexPane {
	t.Helper()
	c.configure(t, model.URL)
	home := filepath.Join(c.w.home, ".codex")
	p := &codexPane{w: c.w, home: home, model: model}
	var tui []int
	t.Cleanup(func() { p.stop(t, tui) }) // after the terminal's own cleanup
	p.terminal = newTerminal(t, dir, cliEnv(c.w, "SCRIPTED_MODEL_KEY=dummy"), c.bin, "--no-alt-screen")
	p.awaitScreen(t, "Hooks need review")
	p.pick(t, "Trust all and continue")
	p.awaitScreen(t, "for shortcuts")
	tui = append([]int{p.pid}, descendants(p.pid)...)
	return p
}

// pick moves the dialog's cursor (›) down to option and takes it.
func (p *codexPane) pick(t *testing.T, option string) {
	t.Helper()
	chosen := func(screen string) bool { return lineWith(screen, "›", option) }
	for i := 0; !chosen(p.screen()); i++ {
		if i == 10 {
			t.Fatalf("the dialog's cursor never reached %q", option)
		}
		p.keys(t, "Down")
		p.shows(time.Second, chosen)
	}
	p.settle()
	p.keys(t, "Enter")
}

// prompt types text as the person's prompt and waits for the model to
// get it.
func (p *codexPane) prompt(t *testing.T, text string) {
	t.Helper()
	p.text(t, text)
	p.awaitScreen(t, text)
	p.settle()
	p.keys(t, "Enter")
	awaitTurn(t, p.model, "the prompt "+text, func(turn *scripted.Turn) bool { return turn.NewContains(text) })
}

// awaitIdle waits (bounded) until no turn runs: Codex shows "esc to
// interrupt" while one does.
func (p *codexPane) awaitIdle(t *testing.T) {
	t.Helper()
	if !p.shows(cliAwait, func(screen string) bool { return !strings.Contains(screen, "esc to interrupt") }) {
		t.Fatal("Codex never became idle")
	}
	p.settle()
}

// stop ends the terminal and Codex's background server and updater, by
// PID, and fails the test if any of them, or any process of ours, stays.
func (p *codexPane) stop(t *testing.T, tui []int) {
	procs := slices.Clone(tui)
	for _, name := range []string{"daemon.pid", "daemon-updater.pid"} {
		if pr, ok := codexPID(filepath.Join(p.home, "app-server-daemon", name)); ok {
			procs = append(procs, pr)
		}
	}
	p.model.Close() // a held answer goes out: nothing of Codex's waits on the model
	p.cmd("kill-server").Run()
	for _, pid := range procs {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range procs {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d (%s) still runs after the test's end: killed", pid, cmdline(pid))
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	awaitNoneOfOurs(t, p.w, "the end of the test")
	// The server's socket lives outside CODEX_HOME, named by it.
	for _, link := range []string{filepath.Join(p.home, "app-server-control", "app-server-control.sock"), filepath.Join(p.home, "app-server-daemon", "daemon-updater.sock")} {
		if target, err := os.Readlink(link); err == nil && strings.HasPrefix(target, os.TempDir()+"/codex-daemon-") {
			os.Remove(target)
		}
	}
}

// codexPID reads a pid file of Codex's background server, and checks that
// the process it names is that one still (its start in clock ticks).
func codexPID(path string) (int, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	var f struct {
		PID      int `json:"pid"`
		Identity struct {
			StartTicks uint64 `json:"startTicks"`
		} `json:"processIdentity"`
	}
	if json.Unmarshal(data, &f) != nil || f.PID <= 1 {
		return 0, false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(f.PID) + "/stat")
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 20 || fields[19] != strconv.FormatUint(f.Identity.StartTicks, 10) {
		return 0, false
	}
	return f.PID, true
}

// descendants are pid's children, theirs, and so on.
func descendants(pid int) []int {
	var out []int
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(data)) {
		child, _ := strconv.Atoi(f)
		out = append(append(out, child), descendants(child)...)
	}
	return out
}

func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func cmdline(pid int) string {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
}

// record is the doorbell's record of the world's Codex session: there is
// one Codex background server and one party with a session.
func (w *world) record(t *testing.T) (codexwake.Record, bool) {
	t.Helper()
	paths := codexwake.Records(filepath.Join(w.home, ".local", "state", "mcpp-chat", "hook"))
	if len(paths) != 1 {
		return codexwake.Record{}, false
	}
	r, err := codexwake.Read(paths[0])
	return r, err == nil && len(r.Threads) > 0
}

// awaitRecord waits (bounded) until the doorbell's record holds what ok
// says, and returns it.
func (w *world) awaitRecord(t *testing.T, what string, ok func(codexwake.Record) bool) codexwake.Record {
	t.Helper()
	deadline := time.Now().Add(cliAwait)
	for {
		r, found := w.record(t)
		if found && ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the doorbell's record never showed %s: %+v", what, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rings are the turns the ring started: the queued line as the turn's
// own prompt.
func rings(m *scripted.Server) []*scripted.Turn {
	var out []*scripted.Turn
	for _, turn := range turns(m) {
		if p := partWith(turn.New, "user", ringFrom); p != nil {
			out = append(out, turn)
		}
	}
	return out
}

// An idle session is woken by a peer's ask, once: the line reaches the
// model as the session's own prompt and the terminal shows it; the turn
// looks (chat_inbox) and ends. Nothing more is rung for what it saw; a
// new post rings it again.
func TestCodexIdleWakeRingsAnIdleSessionOnce(t *testing.T) {
	w, c, gw, dash := codexWakeWorld(t)
	model := startModel(t,
		scripted.End("waiting for peers"),
		// Codex's tool search ranks chat_inbox below eight others for
		// its own name: the model searches its word.
		scripted.Do(scripted.Builtin("tool_search", map[string]any{"query": "inbox"})),
		scripted.Do(scripted.MCP("chat", "chat_inbox", map[string]any{})),
		scripted.End("looked"),
		scripted.Do(scripted.MCP("chat", "chat_read", map[string]any{})),
		scripted.End("read"))
	x := c.interactive(t, gw, model)
	x.prompt(t, "prompt-1: wait for peers")
	x.awaitIdle(t)

	w.mustCall(dash, "chat_ask", map[string]any{"title": "Is the enum closed?", "body": "I need FRAME_AUX.", "slug": "enum"}, nil)
	awaitTurn(t, model, "the ring", func(turn *scripted.Turn) bool { return partWith(turn.New, "user", ringFrom) != nil })
	x.awaitScreen(t, "› "+ringFrom[:60])
	looked := awaitTurn(t, model, "chat_inbox's answer", func(turn *scripted.Turn) bool { return turn.Last().IsMCP("chat", "chat_inbox") })
	if !strings.Contains(looked.Last().Text, "Is the enum closed?") {
		t.Errorf("the woken turn's chat_inbox did not show the ask: %.400q", looked.Last().Text)
	}
	r := w.awaitRecord(t, "the woken session's look", func(r codexwake.Record) bool {
		return r.Threads[0].Bell.Rings == 1 && !r.Threads[0].Bell.Outstanding
	})
	x.awaitIdle(t)

	w.mustCall(dash, "chat_say", map[string]any{"text": "one more thing"}, nil)
	awaitTurn(t, model, "a second ring", func(*scripted.Turn) bool { return len(rings(model)) == 2 })
	r = w.awaitRecord(t, "the second ring read", func(r codexwake.Record) bool {
		b := r.Threads[0].Bell
		return b.Rings == 2 && !b.Outstanding && r.Last == codexwake.LastNothingNew
	})
	x.awaitIdle(t)
	if n := len(rings(model)); n != 2 || r.Threads[0].Bell.Rings != 2 {
		t.Errorf("%d turns were rung (the record says %d rings), want 2: one per post, none more", n, r.Threads[0].Bell.Rings)
	}
}

// A ring that comes while the person's turn runs waits for it: the
// person's answer is shown, and the ring is a turn of its own after it,
// never steered into the person's turn — which the Stop hook does not
// keep going for the same peer either.
func TestCodexIdleWakeWaitsForTheRunningTurn(t *testing.T) {
	w, c, gw, dash := codexWakeWorld(t)
	release, started := make(chan struct{}), make(chan struct{}, 1)
	model := startModel(t,
		scripted.End("waiting for peers"),
		func(*scripted.Turn) scripted.Reply {
			started <- struct{}{}
			return scripted.Reply{Text: "ANSWER FOR THE PERSON", Hold: release}
		},
		scripted.Do(scripted.MCP("chat", "chat_read", map[string]any{})),
		scripted.End("read"))
	x := c.interactive(t, gw, model)
	x.prompt(t, "prompt-1: wait for peers")
	x.awaitIdle(t)

	x.text(t, "prompt-2: a slow task")
	x.awaitScreen(t, "prompt-2: a slow task")
	x.settle()
	x.keys(t, "Enter")
	select {
	case <-started:
	case <-time.After(cliAwait):
		t.Fatal("the person's turn never reached the model")
	}
	w.mustCall(dash, "chat_say", map[string]any{"text": "are you there?"}, nil)
	w.awaitRecord(t, "a ring while the person's turn runs", func(r codexwake.Record) bool { return r.Threads[0].Bell.Rings == 1 })
	close(release)

	x.awaitScreen(t, "ANSWER FOR THE PERSON")
	ring := awaitTurn(t, model, "the ring", func(turn *scripted.Turn) bool { return partWith(turn.New, "user", ringFrom) != nil })
	answered := slices.IndexFunc(ring.Parts, func(p scripted.Part) bool { return p.Role == "assistant" && p.Text == "ANSWER FOR THE PERSON" })
	rang := slices.IndexFunc(ring.Parts, func(p scripted.Part) bool { return p.Role == "user" && p.Text == ringFrom })
	if answered < 0 || rang < answered {
		t.Errorf("the ring is not a turn after the person's answer (answer at %d, ring at %d):\n%s", answered, rang, describe(ring.Parts))
	}
	for _, turn := range turns(model) {
		if turn.NewContains(stopReason) {
			t.Errorf("the Stop hook kept a turn going for what the ring was for:\n%s", describe(turn.New))
		}
	}
	x.awaitIdle(t)
	if !strings.Contains(x.screen(), "ANSWER FOR THE PERSON") {
		t.Errorf("the person's answer is no longer shown:\n%s", x.screen())
	}
}

// A draft the person has half typed survives the ring: still in the
// prompt after the rung turn, and theirs to send.
func TestCodexIdleWakeKeepsADraft(t *testing.T) {
	w, c, gw, dash := codexWakeWorld(t)
	model := startModel(t,
		scripted.End("waiting for peers"),
		scripted.Do(scripted.MCP("chat", "chat_read", map[string]any{})),
		scripted.End("read"),
		scripted.End("sent the draft"))
	x := c.interactive(t, gw, model)
	x.prompt(t, "prompt-1: wait for peers")
	x.awaitIdle(t)

	const draft = "a half-typed draft of mine"
	x.text(t, draft)
	x.awaitScreen(t, draft)
	w.mustCall(dash, "chat_say", map[string]any{"text": "are you there?"}, nil)
	ring := awaitTurn(t, model, "the ring", func(turn *scripted.Turn) bool { return partWith(turn.New, "user", ringFrom) != nil })
	if ring.Contains(draft) {
		t.Errorf("the draft went to the model with the ring:\n%s", describe(ring.New))
	}
	x.awaitScreen(t, "› "+ringFrom[:60])
	x.awaitIdle(t)
	if !lineWith(x.screen(), "›", draft) {
		t.Fatalf("the draft is gone from the prompt after the ring:\n%s", x.screen())
	}
	x.keys(t, "Enter")
	sent := awaitTurn(t, model, "the draft sent", func(turn *scripted.Turn) bool { return partWith(turn.New, "user", draft) != nil })
	if sent.NewContains(ringFrom) {
		t.Errorf("the draft's turn carries the ring:\n%s", describe(sent.New))
	}
}

// Five posts in a row make one ring: the rung turn, held back until all
// five are in, reads them all, and nothing more is rung.
func TestCodexIdleWakeRingsOnceForFivePosts(t *testing.T) {
	w, c, gw, dash := codexWakeWorld(t)
	release := make(chan struct{})
	model := startModel(t,
		scripted.End("waiting for peers"),
		func(*scripted.Turn) scripted.Reply {
			return scripted.Reply{Calls: []scripted.Call{scripted.MCP("chat", "chat_read", map[string]any{})}, Hold: release}
		},
		scripted.End("read all five"))
	x := c.interactive(t, gw, model)
	x.prompt(t, "prompt-1: wait for peers")
	x.awaitIdle(t)

	for i := range 5 {
		w.mustCall(dash, "chat_say", map[string]any{"text": fmt.Sprintf("post %d of 5", i+1)}, nil)
	}
	awaitTurn(t, model, "the ring", func(turn *scripted.Turn) bool { return partWith(turn.New, "user", ringFrom) != nil })
	close(release)
	got := awaitTurn(t, model, "chat_read's answer", func(turn *scripted.Turn) bool { return turn.Last().IsMCP("chat", "chat_read") })
	if !strings.Contains(got.Last().Text, "post 5 of 5") {
		t.Errorf("the rung turn's chat_read did not bring the five posts: %.400q", got.Last().Text)
	}
	r := w.awaitRecord(t, "a look after the read", func(r codexwake.Record) bool { return r.Last == codexwake.LastNothing })
	x.awaitIdle(t)
	if n := len(rings(model)); n != 1 || r.Threads[0].Bell.Rings != 1 {
		t.Errorf("five posts rang %d turns (the record says %d rings), want 1", n, r.Threads[0].Bell.Rings)
	}
}

// A ring is a wake of a chain like any other: the rung turn's post
// carries the next hop of the chain of the post it rang for, and a prompt
// the person types next starts a new chain — so a loop through a Codex
// session stops at attention.max_hops.
func TestCodexIdleWakeCarriesTheChainOn(t *testing.T) {
	w, c, gw, dash := codexWakeWorld(t)
	model := startModel(t,
		scripted.End("waiting for peers"),
		scripted.Do(scripted.MCP("chat", "chat_say", map[string]any{"text": "answer from the rung turn"})),
		scripted.End("said"),
		scripted.Do(scripted.MCP("chat", "chat_say", map[string]any{"text": "answer from a typed turn"})),
		scripted.End("said again"))
	x := c.interactive(t, gw, model)
	x.prompt(t, "prompt-1: wait for peers")
	x.awaitIdle(t)

	w.mustCall(dash, "chat_say", map[string]any{"text": "over to you"}, nil)
	awaitTurn(t, model, "the rung turn's say", func(turn *scripted.Turn) bool { return turn.Last().IsMCP("chat", "chat_say") })
	x.awaitIdle(t)
	x.prompt(t, "prompt-2: say it again")
	awaitTurn(t, model, "the typed turn's say", func(turn *scripted.Turn) bool {
		return turn.NewContains("prompt-2") || len(turns(model)) > 4 && turn.Last().IsMCP("chat", "chat_say")
	})
	x.awaitIdle(t)

	db := roDB(t, w.db)
	hop := func(body string) string {
		t.Helper()
		var hop int64
		err := db.QueryRow(`SELECT c.hop FROM chains c JOIN messages m ON m.id = c.message_id WHERE m.body = ?`, body).Scan(&hop)
		if err != nil {
			return "no chain (" + err.Error() + ")"
		}
		return strconv.FormatInt(hop, 10)
	}
	// node-dash's post came from outside any turn: the ring began hop 1.
	if got := hop("answer from the rung turn"); got != "1" {
		t.Errorf("the rung turn's post is at hop %s, want 1", got)
	}
	if got := hop("answer from a typed turn"); got != "0" {
		t.Errorf("the typed turn's post is at hop %s, want 0", got)
	}
}

// A session whose terminal has quit is not rung. Codex keeps its thread
// loaded, and our server running, for about a minute after, and would run
// a queued message there as a turn nobody sees; the doorbell sees that no
// Codex terminal works in the party's folder any more.
func TestCodexIdleWakeLeavesAClosedSessionAlone(t *testing.T) {
	w, c, gw, dash := codexWakeWorld(t)
	model := startModel(t, scripted.End("waiting for peers"))
	x := c.interactive(t, gw, model)
	x.prompt(t, "prompt-1: wait for peers")
	x.awaitIdle(t)
	w.awaitRecord(t, "the session's thread", func(codexwake.Record) bool { return true })

	x.text(t, "/quit")
	x.awaitScreen(t, "/quit")
	x.settle()
	x.keys(t, "Enter")
	deadline := time.Now().Add(cliAwait)
	for len(descendants(x.pid)) > 0 || alive(x.pid) {
		if time.Now().After(deadline) {
			t.Fatal("Codex's terminal did not quit")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.ContainsFunc(ourProcesses(w), func(p string) bool { return strings.HasSuffix(p, " serve") }) {
		t.Fatal("our server ended with the terminal: the minute in which Codex keeps the thread is not what this test looks at")
	}
	before := len(turns(model))
	posted := time.Now()
	w.mustCall(dash, "chat_say", map[string]any{"text": "still there?"}, nil)
	r := w.awaitRecord(t, "the doorbell's look at the post", func(r codexwake.Record) bool { return r.LastAt.After(posted) && r.Last != codexwake.LastNothing })
	if r.Last != codexwake.LastClosed || r.Threads[0].Bell.Rings != 0 {
		t.Errorf("after the terminal quit, the doorbell decided %q with %d rings", r.Last, r.Threads[0].Bell.Rings)
	}
	if n := len(turns(model)); n != before {
		t.Errorf("the closed session ran %d turns more", n-before)
	}
}

// TestCodexIdleWakeLatency is a benchmark, not a check: with
// MCPP_CHAT_BENCH=1 it measures how long an idle interactive Codex (a
// plain `codex` in a tmux pane, as the tests above run it) takes to send
// the model the rung turn after a peer posts: from the peer's commit (the
// tick line's time) to the request's arrival at the scripted model, and
// the part of it that is ours (to the doorbell's decision, just before it
// runs `codex queue`). Run it with
//
//	MCPP_CHAT_BENCH=1 go test ./tests/ -run TestCodexIdleWakeLatency -count=1 -v
//
// MCPP_CHAT_BENCH_ROUNDS overrides the 10 rounds.
func TestCodexIdleWakeLatency(t *testing.T) {
	if os.Getenv("MCPP_CHAT_BENCH") == "" {
		t.Skip("a benchmark: set MCPP_CHAT_BENCH=1 to run it")
	}
	rounds := 10
	if n, err := strconv.Atoi(os.Getenv("MCPP_CHAT_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	w, c, gw, dash := codexWakeWorld(t)
	steps := []scripted.Step{scripted.End("waiting for peers")}
	for i := range rounds + 1 {
		steps = append(steps, scripted.Do(scripted.MCP("chat", "chat_read", map[string]any{})), scripted.End(fmt.Sprintf("read round %d", i)))
	}
	model := startModel(t, steps...)
	x := c.interactive(t, gw, model)
	x.prompt(t, "prompt-1: wait for peers")
	var total, ours []time.Duration
	for i := range rounds + 1 { // round 0 warms up
		x.awaitIdle(t)
		w.mustCall(dash, "chat_say", map[string]any{"text": fmt.Sprintf("wake round %d", i)}, nil)
		tick, err := liveParseTick(liveReadTick(t, w))
		if err != nil {
			t.Fatal(err)
		}
		awaitTurn(t, model, "the ring of round "+strconv.Itoa(i), func(*scripted.Turn) bool { return len(rings(model)) == i+1 })
		r := w.awaitRecord(t, "round "+strconv.Itoa(i)+" read", func(r codexwake.Record) bool {
			return r.Threads[0].Bell.Rings == i+1 && !r.Threads[0].Bell.Outstanding
		})
		if i == 0 {
			continue
		}
		var arrived time.Time
		for _, e := range model.Turns() {
			if turn := e.Parsed(); turn != nil && partWith(turn.New, "user", ringFrom) != nil {
				arrived = e.At // the last one is this round's
			}
		}
		total = append(total, arrived.Sub(tick.at))
		ours = append(ours, r.Threads[0].Bell.At.Sub(tick.at))
	}
	line := func(name string, d []time.Duration) string {
		d = slices.Clone(d)
		slices.Sort(d)
		return fmt.Sprintf("%s: median %.0f ms, p95 %.0f ms, min %.0f ms, max %.0f ms (%d rounds)", name,
			liveMs(livePct(d, 50)), liveMs(livePct(d, 95)), liveMs(d[0]), liveMs(d[len(d)-1]), len(d))
	}
	t.Log(line("the peer's commit → the model's request", total))
	t.Log(line("the peer's commit → the doorbell's decision to ring", ours))
	if raw, err := json.Marshal(map[string]any{"total_ms": liveMsAll(total), "ours_ms": liveMsAll(ours)}); err == nil {
		t.Logf("raw: %s", raw)
	}
}

// On a team hub's member machine the session's serve hears the hub's
// change and rings locally: a peer on another machine posts through the
// hub, and the idle Codex session here is woken as on one machine.
func TestCodexIdleWakeOnAHubMember(t *testing.T) {
	if !codexwake.Supported {
		t.Skip("the Codex doorbell runs on Linux only")
	}
	realClient(t, "codex") // skips before anything starts
	h := startHub(t)
	gwToken, dashToken := h.issue(t, "mesh-gw", "laptop"), h.issue(t, "node-dash", "dash-box")
	laptop := memberWorld(t)
	gw := gitRepo(t, laptop, "mesh-gw")
	if out, errs, code := laptop.runIn(gw, "connect", h.base, "--token", gwToken); code != 0 {
		t.Fatalf("mcpp-chat connect: exit %d\n%s%s", code, out, errs)
	}
	other := memberWorld(t, "MCPP_CHAT_STORE="+h.base, "MCPP_CHAT_TOKEN="+dashToken)
	dash := gitRepo(t, other, "node-dash")
	other.mustCall(dash, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"mesh-gw"}}, nil)

	c := withHooks(t, laptop)
	c.server = "[projects." + tomlString(gw) + "]\ntrust_level = \"trusted\"\n\n" +
		"[notice.model_migrations]\n\"gpt-5.5\" = \"gpt-6-sol\"\n\n" +
		"[tui.model_availability_nux]\n\"gpt-6.1-sol\" = 1\n"
	model := startModel(t,
		scripted.End("waiting for peers"),
		scripted.Do(scripted.MCP("chat", "chat_read", map[string]any{})),
		scripted.End("read"))
	x := c.interactive(t, gw, model)
	x.prompt(t, "prompt-1: wait for peers")
	x.awaitIdle(t)
	laptop.awaitRecord(t, "the session's thread", func(codexwake.Record) bool { return true })

	other.mustCall(dash, "chat_say", map[string]any{"text": "are you there, across the hub?"}, nil)
	awaitTurn(t, model, "the ring", func(turn *scripted.Turn) bool { return partWith(turn.New, "user", ringFrom) != nil })
	read := awaitTurn(t, model, "chat_read's answer", func(turn *scripted.Turn) bool { return turn.Last().IsMCP("chat", "chat_read") })
	if !strings.Contains(read.Last().Text, "are you there, across the hub?") {
		t.Errorf("the rung turn's chat_read did not bring the peer's post from the hub: %.400q", read.Last().Text)
	}
}
