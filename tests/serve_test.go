package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// initRaw makes a raw server ready for tool calls.
func initRaw(t *testing.T, r *rawServer) {
	t.Helper()
	resp, _ := r.request("initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	})
	if resp["result"] == nil {
		t.Fatalf("initialize: %v", resp)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// startWait sends a 20 s chat_wait with request id id and a progress
// token, and returns at its first progress notification: the wait is under
// way. The world's chat.wait_progress_ms must be short (waitProgressFast).
func (r *rawServer) startWait(id int) {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"chat_wait","arguments":{"seconds":20},"_meta":{"progressToken":"wait-%d"}}}`, id, id))
	timeout := time.After(liveGenerous)
	for {
		select {
		case m, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("the server closed stdout during the wait; stderr: %s", r.stderr)
			}
			if m["id"] == float64(id) {
				r.t.Fatalf("the wait answered before it said it was under way: %v", m)
			}
			if m["method"] == "notifications/progress" {
				return
			}
		case <-timeout:
			r.t.Fatalf("no progress from the wait within %v; stderr: %s", liveGenerous, r.stderr)
		}
	}
}

// waitProgressFast is a config whose waits send progress soon.
const waitProgressFast = "chat:\n  wait_progress_ms: 20\n"

// exitCode waits, bounded, for the server to end and returns its exit code.
func exitCode(t *testing.T, r *rawServer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for range r.lines { // its stdout, to the end
		}
		done <- r.cmd.Wait()
	}()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(callTimeout):
		t.Fatal("the server did not exit")
		return -1
	}
}

// A client ends a server with SIGTERM (Codex), SIGINT (Claude Code) or by
// closing its stdin: each is a normal end, exit 0 with nothing on stderr,
// also while a call is still waiting.
func TestServeShutsDownQuietly(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"SIGTERM", "SIGINT", "stdin closed"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			w, alpha, _ := liveWorld(t)
			w.configure(waitProgressFast)
			r := w.rawServe(alpha)
			initRaw(t, r)
			r.request("tools/call", map[string]any{"name": "chat_inbox", "arguments": map[string]any{}})
			r.startWait(2)
			switch how {
			case "SIGTERM":
				r.cmd.Process.Signal(syscall.SIGTERM)
			case "SIGINT":
				r.cmd.Process.Signal(os.Interrupt)
			default:
				r.stdin.Close()
			}
			if code := exitCode(t, r); code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
			if e := r.stderr.String(); e != "" {
				t.Errorf("a normal shutdown wrote on stderr: %q", e)
			}
		})
	}
}

// A client that writes its requests and closes stdin (printf … | serve)
// gets an answer to every one of them before the server exits: the SDK
// dropped every answer still due at the end of stdin. A wait among them
// answers at once with the inbox as it is; an unknown tool is a JSON-RPC
// error in the words clients of the Python edition match on.
func TestServeAnswersEveryRequestReadBeforeStdinEnds(t *testing.T) {
	t.Parallel()
	w, alpha, _ := liveWorld(t)
	r := w.rawServe(alpha)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"chat_wait","arguments":{"seconds":20}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"chat_inbox","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"chat_nope","arguments":{}}}`,
	} {
		r.send(line)
	}
	r.stdin.Close()
	answered := map[float64]map[string]any{}
	for m := range r.lines {
		if id, ok := m["id"].(float64); ok {
			answered[id] = m
		}
	}
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
	for id := 1.0; id <= 5; id++ {
		if answered[id] == nil {
			t.Errorf("request %v was read before stdin ended and never answered", id)
		}
	}
	if msg := fmt.Sprint(answered[5]["error"]); !strings.Contains(msg, "Unknown tool") {
		t.Errorf("unknown tool: %v", answered[5])
	}
	res, _ := answered[3]["result"].(map[string]any)
	if res == nil || res["isError"] == true {
		t.Fatalf("the wait: %v", answered[3])
	}
	var wait struct {
		WaitedSeconds float64 `json:"waited_seconds"`
	}
	content, _ := res["content"].([]any)
	if len(content) == 2 {
		json.Unmarshal([]byte(fmt.Sprint(content[1].(map[string]any)["text"])), &wait)
	}
	if wait.WaitedSeconds >= 19 {
		t.Errorf("the wait ran out its 20 s (%v) instead of answering when stdin ended", wait.WaitedSeconds)
	}
}

// MCP: a request the client cancelled gets no response. The server ends
// the cancelled wait and answers the next request.
func TestServeDoesNotAnswerACancelledCall(t *testing.T) {
	t.Parallel()
	w, alpha, _ := liveWorld(t)
	w.configure(waitProgressFast)
	r := w.rawServe(alpha)
	initRaw(t, r)
	r.startWait(7)
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user pressed Esc"}}`)
	_, seen := r.request("tools/call", map[string]any{"name": "chat_inbox", "arguments": map[string]any{}})
	// A response to the cancelled call is written as soon as the wait
	// ends, at the cancellation: give it a moment more to show.
	for deadline := time.After(time.Second); ; {
		var m map[string]any
		select {
		case m = <-r.lines:
		case <-deadline:
		}
		if m == nil {
			break
		}
		seen = append(seen, m)
	}
	for _, m := range seen {
		if m["id"] == 7.0 {
			t.Fatalf("the cancelled call got a response: %v", m)
		}
	}
	if e := r.stderr.String(); e != "" {
		t.Errorf("stderr: %q", e)
	}
}
