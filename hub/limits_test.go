package hub

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// closedWithin is how long a test waits for the hub to close a
// connection it should close: far longer than any deadline the tests
// configure, so that a slow machine does not fail them.
const closedWithin = 20 * time.Second

// dialFrom opens a connection to the hub from the loopback address from
// (127.0.0.x: Linux routes all of 127/8 to the loopback device).
func dialFrom(t *testing.T, h *testHub, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", h.srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// idleConn is a kept-alive connection after one GET /healthz: what a
// flood of unauthenticated clients leaves open.
func idleConn(t *testing.T, h *testHub, from string) net.Conn {
	t.Helper()
	c := dialFrom(t, h, from)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: hub\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h.waitFor(t, c, http.StateIdle)
	return c
}

// waitFor waits until the hub holds c in state: the order in which the
// hub sees its connections go idle or busy is the test's, not the
// scheduler's.
func (h *testHub) waitFor(t *testing.T, c net.Conn, state http.ConnState) {
	t.Helper()
	l := h.srv.Listener.(*connLimiter)
	for deadline := time.Now().Add(closedWithin); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		l.mu.Lock()
		for lc := range l.open {
			if lc.RemoteAddr().String() == c.LocalAddr().String() && lc.state == state {
				l.mu.Unlock()
				return
			}
		}
		l.mu.Unlock()
	}
	t.Fatalf("the hub never held %s in state %s", c.LocalAddr(), state)
}

// closedByHub reports whether the hub closes c within closedWithin.
func closedByHub(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(closedWithin))
	_, err := io.Copy(io.Discard, c)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// countClosed is how many of conns the hub closes, each watched at once.
func countClosed(conns []net.Conn) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for _, c := range conns {
		wg.Go(func() {
			if closedByHub(c) {
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return n
}

// answered asks the hub for the token's description on a connection of
// its own, as a member would.
func answered(t *testing.T, h *testHub, token string) {
	t.Helper()
	if err := ask(h, token); err != nil {
		t.Fatalf("a member got no answer: %v", err)
	}
}

func ask(h *testHub, token string) error {
	client := &http.Client{Timeout: closedWithin, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/v1/token", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// A request whose body never comes (a Content-Length it does not send)
// is cut at the body's deadline, with a token or without: it holds
// neither a connection nor a goroutine.
func TestASlowBodyIsCut(t *testing.T) {
	t.Parallel()
	h := startLimitedHub(t, Limits{ReadBody: 200 * time.Millisecond})
	tok := h.issue("dash", time.Hour, "node-dash")
	for _, auth := range []string{"", "Authorization: Bearer " + tok + "\r\n"} {
		c := dialFrom(t, h, "127.0.0.1")
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: hub\r\n%sContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{", auth)
		if !closedByHub(c) {
			t.Fatalf("a body that never came held its connection (token: %v)", auth != "")
		}
	}
}

// Kept-alive connections from one address beyond its bound close the
// idle ones, oldest first; another client is answered all along.
func TestConnectionsPerAddressAreBounded(t *testing.T) {
	t.Parallel()
	h := startLimitedHub(t, Limits{MaxConnsPerAddr: 3, BoundLoopback: true})
	tok := h.issue("dash", time.Hour, "node-dash")
	var flood []net.Conn
	for range 6 {
		flood = append(flood, idleConn(t, h, "127.0.0.2"))
	}
	answered(t, h, tok)
	if n := countClosed(flood[:3]); n != 3 {
		t.Fatalf("the hub closed %d of the 3 oldest idle connections from one address, want all", n)
	}
	// The address still gets new connections, in place of its idle ones.
	idleConn(t, h, "127.0.0.2")
}

// At the bound in all, a new connection closes the one idle longest, so
// that a member is answered however many unused connections pile up;
// when every connection is busy, a new one is refused until one ends.
func TestConnectionsInAllAreBounded(t *testing.T) {
	t.Parallel()
	h := startLimitedHub(t, Limits{MaxConns: 4})
	tok := h.issue("dash", time.Hour, "node-dash")
	var flood []net.Conn
	for range 4 {
		flood = append(flood, idleConn(t, h, "127.0.0.1"))
	}
	answered(t, h, tok)
	if !closedByHub(flood[0]) {
		t.Fatal("the oldest idle connection was not closed to make room")
	}

	// Four long-polls keep every connection busy.
	_, _, first := get(t, h, tok, "/v1/wait?timeout=0.1")
	var w struct{ ETag string }
	if err := json.Unmarshal([]byte(first), &w); err != nil {
		t.Fatal(err)
	}
	var busy []net.Conn
	for range 4 {
		c := dialFrom(t, h, "127.0.0.1")
		fmt.Fprintf(c, "GET /v1/wait?timeout=30&etag=%s HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer %s\r\n\r\n", url.QueryEscape(w.ETag), tok)
		h.waitFor(t, c, http.StateActive)
		busy = append(busy, c)
	}
	refused := dialFrom(t, h, "127.0.0.1")
	fmt.Fprintf(refused, "GET /healthz HTTP/1.1\r\nHost: hub\r\n\r\n")
	refused.SetReadDeadline(time.Now().Add(closedWithin))
	if resp, err := http.ReadResponse(bufio.NewReader(refused), nil); err == nil {
		t.Fatalf("a connection past the bound, with every one busy, was served: %s", resp.Status)
	}
	for _, c := range busy {
		c.Close()
	}
	// The waits end as their clients leave, and room is made again.
	var err error
	for deadline := time.Now().Add(closedWithin); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = ask(h, tok); err == nil {
			return
		}
	}
	t.Fatalf("no room after the busy connections closed: %v", err)
}

// Every query parameter is bounded: a summary of a thousand messages per
// channel, a wait of a day, a page before the first message are refused
// with a sentence.
func TestQueriesOutOfRangeAreRefused(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	tok := h.issue("dash", time.Hour, "node-dash")
	for _, path := range []string{
		"/v1/hook?newest=0", "/v1/hook?newest=11", "/v1/hook?newest=100000", "/v1/hook?newest=-1", "/v1/hook?newest=x",
		"/v1/arrivals?after=-2", "/v1/arrivals?after=x", "/v1/arrivals", "/v1/arrivals?after=0&all=2",
		"/v1/wait?timeout=0", "/v1/wait?timeout=-1", "/v1/wait?timeout=NaN", "/v1/wait?timeout=x",
	} {
		status, _, body := get(t, h, tok, path)
		if status != http.StatusBadRequest || !strings.Contains(body, `"error":"give`) {
			t.Errorf("%s: %d %s", path, status, body)
		}
	}
	for _, path := range []string{"/v1/hook?newest=1", "/v1/hook?newest=10", "/v1/hook", "/v1/arrivals?after=-1&all=1", "/v1/wait?timeout=100000"} {
		if status, _, body := get(t, h, tok, path); status != http.StatusOK {
			t.Errorf("%s: %d %s", path, status, body)
		}
	}
}

// What the hub keeps per party stays within its bounds, however many
// parties and summaries are asked for.
func TestPerPartyCachesAreBounded(t *testing.T) {
	t.Parallel()
	h := startLimitedHub(t, Limits{MaxParties: 2})
	for i := range 5 {
		party := fmt.Sprintf("party-%d", i)
		tok := h.issue(party, time.Hour, party)
		call(t, h.client(t, tok, ""), "chat_whoami", `{}`)
		for n := 1; n <= MaxNewest; n++ {
			if status, _, body := get(t, h, tok, fmt.Sprintf("/v1/hook?newest=%d", n)); status != http.StatusOK {
				t.Fatalf("hook: %d %s", status, body)
			}
		}
	}
	h.s.mu.Lock()
	parties, views := h.s.parties.len(), h.s.views.len()
	h.s.mu.Unlock()
	if parties > 2 || views > 2 {
		t.Fatalf("the hub keeps %d parties' servers and %d summaries, bound 2", parties, views)
	}

	small := startLimitedHub(t, Limits{CacheBytes: 1})
	for i := range 3 {
		party := fmt.Sprintf("party-%d", i)
		get(t, small, small.issue(party, time.Hour, party), "/v1/hook")
	}
	small.s.mu.Lock()
	defer small.s.mu.Unlock()
	if n := small.s.views.len(); n != 1 {
		t.Fatalf("a cache of 1 byte keeps %d summaries, want only the newest", n)
	}
}
