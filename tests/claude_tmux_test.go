package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// Claude Code as a person runs it: interactive, in a terminal (a tmux
// pane), with the hooks `setup hooks --write` writes, among them the
// asyncRewake Stop entry (the idle wake), which wakes an idle session when
// a peer needs it.

// terminal is a tmux server of its own running one program in a pane.
type terminal struct {
	tmux, sock string
	pid        int // the program's
}

// newTerminal runs argv in dir with env in a 200x50 pane.
func newTerminal(t *testing.T, dir string, env []string, argv ...string) *terminal {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		missingClient(t, "tmux is not installed (apt-get install tmux)")
	}
	// A socket path must be short (about 100 bytes): not under t.TempDir().
	sockDir, err := os.MkdirTemp("", "mcpp-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	x := &terminal{tmux: tmux, sock: filepath.Join(sockDir, "s")}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	launcher := filepath.Join(t.TempDir(), "launch.sh")
	writeFile(t, launcher, "cd '"+strings.ReplaceAll(dir, "'", `'\''`)+"' && exec "+strings.Join(quoted, " ")+"\n")
	// The server, and so the pane, inherits this environment.
	cmd := exec.Command(tmux, "-S", x.sock, "-f", "/dev/null", "new-session", "-d", "-s", "cc", "-x", "200", "-y", "50", "sh", launcher)
	cmd.Env = append(append([]string{}, env...), "TERM=xterm-256color")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the terminal showed:\n%s", x.screen())
		}
		exec.Command(tmux, "-S", x.sock, "kill-server").Run()
		if x.pid > 0 {
			syscall.Kill(x.pid, syscall.SIGKILL)
		}
		os.RemoveAll(sockDir)
	})
	out, err := x.cmd("display-message", "-p", "-t", "cc", "#{pane_pid}").Output()
	if err == nil {
		x.pid, err = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	if err != nil {
		t.Fatalf("the pane's process: %q %v", out, err)
	}
	return x
}

func (x *terminal) cmd(args ...string) *exec.Cmd {
	return exec.Command(x.tmux, append([]string{"-S", x.sock}, args...)...)
}

// screen is what the pane shows now.
func (x *terminal) screen() string {
	out, _ := x.cmd("capture-pane", "-p", "-t", "cc").Output()
	return string(out)
}

// awaitScreen waits (bounded) until the pane shows text.
func (x *terminal) awaitScreen(t *testing.T, text string) {
	t.Helper()
	if !x.shows(cliAwait, func(screen string) bool { return strings.Contains(screen, text) }) {
		t.Fatalf("the terminal never showed %q", text)
	}
}

// shows waits up to d for ok to hold for the screen; false if it did
// not, or the program ended.
func (x *terminal) shows(d time.Duration, ok func(string) bool) bool {
	deadline := time.Now().Add(d)
	for {
		screen := x.screen()
		if ok(screen) {
			return true
		}
		if time.Now().After(deadline) || syscall.Kill(x.pid, 0) != nil {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settle waits (bounded) until the screen has not changed for half a
// second: Claude Code draws a dialog again while it starts, and a key
// sent in between can be lost, or land on the dialog's default.
func (x *terminal) settle() {
	last, same := "", 0
	for deadline := time.Now().Add(10 * time.Second); same < 5 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if screen := x.screen(); screen == last {
			same++
		} else {
			last, same = screen, 0
		}
	}
}

// choose moves a dialog's cursor (❯) with key to the option, then
// confirms it. The dialog may not take keys at once: the key is sent
// again until the cursor is there.
func (x *terminal) choose(t *testing.T, key, option string) {
	t.Helper()
	x.settle()
	selected := func(screen string) bool {
		for _, line := range strings.Split(screen, "\n") {
			if before, after, ok := strings.Cut(line, "❯"); ok && strings.TrimSpace(before) == "" && strings.HasPrefix(strings.TrimSpace(after), option) {
				return true
			}
		}
		return false
	}
	for i := 0; !selected(x.screen()); i++ {
		if i == 10 {
			t.Fatalf("the dialog's cursor never reached %q", option)
		}
		x.keys(t, key)
		x.shows(time.Second, selected)
	}
	x.settle()
	x.keys(t, "Enter")
}

// keys sends tmux key names (Enter, Down, C-c); text sends literal text.
func (x *terminal) keys(t *testing.T, keys ...string) {
	t.Helper()
	if out, err := x.cmd(append([]string{"send-keys", "-t", "cc"}, keys...)...).CombinedOutput(); err != nil {
		t.Fatalf("tmux send-keys %v: %v %s", keys, err, out)
	}
}

func (x *terminal) text(t *testing.T, s string) { x.keys(t, "-l", s) }

// awaitIdle waits (bounded) until Claude Code waits for input: no turn
// running ("esc to interrupt" is gone) and the screen settled. A key sent
// during a turn interrupts it instead.
func (x *terminal) awaitIdle(t *testing.T) {
	t.Helper()
	if !x.shows(cliAwait, func(screen string) bool { return !strings.Contains(screen, "esc to interrupt") }) {
		t.Fatal("Claude Code never became idle")
	}
	x.settle()
}

// awaitGone waits (bounded) until the pane's program has exited.
func (x *terminal) awaitGone(t *testing.T, after string) {
	t.Helper()
	deadline := time.Now().Add(cliAwait)
	for syscall.Kill(x.pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("Claude Code still runs after %s", after)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// interactive starts Claude Code in a terminal in dir against model and
// answers its first-run dialogs as a user does: trust the folder (hooks
// run only after that), use the API key.
func (c *claudeCode) interactive(t *testing.T, dir string, model *scripted.Server) *terminal {
	t.Helper()
	x := newTerminal(t, dir, c.env(model.URL), c.bin, "--settings", c.settings, "--allowedTools", "mcp__chat__*")
	x.awaitScreen(t, "Yes, I trust this folder") // the default is "No, exit"
	x.choose(t, "Down", "Yes, I trust this folder")
	x.awaitScreen(t, "Do you want to use this API key?") // the default is "No"
	x.choose(t, "Up", "Yes")
	x.awaitScreen(t, "Claude Code v")
	return x
}

// prompt types text as the user's prompt and waits for the model to get it.
func (x *terminal) prompt(t *testing.T, model *scripted.Server, text string) {
	t.Helper()
	x.text(t, text)
	x.awaitScreen(t, text)
	x.keys(t, "Enter")
	awaitTurn(t, model, "the prompt "+text, func(turn *scripted.Turn) bool { return turn.NewContains(text) })
}

// awaitWaiter waits (bounded) for a Stop --wait waiter of the world other
// than the one with pid not, and returns its pid.
func awaitWaiter(t *testing.T, w *world, not string) string {
	t.Helper()
	deadline := time.Now().Add(cliAwait)
	for {
		for _, p := range ourProcesses(w) {
			pid, cmdline, _ := strings.Cut(p, ": ")
			if strings.HasPrefix(cmdline, hookBin+" ") && strings.Contains(cmdline, "--wait") && pid != not {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Stop --wait waiter runs (ours: %q)", ourProcesses(w))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// interactiveWorld is mesh-gw and node-dash seated together, with
// Claude Code installed with the hooks `setup hooks --write` writes, the
// idle wake among them.
func interactiveWorld(t *testing.T) (w *world, c *claudeCode, gw, dash string) {
	t.Helper()
	w = newWorld(t)
	c = newClaude(t, w)
	requireWakeHook(t, c.settings)
	gw, dash = seatPair(t, w)
	return w, c, gw, dash
}

// An idle session is woken by a peer's ask, without a keystroke, and the
// wake is armed again for the next one; /exit leaves nothing running.
// Each wake is told once (Claude Code runs UserPromptSubmit for the wake
// too), and the terminal shows it as ours.
func TestClaudeInteractiveWakesAnIdleSession(t *testing.T) {
	w, c, gw, dash := interactiveWorld(t)
	model := startModel(t,
		scripted.End("waiting for peers"),
		// The first wake ends at once, so that the terminal holds only
		// what Claude Code shows of the wake; the second is answered.
		scripted.End("noted"),
		scripted.Do(scripted.MCP("chat", "chat_read", map[string]any{})),
		scripted.Do(scripted.MCP("chat", "chat_reply", map[string]any{"item": "tls", "text": "looked at tls"})),
		scripted.End("answered tls"))
	x := c.interactive(t, gw, model)
	x.prompt(t, model, "prompt-1: wait for peers")
	waiter := awaitWaiter(t, w, "")

	for i, ask := range []struct{ slug, title string }{{"enum", "Is the enum closed?"}, {"tls", "Can we move to TLS 1.3?"}} {
		w.mustCall(dash, "chat_ask", map[string]any{"title": ask.title, "body": "Please look.", "slug": ask.slug}, nil)
		wake := awaitTurn(t, model, "a wake for "+ask.slug, func(turn *scripted.Turn) bool {
			return turn.NewContains(stopReason) && turn.NewContains(ask.title)
		})
		if p := partWith(wake.New, "system", promptContext); p != nil && strings.Contains(p.Text, ask.title) {
			t.Errorf("the wake for %s was told twice: UserPromptSubmit context repeats it:\n%s", ask.slug, describe(wake.New))
		}
		if i == 0 {
			x.wakeShown(t)
		}
		// Armed again: a new waiter, once the woken turn has ended.
		waiter = awaitWaiter(t, w, waiter)
	}
	var replies struct {
		Messages []struct{ From, Body string }
	}
	w.mustCall(dash, "chat_read", map[string]any{}, &replies)
	if n := len(replies.Messages); n == 0 || replies.Messages[n-1].From != "mesh-gw" || replies.Messages[n-1].Body != "looked at tls" {
		t.Errorf("node-dash did not get mesh-gw's reply: %+v", replies.Messages)
	}

	x.awaitIdle(t)
	x.text(t, "/exit")
	x.awaitScreen(t, "/exit")
	x.keys(t, "Enter")
	x.awaitGone(t, "/exit")
	awaitNoneOfOurs(t, w, "/exit")
}

// wakeShown checks what the person at the terminal reads of a wake: a
// line of ours where Claude Code would say only "Stop hook feedback".
// It cannot name the peer: Claude Code 2.1.332 shows an entry's fixed
// rewakeSummary there, and its expanded transcript (Ctrl-O) shows no more.
func (x *terminal) wakeShown(t *testing.T) {
	t.Helper()
	if !x.shows(10*time.Second, func(screen string) bool { return lineWith(screen, "● mcpp-chat", "waiting") }) {
		t.Errorf("after the wake, no line on the terminal says it is mcpp-chat's:\n%s", x.screen())
	}
}

// lineWith reports whether one line of screen holds every word.
func lineWith(screen string, words ...string) bool {
	for _, line := range strings.Split(screen, "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// However the session ends — Ctrl-C twice, the terminal closed, Claude
// Code killed — nothing of ours stays running: not the server, not the
// armed waiter.
func TestClaudeInteractiveQuitLeavesNothingRunning(t *testing.T) {
	for _, quit := range []struct {
		name string
		do   func(*testing.T, *terminal)
	}{
		{"Ctrl-C twice", func(t *testing.T, x *terminal) {
			x.keys(t, "C-c")
			x.awaitScreen(t, "again to exit")
			x.keys(t, "C-c")
		}},
		{"the terminal closed", func(t *testing.T, x *terminal) {
			if out, err := x.cmd("kill-session", "-t", "cc").CombinedOutput(); err != nil {
				t.Fatalf("tmux kill-session: %v %s", err, out)
			}
		}},
		{"kill -9", func(t *testing.T, x *terminal) {
			if err := syscall.Kill(x.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(quit.name, func(t *testing.T) {
			w, c, gw, _ := interactiveWorld(t)
			model := startModel(t, scripted.End("waiting for peers"))
			x := c.interactive(t, gw, model)
			x.prompt(t, model, "prompt-1: wait for peers")
			awaitWaiter(t, w, "")
			x.awaitIdle(t)
			if len(ourProcesses(w)) < 2 {
				t.Fatalf("want the server and the waiter running, got %q", ourProcesses(w))
			}
			quit.do(t, x)
			x.awaitGone(t, quit.name)
			awaitNoneOfOurs(t, w, quit.name)
		})
	}
}
