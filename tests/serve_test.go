package tests

import (
	"os"
	"os/exec"
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
			r := w.rawServe(alpha)
			initRaw(t, r)
			r.request("tools/call", map[string]any{"name": "chat_inbox", "arguments": map[string]any{}})
			r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chat_wait","arguments":{"seconds":20}}}`)
			time.Sleep(300 * time.Millisecond) // the wait is under way
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

// MCP: a request the client cancelled gets no response. The server ends
// the cancelled wait and answers the next request.
func TestServeDoesNotAnswerACancelledCall(t *testing.T) {
	t.Parallel()
	w, alpha, _ := liveWorld(t)
	r := w.rawServe(alpha)
	initRaw(t, r)
	r.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"chat_wait","arguments":{"seconds":20}}}`)
	time.Sleep(300 * time.Millisecond) // the wait is under way
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
