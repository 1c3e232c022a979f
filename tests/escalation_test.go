package tests

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The escalation ladder across processes (docs/protocol.md, Due times and
// the ladder): every serve and every hub runs its clock on one store, and
// each stage still fires once.

// postCounter is a loopback webhook that counts what it is posted.
type postCounter struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newPostCounter(t *testing.T) *postCounter {
	c := &postCounter{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.bodies = append(c.bodies, r.Method+" "+r.URL.Path+" "+string(body))
		c.mu.Unlock()
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *postCounter) posts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string{}, c.bodies...)
}

// ladderWorld is a world whose ladder runs in seconds and tells a person
// through a command that appends the event to told, and a webhook.
func ladderWorld(t *testing.T, postgres bool) (w *world, storeURL, told string, hook *postCounter) {
	t.Helper()
	if postgres {
		w, _, storeURL = teamWorld(t)
	} else {
		w = newWorld(t)
		storeURL = "sqlite:" + w.db
	}
	told = filepath.Join(w.dir, "told")
	hook = newPostCounter(t)
	w.configure(fmt.Sprintf("escalation:\n  raiser_after: 2s\n  person_after: 4s\nnotify:\n  command: [sh, -c, \"cat >> %s\"]\n  webhook: %s/services/T1/B2/secret\n",
		told, hook.URL))
	return w, storeURL, told, hook
}

// stage is one stage of an item's ladder, as chat_read reports it.
type stage struct {
	Stage   string
	At      string
	LateBy  string `json:"late_by"`
	For     []string
	Outcome string
}

// ladderOf reads the ladders of gw--dash's items, by slug.
func ladderOf(w *world, dir string) map[string][]stage {
	w.t.Helper()
	var read struct {
		Messages []struct {
			Kind, Slug string
			Escalation []stage
		}
	}
	w.mustCall(dir, "chat_read", map[string]any{"channel": "gw--dash", "since": 0, "peek": true}, &read)
	out := map[string][]stage{}
	for _, m := range read.Messages {
		if m.Kind == "ask" {
			out[m.Slug] = m.Escalation
		}
	}
	return out
}

// awaitPersonTold waits (bounded) until the person stage of every item in slugs
// has been told and its outcome recorded.
func awaitPersonTold(t *testing.T, w *world, dir string, within time.Duration, slugs ...string) map[string][]stage {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ladders := ladderOf(w, dir)
		done := 0
		for _, slug := range slugs {
			for _, s := range ladders[slug] {
				if s.Stage == "person" && s.Outcome != "" {
					done++
				}
			}
		}
		if done >= len(slugs) {
			return ladders
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s the ladders are %+v", within, ladders)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Eight serve processes and two hubs on one store, each running the
// ladder's clock: every stage of every item fires once, the person is told
// once per item by the command and once by the webhook.
func TestEscalationEightServesTwoHubs(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			w, storeURL, told, hook := ladderWorld(t, engine == "postgres")
			gw, dash := w.seatedPair()
			for i := range 8 {
				w.serve([]string{gw, dash}[i%2])
			}
			for _, name := range []string{"hub-a", "hub-b"} {
				startHubProcess(t, w, name, storeURL)
			}
			slugs := []string{"enum", "tls", "uart"}
			for i, slug := range slugs {
				// Spread over a few seconds, the later ones a barrier: by
				// the time the last is told, a second firing of the
				// first would have happened long ago.
				w.mustCall(gw, "chat_ask", map[string]any{"title": "Question " + slug, "body": "Please look.", "slug": slug,
					"consumers": []string{"node-dash"}, "due": fmt.Sprintf("%ds", 2+2*i)}, nil)
			}
			ladders := awaitPersonTold(t, w, dash, 2*time.Minute, slugs...)
			for _, slug := range slugs {
				var got []string
				for _, s := range ladders[slug] {
					got = append(got, s.Stage+":"+strings.Join(s.For, ","))
				}
				if want := "overdue:node-dash raiser:mesh-gw person:node-dash"; strings.Join(got, " ") != want {
					t.Errorf("[%s] ladder %v, want %s", slug, got, want)
				}
				if out := ladders[slug][len(ladders[slug])-1].Outcome; out != "notify.command ok; notify.webhook ok" {
					t.Errorf("[%s] outcome %q", slug, out)
				}
			}
			data, _ := os.ReadFile(told)
			if lines := strings.Count(string(data), "\n"); lines != len(slugs) {
				t.Errorf("the command ran %d times, want %d:\n%s", lines, len(slugs), data)
			}
			for _, slug := range slugs {
				if n := strings.Count(string(data), `"item":"`+slug+`"`); n != 1 {
					t.Errorf("the command was told of [%s] %d times", slug, n)
				}
			}
			posts := hook.posts()
			if len(posts) != len(slugs) {
				t.Errorf("the webhook got %d posts, want %d: %q", len(posts), len(slugs), posts)
			}
			for _, p := range posts {
				if !strings.HasPrefix(p, `POST /services/T1/B2/secret {"text":"mcpp-chat: [`) {
					t.Errorf("post %q", p)
				}
			}
		})
	}
}

// With nothing running at its time, the next process to start fires what
// was missed, once, and says how late: in its log, on the item and to the
// person.
func TestEscalationMissedWhileNothingRan(t *testing.T) {
	w, _, told, hook := ladderWorld(t, false)
	gw, dash := w.seatedPair()
	var asked struct{ Due string }
	w.mustCall(gw, "chat_ask", map[string]any{"title": "Is the enum closed?", "body": "b", "slug": "enum", "due": "1s"}, &asked)
	due, err := time.Parse(time.RFC3339Nano, asked.Due)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing runs the clock until every stage's time has passed.
	for time.Now().Before(due.Add(4*time.Second + 6*time.Second)) { // person_after, and late enough to count as late
		time.Sleep(100 * time.Millisecond)
	}
	session := w.serve(dash)
	ladders := awaitPersonTold(t, w, dash, time.Minute, "enum")
	for _, s := range ladders["enum"] {
		if s.LateBy == "" {
			t.Errorf("%s does not say how late it fired: %+v", s.Stage, s)
		}
	}
	if len(ladders["enum"]) != 3 {
		t.Errorf("ladder %+v", ladders["enum"])
	}
	data, _ := os.ReadFile(told)
	if strings.Count(string(data), "\n") != 1 || !strings.Contains(string(data), `"late_by":"`) || !strings.Contains(string(data), "late: no chat process was running") {
		t.Errorf("the person is not told once, with how late: %s", data)
	}
	if posts := hook.posts(); len(posts) != 1 || !strings.Contains(posts[0], "late: no chat process was running") {
		t.Errorf("webhook posts %q", posts)
	}
	if s, ok := servers.Load(session); !ok || !strings.Contains(s.(*served).stderr.String(), "fired an escalation stage late") {
		t.Errorf("serve's log does not say it fired late")
	}
}

// An mcpp host's worker (call --stream) runs the ladder's clock as serve
// does: with it alone running, an item's stages fire.
func TestEscalationMcppWorkerRunsTheClock(t *testing.T) {
	w, _, _, _ := ladderWorld(t, false)
	gw, dash := w.seatedPair()
	cmd := exec.Command(chatBin, "call", "--stream", "--workspace", dash)
	cmd.Env = w.env
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
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	ready := make([]byte, 64)
	if n, err := stdout.Read(ready); err != nil || !strings.Contains(string(ready[:n]), `"ready":true`) {
		t.Fatalf("the worker did not start: %q %v", ready[:n], err)
	}
	go io.Copy(io.Discard, stdout)
	w.mustCall(gw, "chat_ask", map[string]any{"title": "Is the enum closed?", "body": "b", "slug": "enum", "due": "1s"}, nil)
	awaitPersonTold(t, w, dash, time.Minute, "enum")
}
