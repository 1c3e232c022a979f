package hub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// floodConns is how many connections a flood holds: the hub's bound in
// all (DefaultLimits).
const floodConns = 1024

// memberPatience bounds each of a member's calls during a flood: a third
// of the body deadline (30 s) that held members out before; on a loaded
// machine a call under a flood takes well under a second.
const memberPatience = 10 * time.Second

// flood is floodConns clients that each send the headers of POST /mcp
// with Content-Length: 100000 and one byte of the body, then wait; each
// opens a new connection as soon as the hub closes its last.
type flood struct {
	refused atomic.Int64 // answers the flood got (all 401s)
	opened  atomic.Int64 // connections it opened

	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func startFlood(t *testing.T, h *testHub, token string) *flood {
	t.Helper()
	head := "POST /mcp HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n"
	if token != "" {
		head += "Authorization: Bearer " + token + "\r\n"
	}
	head += "\r\n{"
	f := &flood{stop: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	addr := h.srv.Listener.Addr().String()
	for range floodConns {
		f.wg.Go(func() {
			for {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					select { // out of ports or refused: try again shortly
					case <-f.stop:
						return
					case <-time.After(10 * time.Millisecond):
						continue
					}
				}
				if !f.hold(c) {
					return
				}
				f.opened.Add(1)
				c.Write([]byte(head))
				r := bufio.NewReader(c)
				if status, _ := r.ReadString('\n'); strings.HasPrefix(status, "HTTP/1.1 401") {
					f.refused.Add(1)
				}
				io.Copy(io.Discard, r) // until the hub closes it, or the flood stops
				f.release(c)
			}
		})
	}
	t.Cleanup(f.end) // before the hub's: a stalled request would hold its Close
	return f
}

// hold counts c as the flood's, unless the flood is over.
func (f *flood) hold(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.stop:
		c.Close()
		return false
	default:
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *flood) release(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

// end stops the flood and closes its connections.
func (f *flood) end() {
	f.mu.Lock()
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// busyConns is how many connections the hub holds busy with a request.
func (h *testHub) busyConns() int {
	l := h.srv.Listener.(*connLimiter)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := range l.open {
		if c.state == http.StateActive {
			n++
		}
	}
	return n
}

// memberCall is a member's chat_whoami on a connection of its own.
func memberCall(h *testHub, token string) error {
	c, err := NewClient(h.srv.URL, token, "")
	if err != nil {
		return err
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c.HTTP = &http.Client{Transport: tr}
	c.Patience = memberPatience
	_, err = c.Call(context.Background(), "chat_whoami", json.RawMessage(`{}`), nil)
	return err
}

// 1,024 connections that each send the headers of POST /mcp with a body
// of 100,000 bytes and one byte of it, reopened as the hub closes them,
// lock no member out, on either engine. Without a token each is refused
// at once and closed; with a valid token each is held stalled in its body,
// and the hub closes the oldest to make room for a member's connection.
// Every call of a member is answered meanwhile, each within
// memberPatience: before, they were reset for the 30 s of the body's
// deadline.
func TestStalledConnectionsLockNoMemberOut(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: floods the hub with 1,024 connections four times (seconds of load); it runs in the full tier (make test)")
	}
	const probes = 10
	engines := map[string]func(*testing.T) *testHub{
		"sqlite":   func(t *testing.T) *testHub { return startLimitedHub(t, Limits{}) },
		"postgres": func(t *testing.T) *testHub { return startLimitedTeamHub(t, Limits{}) },
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, withToken := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/token=%v", engine, withToken), func(t *testing.T) {
				h := engines[engine](t)
				member := h.issue("member", time.Hour, "member")
				if err := memberCall(h, member); err != nil {
					t.Fatal(err)
				}
				token := ""
				if withToken {
					token = h.issue("stalls", time.Hour, "stalls")
				}
				f := startFlood(t, h, token)
				// The flood is in: every connection the hub allows is
				// busy (stalled in its body), or has been refused.
				in := func() bool { return h.busyConns() >= floodConns || f.refused.Load() >= floodConns }
				for deadline := time.Now().Add(closedWithin); !in(); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("the flood never came in: %d connections opened, %d refused, %d busy on the hub", f.opened.Load(), f.refused.Load(), h.busyConns())
					}
				}
				for i := range probes {
					start := time.Now()
					if err := memberCall(h, member); err != nil {
						t.Fatalf("a member's call %d of %d, with %d connections flooding (%d opened, %d refused), failed after %s: %v",
							i+1, probes, floodConns, f.opened.Load(), f.refused.Load(), time.Since(start).Round(time.Millisecond), err)
					}
				}
				if f.opened.Load() <= floodConns {
					t.Fatalf("the flood opened %d connections: the hub closed none of them", f.opened.Load())
				}
			})
		}
	}
}

// A request refused before its body arrived — no token, an unknown one, a
// party the token does not hold, a body over 4 MiB, a path the hub does
// not serve — is answered, and its connection closed at once: the hub
// does not read on for the rest of a body that may never come, holding
// the connection until the body's deadline.
func TestRefusedRequestsCloseTheirConnection(t *testing.T) {
	t.Parallel()
	h := startLimitedHub(t, Limits{ReadBody: 10 * closedWithin})
	tok := h.issue("dash", time.Hour, "node-dash")
	head := func(path, header string, length int) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: hub\r\n%sContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{", path, header, length)
	}
	for _, c := range []struct {
		name, head string
		sent       int // bytes of the body sent (the first is in head)
		status     int
	}{
		{"no token", head("/mcp", "", 100000), 1, 401},
		{"an unknown token", head("/mcp", "Authorization: Bearer mcc_000000000000_nope\r\n", 100000), 1, 401},
		{"another party", head("/mcp", "Authorization: Bearer "+tok+"\r\n"+PartyHeader+": mesh-gw\r\n", 100000), 1, 403},
		{"over 4 MiB", head("/mcp", "Authorization: Bearer "+tok+"\r\n", 5<<20), maxBody + 1, 413},
		{"nothing there", head("/register", "", 100000), 1, 404},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := dialFrom(t, h, "127.0.0.1")
			fmt.Fprint(conn, c.head)
			if c.sent > 1 {
				if _, err := conn.Write(bytes.Repeat([]byte(" "), c.sent-1)); err != nil {
					t.Fatal(err)
				}
			}
			r := bufio.NewReader(conn)
			conn.SetReadDeadline(time.Now().Add(closedWithin))
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if _, err := io.Copy(io.Discard, r); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the hub held the connection after its refusal, reading for the rest of the body")
			}
		})
	}
}

// A call whose body has arrived keeps its connection, as before: the next
// call goes on it.
func TestCallsKeepTheirConnection(t *testing.T) {
	t.Parallel()
	h := startLimitedHub(t, Limits{})
	tok := h.issue("dash", time.Hour, "node-dash")
	conn := dialFrom(t, h, "127.0.0.1")
	r := bufio.NewReader(conn)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chat_whoami","arguments":{}}}`
	for i := range 2 {
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", tok, len(body), body)
		conn.SetReadDeadline(time.Now().Add(closedWithin))
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("call %d on one connection: %v", i+1, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close || !strings.Contains(string(data), "node-dash") {
			t.Fatalf("call %d: %s (close %v) %s", i+1, resp.Status, resp.Close, data)
		}
	}
}
