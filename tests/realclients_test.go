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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// Real clients: the Claude Code CLI and the Codex CLI, installed by
// `make e2e-clients`, run against a scripted model on loopback
// (tests/scripted) with our built binaries registered as a user
// registers them. What the model is sent is what these tests check.
//
// MCPP_CHAT_E2E_BIN names the folder holding the claude and codex
// executables (default: the checkout's .cache/e2e/node_modules/.bin, where
// `make e2e-clients` puts them). Without them the tests skip, saying so,
// unless MCPP_CHAT_E2E_REQUIRE=1, which CI sets: then a missing client
// fails.
const (
	e2eBinEnv     = "MCPP_CHAT_E2E_BIN"
	e2eRequireEnv = "MCPP_CHAT_E2E_REQUIRE"
)

// Bounds. They only catch hangs: a session here takes a few seconds.
const (
	cliRunTimeout = 2 * time.Minute // one CLI process, from start to exit
	modelLifetime = 4 * time.Minute // one scripted model
	cliAwait      = time.Minute     // waiting for one thing a CLI does
)

// realClient returns the path of the named CLI, or skips (fails under
// MCPP_CHAT_E2E_REQUIRE=1) when it is not installed.
func realClient(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("real-client tests take minutes; not with -short")
	}
	path := filepath.Join(e2eBinDir(), name)
	if info, err := os.Stat(path); err != nil || info.IsDir() {
		missingClient(t, "%s is not installed at %s (run `make e2e-clients`, or set %s to the folder holding it)", name, path, e2eBinEnv)
	}
	return path
}

// e2eBinDir is the folder holding the real CLIs: MCPP_CHAT_E2E_BIN, else
// where `make e2e-clients` puts them.
func e2eBinDir() string {
	if dir := os.Getenv(e2eBinEnv); dir != "" {
		return dir
	}
	return filepath.Join(repoRoot(), ".cache", "e2e", "node_modules", ".bin")
}

// missingClient skips, or fails when the environment requires the real
// clients.
func missingClient(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv(e2eRequireEnv) == "1" {
		t.Fatalf(format+" — and %s=1 requires it", append(args, e2eRequireEnv)...)
	}
	t.Skipf(format, args...)
}

// cliEnv is the world's environment for a CLI: nothing of the developer's
// own model settings, plus extra.
func cliEnv(w *world, extra ...string) []string {
	var env []string
	for _, kv := range w.env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ANTHROPIC_") || strings.HasPrefix(name, "OPENAI_") || strings.HasPrefix(name, "CODEX_") || name == "TMUX" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// gitRepo makes a real git repository named name in the world (the CLIs
// run git in it) and returns its path, symlinks resolved, as the party's
// workspace is reported.
func gitRepo(t *testing.T, w *world, name string) string {
	t.Helper()
	path := filepath.Join(w.dir, "repos", name)
	cmd := exec.Command("git", "init", "-q", path)
	cmd.Env = w.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init %s: %v\n%s", path, err, out)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// startModel starts a scripted model that ends with the test; the test
// fails on anything that went wrong on the model's side. With
// MCPP_CHAT_E2E_DUMP=DIR every request it got is kept as a file in
// DIR/<test name>/ (docs/hooks.md shows what to look for).
func startModel(t *testing.T, steps ...scripted.Step) *scripted.Server {
	t.Helper()
	m, err := scripted.Start(scripted.Limits{Lifetime: modelLifetime}, steps...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		if err := m.Err(); err != nil {
			t.Error(err)
		}
		if dir := os.Getenv("MCPP_CHAT_E2E_DUMP"); dir != "" {
			dumpRequests(t, filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")), m)
		}
	})
	return m
}

// dumpRequests writes each request body m got into dir, numbered on from
// the files there (a test may run several models).
func dumpRequests(t *testing.T, dir string, m *scripted.Server) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Error(err)
		return
	}
	have, _ := os.ReadDir(dir)
	for i, e := range m.Exchanges() {
		name := fmt.Sprintf("%03d-%s-%s.json", len(have)+i+1, e.Kind, filepath.Base(e.Path))
		if err := os.WriteFile(filepath.Join(dir, name), e.Body, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// cliProcess is a CLI started by a test: its own process group, so that
// everything it starts (servers, hooks) is killed with it at the end.
type cliProcess struct {
	cmd    *exec.Cmd
	stdout *lines
	stderr *syncBuffer
	done   chan struct{}
	err    error // set when done is closed
}

// startCLI starts argv in dir with env; stdin may be nil.
func startCLI(t *testing.T, dir string, env []string, stdin io.Reader, argv ...string) *cliProcess {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliRunTimeout)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	p := &cliProcess{cmd: cmd, stdout: newLines(), stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", argv[0], err)
	}
	go func() {
		p.err = cmd.Wait()
		p.stdout.close()
		cancel()
		close(p.done)
	}()
	t.Cleanup(func() {
		// Whatever the group still holds (a hook the CLI left behind)
		// goes with it.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if stderr := strings.TrimSpace(p.stderr.String()); t.Failed() && stderr != "" {
			t.Logf("%s stderr:\n%s", filepath.Base(argv[0]), tail(stderr, 4000))
		}
	})
	return p
}

// wait waits for the process to exit and returns its error.
func (p *cliProcess) wait(t *testing.T) error {
	t.Helper()
	<-p.done
	return p.err
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// lines collects a process's output line by line and lets a test wait
// for a line.
type lines struct {
	mu      sync.Mutex
	partial []byte
	all     []string
	changed chan struct{}
	closed  bool
}

func newLines() *lines { return &lines{changed: make(chan struct{})} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.all = append(l.all, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *lines) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.all = append(l.all, string(l.partial))
		l.partial = nil
	}
	l.closed = true
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *lines) snapshot() ([]string, chan struct{}, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...), l.changed, l.closed
}

// await waits until ok holds for the lines so far; false if the output
// ended or the time ran out first.
func (l *lines) await(d time.Duration, ok func([]string) bool) bool {
	deadline := time.After(d)
	for {
		all, changed, closed := l.snapshot()
		if ok(all) {
			return true
		}
		if closed {
			return false
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// jsonLines decodes the lines that are JSON objects.
func jsonLines(all []string) []map[string]any {
	var out []map[string]any
	for _, line := range all {
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// awaitTurn waits until the model received a conversation turn for
// which ok holds, and returns it.
func awaitTurn(t *testing.T, m *scripted.Server, what string, ok func(*scripted.Turn) bool) *scripted.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliAwait)
	defer cancel()
	var found *scripted.Turn
	m.Await(ctx, func(log []scripted.Exchange) bool {
		found = findTurn(log, ok)
		return found != nil
	})
	if found == nil {
		t.Fatalf("the model never received %s (%d requests came)", what, len(m.Exchanges()))
	}
	return found
}

// findTurn is the first conversation turn in log for which ok holds.
func findTurn(log []scripted.Exchange, ok func(*scripted.Turn) bool) *scripted.Turn {
	for _, e := range log {
		if turn := e.Parsed(); turn != nil && (e.Kind == scripted.TurnRequest || e.Kind == scripted.Extra) && ok(turn) {
			return turn
		}
	}
	return nil
}

// firstTurn is the first conversation turn the model received.
func firstTurn(t *testing.T, m *scripted.Server) *scripted.Turn {
	t.Helper()
	all := turns(m)
	if len(all) == 0 {
		t.Fatalf("the model received no conversation turn (%d requests)", len(m.Exchanges()))
	}
	return all[0]
}

// turns are the conversation turns the model received.
func turns(m *scripted.Server) []*scripted.Turn {
	var out []*scripted.Turn
	for _, e := range m.Turns() {
		if turn := e.Parsed(); turn != nil {
			out = append(out, turn)
		}
	}
	return out
}

// results are every result of the MCP tool chat/tool in the turns the
// model received (a result is sent again with every later turn; each
// counts once).
func results(m *scripted.Server, tool string) []scripted.Result {
	var out []scripted.Result
	seen := map[string]bool{}
	for _, turn := range turns(m) {
		for _, r := range turn.Results {
			if r.IsMCP("chat", tool) && !seen[r.Text] {
				seen[r.Text] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// partWith is the first part of turn whose role is role and whose text
// starts with prefix, or nil.
func partWith(parts []scripted.Part, role, prefix string) *scripted.Part {
	for i, p := range parts {
		if p.Role == role && strings.HasPrefix(p.Text, prefix) {
			return &parts[i]
		}
	}
	return nil
}

// ourProcesses are the processes of our binaries (or a shell running
// one) that belong to the world: their command line names a binary of
// this test run and their environment holds the world's mark (its
// database). Claude Code starts hooks under /bin/sh -c, which counts too.
func ourProcesses(w *world) []string {
	var found []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid := d.Name()
		if pid[0] < '0' || pid[0] > '9' || pid == fmt.Sprint(os.Getpid()) {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(binDir+"/")) {
			continue
		}
		environ, _ := os.ReadFile("/proc/" + pid + "/environ")
		if mark := w.marker(); !bytes.Contains(environ, []byte("\x00"+mark+"\x00")) && !bytes.HasPrefix(environ, []byte(mark+"\x00")) {
			continue
		}
		found = append(found, pid+": "+strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return found
}

// killOurs kills what of ours a test leaves behind.
func killOurs(w *world) {
	for _, p := range ourProcesses(w) {
		var pid int
		fmt.Sscan(p, &pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// awaitNoneOfOurs waits (bounded) until none of our processes of the
// world runs, and fails naming those that stay; they are killed then.
func awaitNoneOfOurs(t *testing.T, w *world, after string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := ourProcesses(w)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("after %s, processes of ours are still running:\n%s", after, strings.Join(left, "\n"))
			for _, p := range left {
				var pid int
				fmt.Sscan(p, &pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// describe lists parts for a failure message: the messages (not the
// CLI's long system prompt), each cut short.
func describe(parts []scripted.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Role == "instructions" {
			continue
		}
		fmt.Fprintf(&b, "  %s%s: %.240q\n", p.Role, map[bool]string{true: " " + p.Tool}[p.Tool != ""], p.Text)
	}
	return b.String()
}
