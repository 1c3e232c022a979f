package hub

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/tools"
)

// A token the hub refuses is renewed from Renew (what connect saved since)
// and the request sent again, its body too; without a newer token the
// refusal stands.
func TestClientRenewsARefusedToken(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	sent := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(body))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer new" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"the token was revoked"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"shown"},{"type":"text","text":"{}"}]}}`))
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, "old", "node-dash")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(context.Background(), "chat_inbox", []byte(`{}`), nil); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("without Renew: %v, want the refusal", err)
	}
	c.Renew = func() string { return "old" }
	if _, err := c.Call(context.Background(), "chat_inbox", []byte(`{}`), nil); err == nil {
		t.Fatal("Renew gave the same token, yet the call went through")
	}
	c.Renew = func() string { return "new" }
	before := len(sent())
	if _, err := c.Call(context.Background(), "chat_inbox", []byte(`{}`), nil); err != nil {
		t.Fatalf("with a new token: %v", err)
	}
	if got := sent()[before:]; len(got) != 2 || got[0] != got[1] || !strings.Contains(got[1], "chat_inbox") {
		t.Errorf("the request was not sent again whole: %q", got)
	}
	if c.token() != "new" {
		t.Errorf("the client kept the token %q", c.token())
	}
}

// Trouble tells a refused token from a hub out of reach and from another
// refusal, whatever the details of each retry.
func TestClientTrouble(t *testing.T) {
	t.Parallel()
	c, _ := NewClient("http://127.0.0.1:1", "t", "")
	for _, tc := range []struct {
		err  error
		kind string
		says string
	}{
		{&RefusedError{Status: 401, Msg: "refused this machine's token: expired"}, "token", "expired"},
		{&RefusedError{Status: 403, Msg: "not bound"}, "token", "not bound"},
		{&RefusedError{Status: 503, Msg: "x"}, "status 503", "answers 503 Service Unavailable"},
		{&lineError{msg: "long advice", cause: errors.New("connection refused"), none: true}, "unreachable", "cannot be reached (connection refused)"},
		{errors.New("EOF"), "unreachable", "cannot be reached (EOF)"},
	} {
		kind, says := c.Trouble(tc.err)
		// A refused token's sentence is the client's own (refused): it
		// names the hub already.
		if kind != tc.kind || !strings.Contains(says, tc.says) || (kind != "token" && !strings.Contains(says, "http://127.0.0.1:1")) {
			t.Errorf("Trouble(%v) = %q, %q; want %q and a sentence holding %q", tc.err, kind, says, tc.kind, tc.says)
		}
	}
}

// A member's chat_wait answer is the hub's text, passed through as it is:
// waited_seconds stays a float as Python writes one (0.0, not 0) from the
// hub to the member's client.
func TestMemberWaitAnswerKeepsTheHubsText(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
	dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
	call(t, dash, "chat_whoami", `{}`)
	call(t, gw, "chat_channel_new", `{"name":"gw--dash","parties":["node-dash"]}`)
	call(t, gw, "chat_say", `{"channel":"gw--dash","text":"are you there?"}`) // the wait answers at once
	manifest, err := tools.LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	front := &tools.Service{Config: config.Defaults(), Manifest: manifest, Remote: dash.Call, Me: store.Identity{Name: "node-dash", Team: true}}
	res, err := front.Call(context.Background(), "chat_wait", json.RawMessage(`{"seconds":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"waited_seconds":[0-9]+\.[0-9][,}]`).Match(res.JSON) {
		t.Errorf("waited_seconds reached the member not as Python writes a float (one decimal, 0.0 for nothing):\n%s", res.JSON)
	}
}

// A member's requests share one connection to the hub: each answer's body
// is read to its end, so its connection serves the next request instead
// of being closed (a new TCP and TLS handshake for every other call).
func TestMemberRequestsShareOneConnection(t *testing.T) {
	t.Parallel()
	ctx, h := newTestHub(t, config.Defaults(), nil)
	h.srv = httptest.NewUnstartedServer(h.s.Handler(ctx))
	var conns atomic.Int64
	h.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	h.srv.Start()
	t.Cleanup(h.srv.Close)
	dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
	for range 5 {
		call(t, dash, "chat_whoami", `{}`)
		call(t, dash, "chat_inbox", `{}`)
		if _, _, err := dash.Pending(ctx, "", 3); err != nil {
			t.Fatal(err)
		}
		if _, err := dash.TokenInfo(ctx); err != nil {
			t.Fatal(err)
		}
		if err := dash.Health(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("25 requests one after another opened %d connections to the hub, want 1", n)
	}
}
