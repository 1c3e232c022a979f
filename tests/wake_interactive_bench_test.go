package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// TestClaudeInteractiveWakeLatency is a benchmark, not a check: with
// MCPP_CHAT_BENCH=1 it measures, in an interactive Claude Code in a tmux
// pane with the hooks `setup hooks --write` writes, how long an idle
// session takes to send the model its next request after a peer posts:
// from the peer's commit (the tick line's time) to the request's arrival
// at the scripted model, and the part of it that is ours (to the waiter's
// report, the moment it records what it told). Run it with
//
//	MCPP_CHAT_BENCH=1 go test ./tests/ -run TestClaudeInteractiveWakeLatency -count=1 -v
//
// MCPP_CHAT_BENCH_ROUNDS overrides the 10 rounds. MCPP_CHAT_BENCH_TRACE=1
// logs each round's timeline: every hook's start and end (each command is
// wrapped to mark them with shell builtins), the session record's writes,
// the waiter's exit and the request, in ms after the commit.
func TestClaudeInteractiveWakeLatency(t *testing.T) {
	if os.Getenv("MCPP_CHAT_BENCH") == "" {
		t.Skip("a benchmark: set MCPP_CHAT_BENCH=1 to run it")
	}
	rounds := 10
	if n, err := strconv.Atoi(os.Getenv("MCPP_CHAT_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	w, c, gw, dash := interactiveWorld(t)
	steps := []scripted.Step{scripted.End("waiting for peers")}
	for i := range rounds + 1 {
		steps = append(steps, scripted.End(fmt.Sprintf("noted round %d", i)))
	}
	model := startModel(t, steps...)
	events := watchHookState(t, w)
	trace := os.Getenv("MCPP_CHAT_BENCH_TRACE") != ""
	traceDir := filepath.Join(w.dir, "trace")
	if trace {
		traceHooks(t, c.settings, traceDir)
		events.watch(t, traceDir)
	}
	x := c.interactive(t, gw, model)
	x.prompt(t, model, "prompt-1: wait for peers")
	waiter := awaitWaiter(t, w, "")
	var total, report, exit []time.Duration
	for i := range rounds + 1 { // round 0 warms up
		x.awaitIdle(t)
		text := fmt.Sprintf("wake round %d", i)
		w.mustCall(dash, "chat_say", map[string]any{"text": text}, nil)
		tick, err := liveParseTick(liveReadTick(t, w))
		if err != nil {
			t.Fatal(err)
		}
		arrived := awaitArrival(t, model, text)
		waiter = awaitWaiter(t, w, waiter)
		if trace {
			events.timeline(t, tick.at, arrived, model)
		}
		if i == 0 {
			continue
		}
		total = append(total, arrived.Sub(tick.at))
		report = append(report, events.first(t, tick.at, "session-", fsnotify.Write).Sub(tick.at))
		exit = append(exit, events.first(t, tick.at, "wait-", fsnotify.Remove).Sub(tick.at))
	}
	line := func(name string, d []time.Duration) string {
		d = slices.Clone(d)
		slices.Sort(d)
		return fmt.Sprintf("%s: median %.0f ms, p95 %.0f ms, min %.0f ms, max %.0f ms (%d rounds)", name,
			liveMs(livePct(d, 50)), liveMs(livePct(d, 95)), liveMs(d[0]), liveMs(d[len(d)-1]), len(d))
	}
	t.Log(line("the peer's commit → the model's request", total))
	t.Log(line("the peer's commit → the waiter's record of its report", report))
	t.Log(line("the peer's commit → the waiter's exit (its claim removed)", exit))
	if raw, err := json.Marshal(map[string]any{"total_ms": liveMsAll(total), "report_ms": liveMsAll(report), "exit_ms": liveMsAll(exit)}); err == nil {
		t.Logf("raw: %s", raw)
	}
}

// awaitArrival waits for the conversation turn that carries text and
// returns when it arrived.
func awaitArrival(t *testing.T, m *scripted.Server, text string) time.Time {
	t.Helper()
	awaitTurn(t, m, text, func(turn *scripted.Turn) bool { return turn.NewContains(text) })
	for _, e := range m.Turns() {
		if turn := e.Parsed(); turn != nil && turn.NewContains(text) {
			return e.At
		}
	}
	t.Fatalf("no turn carries %q", text)
	return time.Time{}
}

// stateEvents are the file events in the hooks' state folder, timed.
type stateEvents struct {
	mu  sync.Mutex
	all []stateEvent
}

type stateEvent struct {
	at   time.Time
	name string
	op   fsnotify.Op
}

// watchHookState records what happens in the world's hook state folder:
// a session record written, a waiter's claim removed as it exits.
func watchHookState(t *testing.T, w *world) *stateEvents {
	t.Helper()
	dir := filepath.Join(w.home, ".local", "state", "mcpp-chat", "hook")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := &stateEvents{}
	s.watch(t, dir)
	return s
}

// watch records the events in dir too.
func (s *stateEvents) watch(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsw.Close() })
	if err := fsw.Add(dir); err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range fsw.Events {
			s.mu.Lock()
			s.all = append(s.all, stateEvent{at: time.Now(), name: filepath.Base(ev.Name), op: ev.Op})
			s.mu.Unlock()
		}
	}()
}

// timeline logs the events between from and to, in ms after from.
func (s *stateEvents) timeline(t *testing.T, from, to time.Time, model *scripted.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	last := ""
	all := slices.Clone(s.all)
	for _, e := range model.Exchanges() {
		all = append(all, stateEvent{at: e.At, name: "model " + e.Path + " " + string(e.Kind)})
	}
	slices.SortFunc(all, func(a, b stateEvent) int { return a.at.Compare(b.at) })
	for _, e := range all {
		if e.at.Before(from) || e.at.After(to) {
			continue
		}
		line := fmt.Sprintf(" %s %v", e.name, e.op)
		if line != last {
			fmt.Fprintf(&b, "\n%7.1f ms%s", liveMs(e.at.Sub(from)), line)
		}
		last = line
	}
	t.Logf("the commit, then:%s\n%7.1f ms the request", b.String(), liveMs(to.Sub(from)))
}

// first is the time of the first event after from on a file whose name
// starts with prefix.
func (s *stateEvents) first(t *testing.T, from time.Time, prefix string, op fsnotify.Op) time.Time {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.all {
		if e.at.After(from) && strings.HasPrefix(e.name, prefix) && e.op.Has(op) {
			return e.at
		}
	}
	t.Fatalf("no %v of %s* after %v", op, prefix, from)
	return time.Time{}
}

// traceHooks wraps every hook command of the settings file so that it
// marks its start and end by creating a file in dir (a shell builtin: no
// process), which events then times.
func traceHooks(t *testing.T, settings, dir string) {
	t.Helper()
	data, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for ev, groups := range doc["hooks"].(map[string]any) {
		for _, g := range groups.([]any) {
			for _, h := range g.(map[string]any)["hooks"].([]any) {
				e := h.(map[string]any)
				tag := ev
				if e["asyncRewake"] == true {
					tag = "waiter"
				}
				e["command"] = fmt.Sprintf(": > %s/start-%s; %s; rc=$?; : > %s/end-%s; exit $rc", dir, tag, e["command"], dir, tag)
			}
		}
	}
	writeFile(t, settings, string(mustJSON(t, doc)))
}

// TestWaiterWakeLatency is a benchmark, not a check: with MCPP_CHAT_BENCH=1
// it measures our share of an idle session's wake, the part Claude Code
// waits on: from a peer's commit (the tick line's time) to the exit of
// the `mcpp-chat-hook --wait` waiter, and then the UserPromptSubmit hook
// Claude Code runs for the wake before it sends the model the request, as
// whole processes. Run it with
//
//	MCPP_CHAT_BENCH=1 go test ./tests/ -run TestWaiterWakeLatency -count=1 -v
func TestWaiterWakeLatency(t *testing.T) {
	if os.Getenv("MCPP_CHAT_BENCH") == "" {
		t.Skip("a benchmark: set MCPP_CHAT_BENCH=1 to run it")
	}
	rounds := 20
	if n, err := strconv.Atoi(os.Getenv("MCPP_CHAT_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	w, gw, dash := hookPair(t)
	// A session's server holds the database open, as in a real session:
	// the -wal stays between commits.
	w.serve(dash)
	w.event(dash, "s1", "SessionStart", "source", "startup")
	var exits, prompts []time.Duration
	for i := range rounds + 1 { // round 0 warms up
		w.event(dash, "s1", "Stop")
		cmd := exec.Command(hookBin, "--event", "Stop", "--wait", "--timeout", "60")
		cmd.Dir = dash
		cmd.Env = append(append([]string{}, w.env...), "CLAUDE_PROJECT_DIR="+dash, "CLAUDE_CODE_SESSION_ATTENDED=1")
		payload, _ := json.Marshal(hookPayload("s1", "Stop", dash, "stop_hook_active", false))
		cmd.Stdin = bytes.NewReader(payload)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		waitForClaim(t, w, exited)
		w.mustCall(gw, "chat_say", map[string]any{"text": fmt.Sprintf("round %d", i)}, nil)
		err := <-exited
		at := time.Now()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Fatalf("round %d: the waiter ended with %v, want exit 2", i, err)
		}
		tick, perr := liveParseTick(liveReadTick(t, w))
		if perr != nil {
			t.Fatal(perr)
		}
		prompt := w.event(dash, "s1", "UserPromptSubmit", "prompt", "[SYSTEM NOTIFICATION - NOT USER INPUT]")
		if i == 0 {
			continue
		}
		exits = append(exits, at.Sub(tick.at))
		prompts = append(prompts, prompt.took)
	}
	line := func(name string, d []time.Duration) string {
		d = slices.Clone(d)
		slices.Sort(d)
		return fmt.Sprintf("%s: median %.1f ms, p95 %.1f ms, min %.1f ms, max %.1f ms (%d rounds)", name,
			liveMs(livePct(d, 50)), liveMs(livePct(d, 95)), liveMs(d[0]), liveMs(d[len(d)-1]), len(d))
	}
	t.Log(line("the peer's commit → the waiter's exit", exits))
	t.Log(line("the UserPromptSubmit hook of the wake, a whole process", prompts))
}
