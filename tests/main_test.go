// Package tests holds the cross-process tests: they build the real
// binaries once and drive them as a user's client would (a shell running
// `mcpp-chat call`, an MCP client over stdio, Claude Code running the hook).
package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/tests/sandbox"
)

// callTimeout bounds one call in these tests. It only catches hangs, so it
// is generous: a loaded virtual machine can stall a server that has
// finished its call for a minute and more (a small write still in the
// kernel), which is no hang of ours. A real hang still fails, with the
// server's goroutines (stuckAt).
const callTimeout = 5 * time.Minute

// Paths of the binaries built for this test run.
var (
	chatBin string
	hookBin string
	binDir  string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The edit loop: the tests that need no binary run; newWorld skips
		// the others, each saying why.
		os.Exit(m.Run())
	}
	os.Exit(buildAndRun(m))
}

// skipShort skips an end-to-end test under -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end to end: builds and drives the binaries as processes (seconds each); run without -short")
	}
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mcpp-chat-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	chatBin = filepath.Join(dir, "mcpp-chat")
	if err := build("./cmd/mcpp-chat", chatBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := os.Stat(filepath.Join(repoRoot(), "cmd", "mcpp-chat-hook")); err == nil {
		hookBin = filepath.Join(dir, "mcpp-chat-hook")
		if err := build("./cmd/mcpp-chat-hook", hookBin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if !raceBinaries {
		return pgtest.Main(m)
	}
	// A child that finds a race reports it and exits 66 at the end, which a
	// test may not look at (a server it stops): collect the reports instead.
	races := filepath.Join(dir, "race")
	os.Setenv("GORACE", "log_path="+races)
	code := pgtest.Main(m)
	reports, _ := filepath.Glob(races + ".*")
	for _, r := range reports {
		data, _ := os.ReadFile(r)
		fmt.Fprintf(os.Stderr, "a child process found a data race:\n%s\n", data)
		code = 1
	}
	return code
}

// raceBinaries is set when the tests themselves run with -race (race_test.go).
var raceBinaries bool

func build(pkg, out string) error {
	args, cgo := []string{"build", "-o", out}, "CGO_ENABLED=0" // as `make build` does
	if raceBinaries {
		args, cgo = append(args, "-race"), "CGO_ENABLED=1" // the race detector needs cgo
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), cgo)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
	}
	return nil
}

// repoRoot is the checkout (tests run in its tests/ folder).
func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}

// world is one isolated install: its own database, config, HOME and
// repositories, so a test never touches the user's files.
type world struct {
	t    *testing.T
	dir  string
	db   string
	home string
	env  []string
	// mark is the environment entry that tells the world's processes
	// apart (ourProcesses); "" means MCPP_CHAT_DB=db.
	mark string
}

// marker is the world's mark.
func (w *world) marker() string {
	if w.mark != "" {
		return w.mark
	}
	return "MCPP_CHAT_DB=" + w.db
}

func newWorld(t *testing.T) *world {
	t.Helper()
	skipShort(t)
	dir := t.TempDir()
	w := &world{t: t, dir: dir, db: filepath.Join(dir, "data", "chat.db"), home: filepath.Join(dir, "home")}
	if err := os.MkdirAll(w.home, 0o700); err != nil {
		t.Fatal(err)
	}
	w.env = sandbox.Env(
		"MCPP_CHAT_DB="+w.db,
		"MCPP_CHAT_HOME="+filepath.Join(dir, "module"),
		"HOME="+w.home,
		"XDG_DATA_HOME="+filepath.Join(w.home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(w.home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(w.home, ".cache"),
	)
	return w
}

// configure gives the world's processes a config file with the given YAML.
func (w *world) configure(yaml string) {
	w.t.Helper()
	path := filepath.Join(w.dir, "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		w.t.Fatal(err)
	}
	w.env = append(w.env, "MCPP_CHAT_CONFIG="+path)
}

// repo makes a git repository folder (a .git directory is enough for
// identity) named name under the world and returns its path.
func (w *world) repo(name string) string {
	w.t.Helper()
	path := filepath.Join(w.dir, "repos", name)
	if err := os.MkdirAll(filepath.Join(path, ".git"), 0o755); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// callResult is the JSON object `mcpp-chat call` prints.
type callResult struct {
	Success bool            `json:"success"`
	Result  json.RawMessage `json:"result"`
	Display string          `json:"display"`
	Error   string          `json:"error"`
	Exit    int             `json:"-"`
}

// seatedPair makes the repositories mesh-gw and node-dash and seats them
// in gw--dash, each call its own process; it returns their folders.
func (w *world) seatedPair() (gw, dash string) {
	w.t.Helper()
	gw, dash = w.repo("mesh-gw"), w.repo("node-dash")
	w.mustCall(dash, "chat_whoami", nil, nil)
	w.mustCall(gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)
	return gw, dash
}

// call runs `mcpp-chat call TOOL ARGS` with cwd = dir (see tryCall).
func (w *world) call(dir, tool string, args any) callResult {
	w.t.Helper()
	r, err := w.tryCall(dir, tool, args)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// tryCall is w.call for goroutines: it reports problems instead of
// failing the test.
func (w *world) tryCall(dir, tool string, args any) (callResult, error) {
	data, err := json.Marshal(args)
	if err != nil {
		return callResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, chatBin, "call", tool, "-")
	cmd.Dir = dir
	cmd.Env = w.env
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var r callResult
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		return r, fmt.Errorf("call %s: not one JSON object (%v): %q stderr %q", tool, err, out, strings.TrimSpace(stderr.String()))
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Exit = ee.ExitCode()
	}
	return r, nil
}

// mustCall is call that fails the test on a tool error and decodes the result.
func (w *world) mustCall(dir, tool string, args any, into any) callResult {
	w.t.Helper()
	r := w.call(dir, tool, args)
	if !r.Success {
		w.t.Fatalf("%s %v from %s: %s", tool, args, dir, r.Error)
	}
	if into != nil {
		if err := json.Unmarshal(r.Result, into); err != nil {
			w.t.Fatalf("%s result: %v", tool, err)
		}
	}
	return r
}

// serve starts `mcpp-chat serve` with cwd = dir, as Claude Code would, and
// connects an MCP client to it.
func (w *world) serve(dir string, extraEnv ...string) *mcp.ClientSession {
	w.t.Helper()
	cmd := exec.Command(chatBin, "serve")
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, w.env...), extraEnv...)
	stderr := &syncBuffer{}
	cmd.Stderr = io.MultiWriter(os.Stderr, stderr)
	client := mcp.NewClient(&mcp.Implementation{Name: "tests", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		w.t.Fatalf("connect to serve in %s: %v", dir, err)
	}
	w.t.Cleanup(func() { session.Close() })
	servers.Store(session, &served{cmd: cmd, stderr: stderr})
	return session
}

// servers maps each MCP session to its serve process, so that a call that
// hangs can make the server show where it is stuck.
var servers sync.Map // *mcp.ClientSession → *served

type served struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the process's stderr copier and
// the test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stuckAt makes the serve process behind s print every goroutine's stack
// (the Go runtime's answer to SIGQUIT, which also ends it) and returns
// the goroutines that are in this module's code: where a hung call waits.
func stuckAt(s *mcp.ClientSession) string {
	v, ok := servers.Load(s)
	if !ok || v.(*served).cmd.Process == nil {
		return ""
	}
	sv := v.(*served)
	sv.cmd.Process.Signal(syscall.SIGQUIT)
	// The dump has no end mark, but it ends the process. Once it has
	// ended, closing the session waits for the last of its stderr (the
	// transport's Wait); closed before, serve could end on its stdin's
	// end without the dump.
	for deadline := time.Now().Add(procBound); processLive(sv.cmd.Process.Pid) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	s.Close()
	var ours []string
	for _, g := range strings.Split(sv.stderr.String(), "\n\n") {
		if strings.Contains(g, "mcpp-chat/") {
			ours = append(ours, g)
		}
	}
	return strings.Join(ours, "\n\n")
}

// stuckAt's dump is whole, and shows where serve's goroutines are.
func TestStuckAtShowsServesGoroutines(t *testing.T) {
	skipShort(t)
	w := newWorld(t)
	s := w.serve(w.repo("mesh-gw"))
	toolCall(t, s, "chat_whoami", nil, nil)
	stacks := stuckAt(s)
	if !strings.Contains(stacks, "\nmain.main()") {
		t.Fatalf("stuckAt showed no main goroutine of serve:\n%s", stacks)
	}
}

// toolCall calls a tool over MCP and returns the result JSON (second text
// content) decoded into into, or the error text of an isError result.
func toolCall(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any, into any) (display string, errText string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			t.Fatalf("%s: no answer in time (%v); the server's goroutines in our code:\n%s", tool, err, stuckAt(s))
		}
		t.Fatalf("%s: JSON-RPC error %v", tool, err)
	}
	if res.IsError {
		return "", contentText(res, 0)
	}
	if len(res.Content) != 2 {
		t.Fatalf("%s: want 2 contents (display, JSON), got %d", tool, len(res.Content))
	}
	if into != nil {
		if err := json.Unmarshal([]byte(contentText(res, 1)), into); err != nil {
			t.Fatalf("%s: result JSON: %v", tool, err)
		}
	}
	return contentText(res, 0), ""
}

func contentText(res *mcp.CallToolResult, i int) string {
	if i >= len(res.Content) {
		return ""
	}
	if tc, ok := res.Content[i].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
