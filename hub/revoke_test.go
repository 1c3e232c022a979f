package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// onBothEngines runs body on a SQLite hub and on a PostgreSQL hub, each
// letting a /v1/wait last a minute and telling a chat_wait's progress
// every 50 ms.
func onBothEngines(t *testing.T, body func(t *testing.T, h *testHub)) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			cfg := config.Defaults()
			cfg.Chat.WaitProgressMS = 50
			var h *testHub
			if engine == "sqlite" {
				h = startHubWith(t, cfg, nil)
			} else {
				h = startTeamHub(t)
				h.s.Config = cfg
			}
			h.s.MaxWait = time.Minute
			body(t, h)
		})
	}
}

// openOn is how many of the hub's requests under way hold the token.
func (h *testHub) openOn(token string) int {
	h.s.open.mu.Lock()
	defer h.s.open.mu.Unlock()
	return len(h.s.open.byToken[store.TokenID(token)])
}

// waitOpen waits until n requests holding token are under way.
func (h *testHub) waitOpen(t *testing.T, token string, n int) {
	t.Helper()
	for deadline := time.Now().Add(closedWithin); h.openOn(token) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the token's %d requests are under way on the hub", h.openOn(token), n)
		}
	}
}

// ended is what a wait ended with.
type ended struct {
	what string // the answer, or the error
	err  error
	at   time.Time
}

// waitFor starts a /v1/wait with token that only a change ends (or the
// hub's minute).
func waitFor(h *testHub, c *Client) <-chan ended {
	done := make(chan ended, 1)
	tag, err := c.Wait(context.Background(), "", time.Second) // no tag: answered at once
	if err != nil {
		done <- ended{what: err.Error(), err: err, at: time.Now()}
		return done
	}
	go func() {
		moved, err := c.Wait(context.Background(), tag, time.Minute)
		e := ended{what: moved, err: err, at: time.Now()}
		if err != nil {
			e.what = err.Error()
		}
		done <- e
	}()
	return done
}

// chatWaitSeconds is how long a chat_wait waits: its longest.
const chatWaitSeconds = 20

// chatWait starts a chat_wait of chatWaitSeconds; with progress it
// reports when its stream has begun (the first progress note).
func chatWait(c *Client, progress bool) (<-chan ended, <-chan struct{}) {
	done, begun := make(chan ended, 1), make(chan struct{})
	var notify func(context.Context, float64, float64, string)
	if progress {
		first := true
		notify = func(context.Context, float64, float64, string) {
			if first {
				first = false
				close(begun)
			}
		}
	}
	go func() {
		res, err := c.Call(context.Background(), "chat_wait", json.RawMessage(fmt.Sprintf(`{"seconds":%d}`, chatWaitSeconds)), notify)
		e := ended{what: string(res.JSON), err: err, at: time.Now()}
		if err != nil {
			e.what = err.Error()
		}
		done <- e
	}()
	return done, begun
}

// refusedAfter fails unless e is the token's 401 refusal, within half
// of what the wait would last without the revoke.
func refusedAfter(t *testing.T, name string, e ended, revoked time.Time, wouldLast time.Duration) {
	t.Helper()
	var refused *RefusedError
	if !errors.As(e.err, &refused) || refused.Status != http.StatusUnauthorized || !strings.Contains(e.what, "revoked") {
		t.Errorf("%s answered after the revoke: %s", name, e.what)
		return
	}
	if took := e.at.Sub(revoked); took > wouldLast/2 {
		t.Errorf("%s ended %s after the revoke: not at once", name, took.Round(time.Millisecond))
	}
}

func receive(t *testing.T, name string, ch <-chan ended) ended {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s never ended", name)
		return ended{}
	}
}

// A revoke ends at once what its token holds open, with 401: a /v1/wait
// and a chat_wait (its stream begun) that nothing else would end end
// well before their time, on both engines.
func TestARevokeEndsOpenWaits(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, h *testHub) {
		tok := h.issue("gw", time.Hour, "mesh-gw")
		gw := h.client(t, tok, "")
		call(t, gw, "chat_inbox", `{}`)
		wait := waitFor(h, gw)
		cw, begun := chatWait(gw, true)
		select {
		case <-begun:
		case e := <-cw:
			t.Fatalf("chat_wait ended before its first progress: %s", e.what)
		}
		h.waitOpen(t, tok, 2)
		if _, err := h.tokens.Revoke(context.Background(), "gw"); err != nil {
			t.Fatal(err)
		}
		revoked := time.Now()
		refusedAfter(t, "the /v1/wait", receive(t, "the /v1/wait", wait), revoked, h.s.MaxWait)
		refusedAfter(t, "the chat_wait", receive(t, "the chat_wait", cw), revoked, chatWaitSeconds*time.Second)
	})
}

// A revoke holds for what is under way: a call whose headers came before
// it and whose body after is refused with 401 and writes nothing, and
// waits open at the revoke — a /v1/wait, a chat_wait whose stream began,
// one whose stream did not — answer nothing after it, not even an item
// raised right after it that would wake them.
func TestNothingIsAnsweredAfterARevoke(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, h *testHub) {
		ctx := context.Background()
		tok := h.issue("gw", time.Hour, "mesh-gw")
		gw := h.client(t, tok, "")
		dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
		call(t, dash, "chat_whoami", `{}`)
		call(t, gw, "chat_channel_new", `{"name":"gw--dash","parties":["node-dash"]}`)
		call(t, gw, "chat_inbox", `{}`)

		wait := waitFor(h, gw)
		quiet, _ := chatWait(gw, false)
		streamed, begun := chatWait(gw, true)
		<-begun
		// A call whose headers are in, its body not yet.
		ask := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chat_ask","arguments":{"channel":"gw--dash","title":"written after the revoke","body":"?"}}}`
		conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", tok, len(ask))
		h.waitOpen(t, tok, 4)

		if _, err := h.tokens.Revoke(ctx, "gw"); err != nil {
			t.Fatal(err)
		}
		revoked := time.Now()
		io.WriteString(conn, ask)
		call(t, dash, "chat_ask", `{"channel":"gw--dash","title":"raised after the revoke","body":"for gw"}`)

		conn.SetReadDeadline(time.Now().Add(closedWithin))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("the call whose body came after the revoke: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "revoked") {
			t.Errorf("the call whose body came after the revoke: %s %s", resp.Status, body)
		}
		refusedAfter(t, "the /v1/wait", receive(t, "the /v1/wait", wait), revoked, h.s.MaxWait)
		for name, ch := range map[string]<-chan ended{"the chat_wait without progress": quiet, "the chat_wait with progress": streamed} {
			e := receive(t, name, ch)
			refusedAfter(t, name, e, revoked, chatWaitSeconds*time.Second)
			if strings.Contains(e.what, "raised after the revoke") {
				t.Errorf("%s showed the item raised after the revoke: %s", name, e.what)
			}
		}
		read := call(t, dash, "chat_read", `{"channel":"gw--dash"}`)
		if text, _ := json.Marshal(read); strings.Contains(string(text), "written after the revoke") {
			t.Errorf("the call whose body came after the revoke wrote: %s", text)
		}
	})
}

// A member's watcher — its watch's, its serve's — hears of a revoke at
// once: the long-poll it holds ends with 401, and it says so, rather than
// at the poll's end (45 s).
func TestAWatcherHearsOfARevokeAtOnce(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, h *testHub) {
		tok := h.issue("dash", time.Hour, "node-dash")
		w := h.client(t, tok, "").Watch()
		polled, failed := make(chan struct{}, 1), make(chan error, 1)
		w.OnPoll = func(string, bool) {
			select {
			case polled <- struct{}{}:
			default:
			}
		}
		w.OnError = func(err error) {
			select {
			case failed <- err:
			default:
			}
		}
		defer w.Close()
		w.Start()
		select {
		case <-polled: // its first poll is answered: the next one waits
		case err := <-failed:
			t.Fatalf("the watcher's first poll failed: %v", err)
		case <-time.After(closedWithin):
			t.Fatal("the watcher's first poll was never answered")
		}
		h.waitOpen(t, tok, 1)
		if _, err := h.tokens.Revoke(context.Background(), "dash"); err != nil {
			t.Fatal(err)
		}
		revoked := time.Now()
		select {
		case err := <-failed:
			var refused *RefusedError
			if !errors.As(err, &refused) || refused.Status != http.StatusUnauthorized || !strings.Contains(err.Error(), "revoked") {
				t.Fatalf("the watcher was told %v", err)
			}
			if took := time.Since(revoked); took > pollTimeout/2 {
				t.Fatalf("the watcher heard of the revoke %s after it", took.Round(time.Millisecond))
			}
		case <-time.After(2 * pollTimeout):
			t.Fatal("the watcher never heard of the revoke")
		}
	})
}

// A look for revokes ends the requests of the tokens revoked since the
// last look, and no other: not a valid token's, nor a made-up one's
// (its own check refuses it, and ended during that check it would be
// told the store is out of reach).
func TestALookEndsOnlyRevokedTokens(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, h *testHub) {
		ctx := context.Background()
		var mu sync.Mutex // the hub's own looks run meanwhile
		ended := map[string]error{}
		note := func(name, token string) {
			t.Cleanup(h.s.open.add(store.TokenID(token), func(cause error) {
				mu.Lock()
				defer mu.Unlock()
				ended[name] = cause
			}))
		}
		valid, gone := h.issue("valid", time.Hour, "a"), h.issue("gone", time.Hour, "b")
		note("valid", valid)
		note("revoked", gone)
		note("made up", "mcc_0123456789ab_nope")
		seen := func() map[string]error {
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(ended)
		}
		before := h.s.endRevoked(ctx, "")
		if len(seen()) != 0 {
			t.Fatalf("a look before any revoke ended %v", seen())
		}
		if _, err := h.tokens.Revoke(ctx, "gone"); err != nil {
			t.Fatal(err)
		}
		if h.s.endRevoked(ctx, before) == before {
			t.Fatal("the stamp did not move at the revoke")
		}
		if now := seen(); len(now) != 1 || !errors.Is(now["revoked"], store.ErrTokenRevoked) {
			t.Fatalf("the look ended %v, want only the revoked token's request", now)
		}
	})
}
