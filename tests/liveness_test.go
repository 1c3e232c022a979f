package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Liveness: the tick file, chat_wait woken by the file system, and
// `mcpp-chat watch`. Bounds on waits are generous: they only fail a test
// when the thing never happens (the real figures are in the benchmark).
const liveGenerous = 10 * time.Second

func liveTickPath(w *world) string { return filepath.Join(filepath.Dir(w.db), ".tick") }

func liveReadTick(t *testing.T, w *world) string {
	t.Helper()
	data, err := os.ReadFile(liveTickPath(w))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

// liveTick is a parsed tick line.
type liveTick struct {
	at      time.Time
	channel string
	seq     int64
	author  string
}

func liveParseTick(line string) (liveTick, error) {
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		return liveTick{}, fmt.Errorf("want exactly one whole line, got %q", line)
	}
	f := strings.Fields(line)
	if len(f) != 4 {
		return liveTick{}, fmt.Errorf("want `<time> <channel> <seq> <author>`, got %q", line)
	}
	at, err := time.Parse(time.RFC3339Nano, f[0])
	if err != nil {
		return liveTick{}, fmt.Errorf("time in %q: %v", line, err)
	}
	seq, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return liveTick{}, fmt.Errorf("seq in %q: %v", line, err)
	}
	return liveTick{at: at, channel: f[1], seq: seq, author: f[3]}, nil
}

// liveWorld sets up alpha and beta sharing channel ops, with nothing
// unread for alpha.
func liveWorld(t *testing.T, extraEnv ...string) (w *world, alpha, beta string) {
	w = newWorld(t)
	w.env = append(w.env, extraEnv...)
	alpha, beta = w.repo("alpha"), w.repo("beta")
	w.mustCall(beta, "chat_whoami", nil, nil)
	w.mustCall(alpha, "chat_channel_new", map[string]any{"name": "ops", "parties": []string{"beta"}}, nil)
	return w, alpha, beta
}

// The tick names the newest row of every kind of write, and a failed call
// leaves it untouched.
func TestTickAfterEachKindOfWrite(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, b, c := w.repo("alpha"), w.repo("beta"), w.repo("gamma")
	w.mustCall(b, "chat_whoami", nil, nil)
	w.mustCall(c, "chat_whoami", nil, nil)
	if got := liveReadTick(t, w); got != "" {
		t.Fatalf("a call that changed no conversation wrote the tick: %q", got)
	}
	steps := []struct {
		name   string
		dir    string
		tool   string
		args   map[string]any
		seq    int64
		author string
	}{
		{"channel new", a, "chat_channel_new", map[string]any{"name": "ops", "parties": []string{"beta"}}, 0, "alpha"},
		{"say", a, "chat_say", map[string]any{"text": "hello"}, 1, "alpha"},
		{"ask", a, "chat_ask", map[string]any{"title": "Is the API frozen?", "body": "asking", "slug": "api"}, 2, "alpha"},
		{"ack", b, "chat_ack", map[string]any{"item": "api"}, 3, "beta"},
		{"reply", b, "chat_reply", map[string]any{"item": "api", "text": "yes"}, 4, "beta"},
		{"resolve", a, "chat_resolve", map[string]any{"item": "api"}, 5, "alpha"},
		{"prune-ok", a, "chat_prune_ok", map[string]any{"item": "api"}, 2, "alpha"},
		{"archive", b, "chat_prune_ok", map[string]any{"item": "api"}, 6, "beta"},
		{"join", c, "chat_channel_join", map[string]any{"name": "ops"}, 7, "gamma"},
		{"leave", c, "chat_channel_leave", map[string]any{"name": "ops"}, 8, "gamma"},
	}
	for _, s := range steps {
		before := liveReadTick(t, w)
		start := time.Now()
		w.mustCall(s.dir, s.tool, s.args, nil)
		line := liveReadTick(t, w)
		if line == before {
			t.Fatalf("%s: the tick did not change: %q", s.name, line)
		}
		tick, err := liveParseTick(line)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if tick.channel != "ops" || tick.seq != s.seq || tick.author != s.author {
			t.Fatalf("%s: tick %q, want ops %d %s", s.name, line, s.seq, s.author)
		}
		if tick.at.Before(start.Add(-time.Second)) || tick.at.After(time.Now().Add(time.Second)) {
			t.Fatalf("%s: tick time %v is not the time of the call", s.name, tick.at)
		}
	}
	info, err := os.Stat(liveTickPath(w))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("tick mode %v, want 0600", perm)
	}

	before := liveReadTick(t, w)
	failures := []struct {
		dir  string
		tool string
		args map[string]any
	}{
		{c, "chat_say", map[string]any{"text": "I left", "channel": "ops"}}, // not seated any more
		{a, "chat_say", map[string]any{"text": "hi", "channel": "nowhere"}}, // no such channel
		{a, "chat_ack", map[string]any{"item": "no-such-item"}},             // no such item
		{a, "chat_ask", map[string]any{"title": "t", "body": "b", "consumers": []string{"nobody"}}},
	}
	for _, f := range failures {
		if r := w.call(f.dir, f.tool, f.args); r.Success {
			t.Fatalf("%s %v should have failed", f.tool, f.args)
		}
		if after := liveReadTick(t, w); after != before {
			t.Fatalf("failed %s %v rewrote the tick: %q → %q", f.tool, f.args, before, after)
		}
	}
}

// A tick that cannot be written never fails the call: the message is stored.
func TestTickWriteFailureNeverFailsTheCall(t *testing.T) {
	t.Parallel()
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte("chat:\n  tick_file: no-such-folder/.tick\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, alpha, beta := liveWorld(t, "MCPP_CHAT_CONFIG="+config)
	r := w.call(alpha, "chat_say", map[string]any{"text": "stored anyway"})
	if !r.Success || r.Exit != 0 {
		t.Fatalf("say with an unwritable tick: %+v", r)
	}
	var inbox struct {
		UnreadTotal int `json:"unread_total"`
	}
	w.mustCall(beta, "chat_inbox", nil, &inbox)
	if inbox.UnreadTotal != 1 {
		t.Fatalf("beta has %d unread, want alpha's message", inbox.UnreadTotal)
	}
}

// Processes writing at once while a reader reads: never half a line.
func TestTickConcurrentWritersAcrossProcesses(t *testing.T) {
	t.Parallel()
	w, alpha, beta := liveWorld(t)
	gamma := w.repo("gamma")
	w.mustCall(gamma, "chat_channel_join", map[string]any{"name": "ops"}, nil)
	stop := make(chan struct{})
	var reads int
	var bad []string
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			data, err := os.ReadFile(liveTickPath(w))
			if err != nil {
				bad = append(bad, err.Error())
				continue
			}
			reads++
			if _, err := liveParseTick(string(data)); err != nil {
				bad = append(bad, err.Error())
			}
		}
	}()
	var wg sync.WaitGroup
	for _, dir := range []string{alpha, beta, gamma} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 6 {
				if r := w.call(dir, "chat_say", map[string]any{"text": fmt.Sprintf("message %d with some words", i), "channel": "ops"}); !r.Success {
					t.Errorf("say: %s", r.Error)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-readerDone
	if len(bad) > 0 {
		t.Fatalf("%d bad reads of %d, first: %s", len(bad), reads, bad[0])
	}
	tick, err := liveParseTick(liveReadTick(t, w))
	if err != nil {
		t.Fatal(err)
	}
	var all struct {
		Messages []struct {
			Seq int64 `json:"seq"`
		} `json:"messages"`
	}
	w.mustCall(alpha, "chat_read", map[string]any{"peek": true, "since": 0, "limit": 500}, &all)
	if n := len(all.Messages); n == 0 || all.Messages[n-1].Seq != tick.seq || tick.seq != 19 {
		t.Fatalf("final tick %+v does not name the newest message (join + 18 says: seq 19)", tick)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(w.db), ".tick.*")); len(leftovers) > 0 {
		t.Fatalf("temporary tick files left: %v", leftovers)
	}
}

// lineReader collects a process's stdout lines.
func lineReader(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// nextLine waits for the next line; ok is false when none came in time.
func nextLine(lines <-chan string, d time.Duration) (string, bool) {
	select {
	case l, ok := <-lines:
		return l, ok
	case <-time.After(d):
		return "", false
	}
}

// stopProcess signals the process and checks that it exits with 0.
func stopProcess(t *testing.T, cmd *exec.Cmd, sig os.Signal) {
	t.Helper()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after %v: %v, want exit status 0", sig, err)
		}
	case <-time.After(liveGenerous):
		cmd.Process.Kill()
		t.Fatalf("the process did not exit on %v", sig)
	}
}

func TestTickSeenByTailF(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tail"); err != nil {
		t.Skip("no tail on this machine")
	}
	w, alpha, _ := liveWorld(t)
	tail := exec.Command("tail", "-F", "-n", "1", liveTickPath(w))
	lines := lineReader(t, tail)
	t.Cleanup(func() { tail.Process.Kill(); tail.Wait() })
	if l, ok := nextLine(lines, liveGenerous); !ok || !strings.Contains(l, " ops 0 alpha") {
		t.Fatalf("tail -F first printed %q, want the channel's creation", l)
	}
	for i := 1; i <= 3; i++ {
		w.mustCall(alpha, "chat_say", map[string]any{"text": fmt.Sprintf("number %d", i)}, nil)
		want := fmt.Sprintf(" ops %d alpha", i)
		l, ok := nextLine(lines, liveGenerous)
		if !ok || !strings.HasSuffix(l, want) {
			t.Fatalf("tail -F printed %q, want a line ending %q", l, want)
		}
	}
}

// The polling loop README.md documents.
const pollingLoop = `last=$(cat "$TICK" 2>/dev/null)
while sleep 1; do
  now=$(cat "$TICK" 2>/dev/null)
  if [ "$now" != "$last" ]; then last=$now; echo "$now"; fi
done`

func TestTickSeenByPollingLoop(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil || !strings.Contains(string(readme), pollingLoop) {
		t.Fatalf("README.md must show the polling loop this test runs (%v)", err)
	}
	w, alpha, _ := liveWorld(t)
	loop := exec.Command("sh", "-c", pollingLoop)
	loop.Env = append(os.Environ(), "TICK="+liveTickPath(w))
	lines := lineReader(t, loop)
	t.Cleanup(func() { loop.Process.Kill(); loop.Wait() })
	// A loop that started after the first say took it as its current
	// line, and prints the next one.
	for said := 1; said <= 3; said++ {
		w.mustCall(alpha, "chat_say", map[string]any{"text": "polled"}, nil)
		l, ok := nextLine(lines, 3*time.Second)
		if !ok {
			continue
		}
		for seq := 1; seq <= said; seq++ {
			if strings.HasSuffix(l, fmt.Sprintf(" ops %d alpha", seq)) {
				return
			}
		}
		t.Fatalf("the polling loop printed %q, want the tick of one of the %d says", l, said)
	}
	t.Fatal("the polling loop printed nothing")
}

// waitOut is chat_wait's result.
type waitOut struct {
	Arrived       bool    `json:"arrived"`
	WaitedSeconds float64 `json:"waited_seconds"`
	UnreadTotal   int     `json:"unread_total"`
	display       string
	err           string
}

func callWait(t *testing.T, s *mcp.ClientSession, args map[string]any) waitOut {
	t.Helper()
	var out waitOut
	out.display, out.err = toolCall(t, s, "chat_wait", args, &out)
	if out.err != "" {
		t.Fatalf("chat_wait %v: %s", args, out.err)
	}
	return out
}

// startWait runs chat_wait in the background.
func startWait(s *mcp.ClientSession, args map[string]any) <-chan waitOut {
	done := make(chan waitOut, 1)
	go func() {
		var out waitOut
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "chat_wait", Arguments: args})
		switch {
		case err != nil:
			out.err = err.Error()
		case res.IsError:
			out.err = contentText(res, 0)
		default:
			out.display = contentText(res, 0)
			if err := json.Unmarshal([]byte(contentText(res, 1)), &out); err != nil {
				out.err = err.Error()
			}
		}
		done <- out
	}()
	return done
}

func awaitWait(t *testing.T, done <-chan waitOut, what string) waitOut {
	t.Helper()
	select {
	case out := <-done:
		if out.err != "" {
			t.Fatalf("%s: %s", what, out.err)
		}
		return out
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: chat_wait never answered", what)
	}
	return waitOut{}
}

// stillWaiting asserts the wait has not answered during d.
func stillWaiting(t *testing.T, done <-chan waitOut, d time.Duration, what string) {
	t.Helper()
	select {
	case out := <-done:
		t.Fatalf("%s: chat_wait answered %+v, want it still waiting", what, out)
	case <-time.After(d):
	}
}

func TestWaitReturnsAtOnceWhenWorkPending(t *testing.T) {
	t.Parallel()
	w, alpha, beta := liveWorld(t)
	w.mustCall(beta, "chat_ask", map[string]any{"title": "Need your ack", "body": "please"}, nil)
	s := w.serve(alpha)
	out := callWait(t, s, map[string]any{"seconds": 20})
	if !out.Arrived || out.WaitedSeconds > 5 || !strings.HasPrefix(out.display, "**Already waiting on you**") {
		t.Fatalf("with an item waiting: %+v, want an answer at once that says it was already there", out)
	}
	// Reading clears the unread message, but the ask still needs alpha's ack.
	toolCall(t, s, "chat_read", nil, nil)
	if out := callWait(t, s, map[string]any{"seconds": 20}); !out.Arrived || out.WaitedSeconds > 5 {
		t.Fatalf("with an ack pending: %+v, want an answer at once", out)
	}
}

func TestWaitWakesOnPeerWriteFromAnotherProcess(t *testing.T) {
	t.Parallel()
	w, alpha, beta := liveWorld(t)
	s := w.serve(alpha)
	done := startWait(s, map[string]any{"seconds": 20})
	stillWaiting(t, done, 500*time.Millisecond, "nothing written yet")
	w.mustCall(beta, "chat_say", map[string]any{"text": "are you there?"}, nil)
	out := awaitWait(t, done, "after beta's say")
	if !out.Arrived || out.UnreadTotal != 1 || out.WaitedSeconds >= 15 || !strings.HasPrefix(out.display, "**Something arrived.**") {
		t.Fatalf("after beta's say: %+v", out)
	}
}

func TestWaitOnlyForItsChannel(t *testing.T) {
	t.Parallel()
	w, alpha, beta := liveWorld(t)
	w.mustCall(alpha, "chat_channel_new", map[string]any{"name": "dev", "parties": []string{"beta"}}, nil)
	s := w.serve(alpha)
	done := startWait(s, map[string]any{"seconds": 20, "channel": "ops"})
	stillWaiting(t, done, 300*time.Millisecond, "nothing written yet")
	w.mustCall(beta, "chat_say", map[string]any{"text": "for dev", "channel": "dev"}, nil)
	w.mustCall(beta, "chat_ask", map[string]any{"title": "A dev item", "body": "ack it", "channel": "dev"}, nil)
	stillWaiting(t, done, 2*time.Second, "writes in another channel")
	w.mustCall(beta, "chat_say", map[string]any{"text": "for ops", "channel": "ops"}, nil)
	if out := awaitWait(t, done, "beta's say in ops"); !out.Arrived || out.WaitedSeconds < 2 {
		t.Fatalf("wait on ops: %+v", out)
	}
	// dev has news too: a wait on it, or on everything, answers at once.
	for _, args := range []map[string]any{{"seconds": 20, "channel": "dev"}, {"seconds": 20}} {
		if out := callWait(t, s, args); !out.Arrived || out.WaitedSeconds > 5 {
			t.Fatalf("wait %v: %+v, want an answer at once", args, out)
		}
	}
	if _, e := toolCall(t, s, "chat_wait", map[string]any{"seconds": 1, "channel": "elsewhere"}, nil); e == "" {
		t.Fatal("a wait on a channel alpha is not in should be refused")
	}
}

func TestWaitClamps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		config  string
		env     string
		seconds int
	}{
		{"wait_max_seconds", "chat:\n  wait_max_seconds: 2\n", "", 2},
		{"MCPP_TIMEOUT_SECONDS", "", "MCPP_TIMEOUT_SECONDS=8", 3},
		{"MCPP_TIMEOUT_SECONDS below 6", "", "MCPP_TIMEOUT_SECONDS=4", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			if c.config != "" {
				w.configure(c.config)
			}
			var extra []string
			if c.env != "" {
				extra = append(extra, c.env)
			}
			s := w.serve(w.repo("alpha"), extra...)
			out := callWait(t, s, map[string]any{"seconds": 20})
			want := fmt.Sprintf("**Nothing arrived in %ds.**", c.seconds)
			if out.Arrived || !strings.HasPrefix(out.display, want) {
				t.Fatalf("got %+v, want %q", out, want)
			}
			if out.WaitedSeconds < float64(c.seconds)-0.5 || out.WaitedSeconds > float64(c.seconds)+5 {
				t.Fatalf("waited %.3fs, want about %ds", out.WaitedSeconds, c.seconds)
			}
		})
	}
}

// TestWaitSendsProgress: a wait whose request carries a progress token
// sends progress notifications through the transport (every
// chat.wait_progress_ms, short here; the interval itself is
// TestWaitProgressEveryInterval's).
func TestWaitSendsProgress(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.configure("chat:\n  wait_progress_ms: 100\n")
	var mu sync.Mutex
	var progress []string
	client := mcp.NewClient(&mcp.Implementation{Name: "tests", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
		},
	})
	s := liveConnect(t, w, w.repo("alpha"), client, nil)
	params := &mcp.CallToolParams{Name: "chat_wait", Arguments: map[string]any{"seconds": 1}}
	params.SetProgressToken("wait-1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) == 0 {
		t.Fatal("a 1 s wait with a progress token and progress every 100 ms sent no progress notification")
	}
}

// liveConnect starts `mcpp-chat serve` in dir for client, through tap when
// given.
func liveConnect(t *testing.T, w *world, dir string, client *mcp.Client, tap *liveTap, extraEnv ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(chatBin, "serve")
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, w.env...), extraEnv...)
	cmd.Stderr = os.Stderr
	var transport mcp.Transport = &mcp.CommandTransport{Command: cmd}
	if tap != nil {
		transport = &liveTapTransport{inner: transport, tap: tap}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// liveTap records the JSON-RPC messages between client and server.
type liveTap struct {
	mu       sync.Mutex
	fromSrv  []liveTapped
	toServer []liveTapped
}

type liveTapped struct {
	at  time.Time
	msg jsonrpc.Message
}

type liveTapTransport struct {
	inner mcp.Transport
	tap   *liveTap
}

func (t *liveTapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &liveTapConn{Connection: c, tap: t.tap}, nil
}

type liveTapConn struct {
	mcp.Connection
	tap *liveTap
}

func (c *liveTapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		c.tap.mu.Lock()
		c.tap.fromSrv = append(c.tap.fromSrv, liveTapped{time.Now(), m})
		c.tap.mu.Unlock()
	}
	return m, err
}

func (c *liveTapConn) Write(ctx context.Context, m jsonrpc.Message) error {
	c.tap.mu.Lock()
	c.tap.toServer = append(c.tap.toServer, liveTapped{time.Now(), m})
	c.tap.mu.Unlock()
	return c.Connection.Write(ctx, m)
}

// find returns the first recorded message matching ok, polling until the
// deadline.
func (t *liveTap) find(list *[]liveTapped, ok func(jsonrpc.Message) bool, d time.Duration) (liveTapped, bool) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		t.mu.Lock()
		for _, m := range *list {
			if ok(m.msg) {
				t.mu.Unlock()
				return m, true
			}
		}
		t.mu.Unlock()
	}
	return liveTapped{}, false
}

// Cancelling the client's call sends notifications/cancelled; the server
// ends the wait, sends no answer to it (MCP: a cancelled request gets no
// response) and answers the next request.
func TestWaitCancelled(t *testing.T) {
	t.Parallel()
	w, alpha, _ := liveWorld(t)
	w.configure("chat:\n  wait_progress_ms: 50\n") // its first progress says the wait is under way
	tap := &liveTap{}
	s := liveConnect(t, w, alpha, mcp.NewClient(&mcp.Implementation{Name: "tests", Version: "1"}, nil), tap)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "chat_wait", Arguments: map[string]any{"seconds": 20}}
		params.SetProgressToken("wait-1")
		_, err := s.CallTool(ctx, params)
		errc <- err
	}()
	call, ok := tap.find(&tap.toServer, func(m jsonrpc.Message) bool {
		r, ok := m.(*jsonrpc.Request)
		return ok && r.Method == "tools/call" && strings.Contains(string(r.Params), "chat_wait")
	}, liveGenerous)
	if !ok {
		t.Fatal("the wait was never sent")
	}
	id := call.msg.(*jsonrpc.Request).ID
	if _, ok := tap.find(&tap.fromSrv, func(m jsonrpc.Message) bool {
		r, ok := m.(*jsonrpc.Request)
		return ok && r.Method == "notifications/progress"
	}, liveGenerous); !ok {
		t.Fatal("the wait never said it was under way")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	if _, ok := tap.find(&tap.toServer, func(m jsonrpc.Message) bool {
		r, ok := m.(*jsonrpc.Request)
		if !ok || r.Method != "notifications/cancelled" {
			return false
		}
		var p struct {
			RequestID any `json:"requestId"`
		}
		return json.Unmarshal(r.Params, &p) == nil && fmt.Sprint(p.RequestID) == fmt.Sprint(id.Raw())
	}, liveGenerous); !ok {
		t.Fatal("the client sent no notifications/cancelled")
	}
	toolCall(t, s, "chat_inbox", nil, nil)
	if answer, ok := tap.find(&tap.fromSrv, func(m jsonrpc.Message) bool {
		r, ok := m.(*jsonrpc.Response)
		return ok && r.ID == id
	}, time.Second); ok {
		t.Fatalf("the cancelled call got a response: %+v", answer.msg)
	}
}

func TestWaitWakesWithTickDisabled(t *testing.T) {
	t.Parallel()
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte("chat:\n  tick_file: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, alpha, beta := liveWorld(t, "MCPP_CHAT_CONFIG="+config)
	s := w.serve(alpha)
	done := startWait(s, map[string]any{"seconds": 20})
	stillWaiting(t, done, 500*time.Millisecond, "nothing written yet")
	w.mustCall(beta, "chat_say", map[string]any{"text": "no tick here"}, nil)
	if out := awaitWait(t, done, "beta's say"); !out.Arrived || out.WaitedSeconds >= 15 {
		t.Fatalf("with the tick disabled: %+v", out)
	}
	if _, err := os.Stat(liveTickPath(w)); !os.IsNotExist(err) {
		t.Fatalf("tick_file: \"\" still wrote %s (%v)", liveTickPath(w), err)
	}
}

// startWatch runs `mcpp-chat watch ARGS` in dir.
func startWatch(t *testing.T, w *world, dir string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(chatBin, append([]string{"watch"}, args...)...)
	cmd.Dir = dir
	cmd.Env = w.env
	banner := &firstLine{out: os.Stderr, seen: make(chan struct{})}
	cmd.Stderr = banner
	lines := lineReader(t, cmd)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	// The banner comes once the watch notes where things are: every
	// change after it is reported.
	select {
	case <-banner.seen:
	case <-time.After(liveGenerous):
		t.Fatal("the watch printed no banner on stderr")
	}
	return cmd, lines
}

// firstLine passes what is written to out, and closes seen once a whole
// line has gone through.
type firstLine struct {
	out  io.Writer
	seen chan struct{}
	once sync.Once
}

func (f *firstLine) Write(p []byte) (int, error) {
	n, err := f.out.Write(p)
	if bytes.IndexByte(p, '\n') >= 0 {
		f.once.Do(func() { close(f.seen) })
	}
	return n, err
}

// primeWatch writes from dir until the watch prints a line containing
// "probe", so that later writes are surely after it started.
func primeWatch(t *testing.T, w *world, dir string, lines <-chan string) {
	t.Helper()
	for i := range 10 {
		w.mustCall(dir, "chat_say", map[string]any{"text": fmt.Sprintf("probe %d", i), "channel": "ops"}, nil)
		for {
			l, ok := nextLine(lines, 2*time.Second)
			if !ok {
				break
			}
			if strings.Contains(l, "probe") || strings.HasSuffix(l, " alpha") || strings.HasSuffix(l, " beta") {
				return
			}
		}
	}
	t.Fatal("the watch never printed a line")
}

func TestWatchMine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	alpha, beta, gamma := w.repo("alpha"), w.repo("beta"), w.repo("gamma")
	// Started before the database exists: it waits for it.
	watch, lines := startWatch(t, w, alpha, "--mine")
	w.mustCall(beta, "chat_whoami", nil, nil)
	w.mustCall(gamma, "chat_whoami", nil, nil)
	w.mustCall(alpha, "chat_channel_new", map[string]any{"name": "ops", "parties": []string{"beta"}}, nil)
	w.mustCall(beta, "chat_channel_new", map[string]any{"name": "side", "parties": []string{"gamma"}}, nil)
	primeWatch(t, w, beta, lines)

	w.mustCall(beta, "chat_ask", map[string]any{"title": "Deploy window tonight?", "body": "We plan 22:00 UTC.", "channel": "ops"}, nil)
	l, ok := nextLine(lines, liveGenerous)
	for ok && strings.Contains(l, "probe") { // a late probe
		l, ok = nextLine(lines, liveGenerous)
	}
	f := strings.Fields(l)
	if !ok || len(f) < 5 || f[1] != "ops" || f[3] != "beta" || !strings.HasSuffix(l, "ask: Deploy window tonight?") {
		t.Fatalf("watch --mine printed %q, want beta's ask in ops", l)
	}
	if _, err := time.Parse(time.RFC3339Nano, f[0]); err != nil {
		t.Fatalf("line %q does not start with a time: %v", l, err)
	}
	w.mustCall(alpha, "chat_say", map[string]any{"text": "my own words", "channel": "ops"}, nil)
	w.mustCall(gamma, "chat_say", map[string]any{"text": "elsewhere", "channel": "side"}, nil)
	w.mustCall(beta, "chat_say", map[string]any{"text": "marker: and now something for you", "channel": "ops"}, nil)
	l, ok = nextLine(lines, liveGenerous)
	if !ok || !strings.Contains(l, " ops ") || !strings.HasSuffix(l, "beta say: marker: and now something for you") {
		t.Fatalf("after alpha's own post and gamma's post in side, watch --mine printed %q, want only beta's marker", l)
	}
	stopProcess(t, watch, syscall.SIGINT)
}

func TestWatchPrintsTickLines(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	alpha, beta := w.repo("alpha"), w.repo("beta")
	watch, lines := startWatch(t, w, alpha)
	w.mustCall(beta, "chat_whoami", nil, nil)
	w.mustCall(alpha, "chat_channel_new", map[string]any{"name": "ops", "parties": []string{"beta"}}, nil)
	primeWatch(t, w, alpha, lines)
	w.mustCall(beta, "chat_say", map[string]any{"text": "hello"}, nil)
	for {
		l, ok := nextLine(lines, liveGenerous)
		if !ok {
			t.Fatal("watch printed no line for beta's say")
		}
		if strings.HasSuffix(l, " beta") {
			if l+"\n" != liveReadTick(t, w) {
				t.Fatalf("watch printed %q, want the tick line %q", l, liveReadTick(t, w))
			}
			break
		}
	}
	stopProcess(t, watch, syscall.SIGTERM)
}

func TestWatchExec(t *testing.T) {
	t.Parallel()
	w, alpha, beta := liveWorld(t)
	out := filepath.Join(t.TempDir(), "events")
	watch, lines := startWatch(t, w, alpha, "--exec", `printf '%s\n' "$MCPP_CHAT_EVENT" >> "`+out+`"`)
	for i := range 10 {
		w.mustCall(beta, "chat_say", map[string]any{"text": fmt.Sprintf("event %d", i)}, nil)
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			data, _ := os.ReadFile(out)
			if strings.Contains(string(data), " ops ") && strings.Contains(string(data), " beta\n") {
				if l, ok := nextLine(lines, 100*time.Millisecond); ok {
					t.Fatalf("with --exec, watch printed %q itself", l)
				}
				stopProcess(t, watch, syscall.SIGTERM)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatal("--exec never ran with MCPP_CHAT_EVENT set")
}

func TestWatchWithTickDisabled(t *testing.T) {
	t.Parallel()
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte("chat:\n  tick_file: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, alpha, beta := liveWorld(t, "MCPP_CHAT_CONFIG="+config)
	watch, lines := startWatch(t, w, alpha)
	primeWatch(t, w, alpha, lines)
	w.mustCall(beta, "chat_say", map[string]any{"text": "from the database"}, nil)
	l, ok := nextLine(lines, liveGenerous)
	for ok && strings.HasSuffix(l, " alpha") { // a late probe
		l, ok = nextLine(lines, liveGenerous)
	}
	if f := strings.Fields(l); !ok || len(f) != 4 || f[1] != "ops" || f[3] != "beta" {
		t.Fatalf("watch without a tick file printed %q, want `<time> ops <seq> beta`", l)
	}
	stopProcess(t, watch, syscall.SIGINT)
}
