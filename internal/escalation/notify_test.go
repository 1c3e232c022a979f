package escalation

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

func testEvent() Event {
	at := time.Date(2026, 7, 30, 11, 0, 0, 0, time.UTC)
	return NewEvent(store.Fired{Stage: store.StagePerson, Channel: "gw--dash", Seq: 3, Item: "enum", Title: "Is the <!channel> enum closed? @here",
		Raiser: "mesh-gw", For: []string{"node-dash"}, Due: at.Add(-time.Hour), Planned: at, At: at})
}

// notify.command runs with the event as one JSON object on its stdin.
func TestCommandGetsTheEventOnStdin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "told")
	n := Notifier{Command: []string{"sh", "-c", "cat >> " + out}}
	if got := n.Tell(context.Background(), testEvent()); got != "notify.command ok" {
		t.Fatalf("outcome %q", got)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("stdin was not one JSON object: %q", data)
	}
	if e.Stage != "person" || e.Item != "enum" || e.Channel != "gw--dash" || e.Raiser != "mesh-gw" || e.Due != "2026-07-30T10:00:00.000000+00:00" ||
		len(e.NotAcked) != 1 || !strings.Contains(e.Text, "node-dash has not acked it (due 2026-07-30 10:00 UTC, raised by mesh-gw)") {
		t.Errorf("event = %+v", e)
	}
	// What a peer wrote mentions nobody in a chat app.
	if strings.Contains(e.Text, "<!channel>") || strings.Contains(e.Text, "@here") {
		t.Errorf("the title can mention people: %s", e.Text)
	}
}

func TestCommandFailures(t *testing.T) {
	ctx := context.Background()
	n := Notifier{Command: []string{"sh", "-c", "echo boom >&2; exit 3"}}
	if got := n.Tell(ctx, testEvent()); got != "notify.command failed: exit status 3 (boom)" {
		t.Errorf("failing command: %q", got)
	}
	n = Notifier{Command: []string{"sleep", "30"}, Timeout: 100 * time.Millisecond}
	if got := n.Tell(ctx, testEvent()); !strings.Contains(got, "failed: no answer within 100ms") {
		t.Errorf("slow command: %q", got)
	}
	n = Notifier{Command: []string{filepath.Join(t.TempDir(), "absent")}}
	if got := n.Tell(ctx, testEvent()); !strings.HasPrefix(got, "notify.command failed:") {
		t.Errorf("missing command: %q", got)
	}
	if got := (Notifier{}).Tell(ctx, testEvent()); !strings.Contains(got, "nobody told") {
		t.Errorf("nothing configured: %q", got)
	}
}

// webhook is a loopback server that answers with the statuses given, in
// turn (200 once they run out), and keeps what it was posted.
type webhook struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	bodies   []string
}

func newWebhook(t *testing.T, statuses ...int) *webhook {
	w := &webhook{statuses: statuses}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.bodies = append(w.bodies, r.Method+" "+r.Header.Get("Content-Type")+" "+string(body))
		status := http.StatusOK
		if len(w.statuses) > 0 {
			status, w.statuses = w.statuses[0], w.statuses[1:]
		}
		rw.WriteHeader(status)
		io.WriteString(rw, "said "+http.StatusText(status))
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *webhook) posts() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string{}, w.bodies...)
}

func TestWebhookPostsTheText(t *testing.T) {
	w := newWebhook(t)
	n := Notifier{Webhook: w.URL + "/services/T1/B2/secret"}
	if got := n.Tell(context.Background(), testEvent()); got != "notify.webhook ok" {
		t.Fatalf("outcome %q", got)
	}
	posts := w.posts()
	if len(posts) != 1 || !strings.HasPrefix(posts[0], "POST application/json {\"text\":\"mcpp-chat: [enum]") {
		t.Errorf("posts = %q", posts)
	}
}

// A 5xx or a 429 is tried again after a pause, at most Tries times; a 4xx
// is not; the outcome never holds the URL, which is the webhook's secret.
func TestWebhookRetriesWithin(t *testing.T) {
	ctx := context.Background()
	w := newWebhook(t, 500, 429)
	n := Notifier{Webhook: w.URL + "/hooks/secret", Backoff: 10 * time.Millisecond}
	if got := n.Tell(ctx, testEvent()); got != "notify.webhook ok (try 3)" || len(w.posts()) != 3 {
		t.Errorf("after a 500 and a 429: %q, %d posts", got, len(w.posts()))
	}
	w = newWebhook(t, 503, 503, 503, 503)
	n.Webhook = w.URL + "/hooks/secret"
	if got := n.Tell(ctx, testEvent()); got != "notify.webhook failed after 3 tries: HTTP 503 (said Service Unavailable)" || len(w.posts()) != 3 {
		t.Errorf("always 503: %q, %d posts", got, len(w.posts()))
	}
	w = newWebhook(t, 404)
	n.Webhook = w.URL + "/hooks/secret"
	if got := n.Tell(ctx, testEvent()); got != "notify.webhook failed after 1 try: HTTP 404 (said Not Found)" || len(w.posts()) != 1 {
		t.Errorf("404: %q, %d posts", got, len(w.posts()))
	}
	// Nobody listens: the client's error quotes the URL, the outcome not.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	n.Webhook = "http://" + addr + "/hooks/secret"
	got := n.Tell(ctx, testEvent())
	if !strings.HasPrefix(got, "notify.webhook failed after 3 tries: ") || strings.Contains(got, "/hooks/secret") {
		t.Errorf("nobody listening: %q", got)
	}
}

// A post that gets no answer ends at the timeout.
func TestWebhookTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	n := Notifier{Webhook: srv.URL + "/hooks/secret", Timeout: 100 * time.Millisecond, Tries: 1}
	got := n.Tell(context.Background(), testEvent())
	if !strings.HasPrefix(got, "notify.webhook failed after 1 try: ") || strings.Contains(got, "/hooks/secret") {
		t.Errorf("no answer: %q", got)
	}
}
