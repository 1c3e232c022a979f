package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// losingProxy stands between a member and its hub and loses the hub's
// answer to the first chat_ask it carries — after the hub has committed
// it — as a timed-out request does.
func losingProxy(t *testing.T, hub string) string {
	t.Helper()
	target, err := url.Parse(hub)
	if err != nil {
		t.Fatal(err)
	}
	var lost atomic.Bool
	p := httputil.NewSingleHostReverseProxy(target)
	p.ModifyResponse = func(r *http.Response) error {
		if r.Request.Header.Get("X-Test-Ask") == "" || !lost.CompareAndSwap(false, true) {
			return nil
		}
		io.Copy(io.Discard, r.Body) // the hub answered: the ask is stored
		return errors.New("the answer was lost on its way")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"chat_ask"`)) {
			r.Header.Set("X-Test-Ask", "1")
		}
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A chat_ask whose answer is lost and that the member retries with the
// same idempotency_key makes one item through the hub, on a database file
// and on a team store: the retry gets the first answer, "duplicate": true.
func TestRetriedAskThroughTheHubMakesOneItem(t *testing.T) {
	for _, hub := range []struct {
		name  string
		start func(t *testing.T) *testHub
	}{{"sqlite", startHub}, {"postgres", startTeamHub}} {
		t.Run(hub.name, func(t *testing.T) {
			h := hub.start(t)
			dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
			call(t, dash, "chat_whoami", `{}`)
			gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
			call(t, gw, "chat_channel_new", `{"name":"gw--dash","parties":["node-dash"]}`)
			c, err := NewClient(losingProxy(t, h.srv.URL)+"/mcp", h.issue("gw2", time.Hour, "mesh-gw"), "")
			if err != nil {
				t.Fatal(err)
			}
			args := json.RawMessage(`{"channel":"gw--dash","title":"Is the enum closed?","body":"Asking once.","idempotency_key":"4f1c-retry"}`)
			if _, err := c.Call(context.Background(), "chat_ask", args, nil); err == nil {
				t.Fatal("the proxy did not lose the first answer")
			}
			res, err := c.Call(context.Background(), "chat_ask", args, nil)
			if err != nil {
				t.Fatal(err)
			}
			var ans struct {
				Slug      string
				Duplicate bool
			}
			if err := json.Unmarshal(res.JSON, &ans); err != nil || !ans.Duplicate || ans.Slug != "is-the-enum-closed" {
				t.Fatalf("retry answered %s (%v); want is-the-enum-closed, duplicate", res.JSON, err)
			}
			read := call(t, dash, "chat_read", `{"channel":"gw--dash"}`)
			asks := 0
			for _, m := range read["messages"].([]any) {
				if m.(map[string]any)["kind"] == "ask" {
					asks++
				}
			}
			if asks != 1 {
				t.Fatalf("node-dash reads %d asks, want 1", asks)
			}
			// The key is mesh-gw's: node-dash's own call with it is its own.
			other := call(t, dash, "chat_say", `{"channel":"gw--dash","text":"hi","idempotency_key":"4f1c-retry"}`)
			if other["duplicate"] != nil {
				t.Fatalf("another party's key answered as a duplicate: %v", other)
			}
			_, err = gw.Call(context.Background(), "chat_ask", json.RawMessage(`{"channel":"gw--dash","title":"Another","body":"b","idempotency_key":"4f1c-retry"}`), nil)
			if err == nil || !strings.Contains(err.Error(), "was used") {
				t.Fatalf("the key for other arguments: %v", err)
			}
		})
	}
}
