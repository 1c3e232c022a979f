package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// streamReply is one line of `call --stream`'s output.
type streamReply struct {
	Ready   *bool           `json:"ready"`
	ID      any             `json:"id"`
	Success bool            `json:"success"`
	Result  json.RawMessage `json:"result"`
	Display string          `json:"display"`
	Error   string          `json:"error"`
}

// streamWorker is `mcpp-chat call --stream` as mcpptool.py runs it.
type streamWorker struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies chan streamReply // closed at the end of its output
	exit    chan error       // its exit, after the end of its output
}

func startStream(t *testing.T, w *world, dir string, extraEnv ...string) *streamWorker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, chatBin, "call", "--workspace", dir, "--stream")
	cmd.Env = append(append([]string{}, w.env...), extraEnv...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &streamWorker{t: t, cmd: cmd, stdin: stdin, replies: make(chan streamReply, 100), exit: make(chan error, 1)}
	go func() {
		defer func() { s.exit <- cmd.Wait() }() // after every read, as exec asks
		defer close(s.replies)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r streamReply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("not JSON: %.200s", sc.Text())
				continue
			}
			s.replies <- r
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		for range s.replies {
		}
	})
	return s
}

// exited returns the worker's exit once it ends its output; the test
// fails if that takes longer than limit.
func (s *streamWorker) exited(limit time.Duration) error {
	s.t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case _, ok := <-s.replies:
			if !ok {
				return <-s.exit
			}
		case <-deadline:
			s.t.Fatalf("still running after %v", limit)
		}
	}
}

func (s *streamWorker) send(lines ...string) {
	s.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(s.stdin, l+"\n"); err != nil {
			s.t.Fatal(err)
		}
	}
}

func (s *streamWorker) next() streamReply {
	s.t.Helper()
	select {
	case r, ok := <-s.replies:
		if !ok {
			s.t.Fatal("the worker's output ended")
		}
		return r
	case <-time.After(30 * time.Second):
		s.t.Fatal("no reply within 30 s")
	}
	return streamReply{}
}

func TestCallStreamAnswersEachLineWithItsID(t *testing.T) {
	w := newWorld(t)
	dir := w.repo("mesh-gw")
	s := startStream(t, w, dir)
	if r := s.next(); r.Ready == nil || !*r.Ready {
		t.Fatalf("first line %+v, want {\"ready\": true}", r)
	}
	s.send(`{"id": 7, "tool": "chat_whoami"}`, `not json`, `{"id": "x", "tool": "chat_nope", "arguments": {}}`, `{"id": 9, "tool": "chat_say", "arguments": {"text": "hi"}}`)
	got := map[string]streamReply{}
	for range 4 {
		r := s.next()
		id, _ := json.Marshal(r.ID)
		got[string(id)] = r
	}
	var me struct {
		Me string `json:"me"`
	}
	if r := got["7"]; !r.Success || json.Unmarshal(r.Result, &me) != nil || me.Me != "mesh-gw" || r.Display == "" {
		t.Errorf("whoami: %+v", r)
	}
	if r := got["null"]; r.Success || !strings.Contains(r.Error, "one JSON object") {
		t.Errorf("a bad line: %+v", r)
	}
	if r := got[`"x"`]; r.Success || !strings.Contains(r.Error, "Unknown tool") {
		t.Errorf("an unknown tool: %+v", r)
	}
	if r := got["9"]; r.Success || !strings.Contains(r.Error, "not in any channel") {
		t.Errorf("a tool error: %+v", r)
	}
}

// A chat_wait holds up no call sent after it; at the end of stdin the
// worker answers it at once, then exits.
func TestCallStreamWaitsConcurrentlyAndAnswersAllAtEOF(t *testing.T) {
	w := newWorld(t)
	gw, _ := w.seatedPair()
	s := startStream(t, w, gw)
	s.next() // ready
	s.send(`{"id": 1, "tool": "chat_wait", "arguments": {"seconds": 20}}`, `{"id": 2, "tool": "chat_whoami"}`)
	if r := s.next(); r.ID != float64(2) {
		t.Fatalf("first answer %v, want the whoami's (2): the wait held it up", r.ID)
	}
	start := time.Now()
	s.stdin.Close()
	var waited struct {
		Arrived bool `json:"arrived"`
	}
	if r := s.next(); r.ID != float64(1) || !r.Success || json.Unmarshal(r.Result, &waited) != nil || waited.Arrived {
		t.Fatalf("after EOF: %+v, want the wait's answer, nothing arrived", r)
	}
	if err := s.exited(10 * time.Second); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the worker waited out the chat_wait after EOF (%v)", took)
	}
}

func TestCallStreamSIGTERMEndsAWait(t *testing.T) {
	w := newWorld(t)
	gw, _ := w.seatedPair()
	s := startStream(t, w, gw)
	s.next() // ready
	// The whoami's answer shows the wait was taken in (lines are taken in
	// order): a signal before that may end the worker with the wait unread,
	// and the worker's own watchers (its clock, its claims) make an inotify
	// instance no sign that the wait has begun.
	s.send(`{"id": 1, "tool": "chat_wait", "arguments": {"seconds": 20}}`, `{"id": 2, "tool": "chat_whoami"}`)
	if r := s.next(); r.ID != float64(2) {
		t.Fatalf("first answer %v, want the whoami's (2)", r.ID)
	}
	waitUntilWatching(t, s.cmd.Process.Pid)
	start := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	if r := s.next(); r.ID != float64(1) || r.Success {
		t.Fatalf("%+v, want the wait ended with an error", r)
	}
	s.exited(5 * time.Second)
	t.Logf("exited %v after SIGTERM", time.Since(start))
}

func TestCallStreamNotReady(t *testing.T) {
	w := newWorld(t)
	notDB := filepath.Join(w.dir, "not-a-db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("this is not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startStream(t, w, w.repo("mesh-gw"), "MCPP_CHAT_DB="+notDB)
	r := s.next()
	if r.Ready == nil || *r.Ready || !strings.Contains(r.Error, notDB) {
		t.Fatalf("first line %+v, want ready false and an error naming %s", r, notDB)
	}
	if err := s.exited(10 * time.Second); err == nil {
		t.Fatal("exit 0 when not ready")
	}
}
