package escalation

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

var (
	gw   = store.Identity{Name: "mesh-gw", Workspace: "/srv/mesh-gw"}
	dash = store.Identity{Name: "node-dash", Workspace: "/srv/node-dash"}
)

// chat opens a chat with mesh-gw and node-dash seated in gw--dash, whose
// store writes the time clock gives.
func chat(t *testing.T, path string, clock func() time.Time) *store.DB {
	t.Helper()
	db, err := store.OpenWith(context.Background(), path, store.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for _, id := range []store.Identity{gw, dash} {
		if _, err := db.Register(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ChannelNew(ctx, gw, "gw--dash", "", []string{"node-dash"}); err != nil && !strings.Contains(err.Error(), "taken") {
		t.Fatal(err)
	}
	return db
}

// firings collects what clocks fired, for a test to wait on.
type firings struct {
	mu    sync.Mutex
	list  []string
	moved chan struct{}
}

func newFirings() *firings { return &firings{moved: make(chan struct{}, 100)} }

func (f *firings) add(fired store.Fired, outcome string) {
	f.mu.Lock()
	f.list = append(f.list, fired.Item+":"+fired.Stage+":"+outcome)
	f.mu.Unlock()
	f.moved <- struct{}{}
}

// await waits (bounded) until n stages fired, and returns them.
func (f *firings) await(t *testing.T, n int, within time.Duration) []string {
	t.Helper()
	deadline := time.After(within)
	for {
		f.mu.Lock()
		got := append([]string{}, f.list...)
		f.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-f.moved:
		case <-deadline:
			t.Fatalf("after %s, %d stages fired, want %d: %v", within, len(got), n, got)
		}
	}
}

func run(t *testing.T, c *Clock) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// Two clocks on one store — two processes' — arm for the next stage and
// fire each stage once, at its time; the person is told once.
func TestClocksFireEachStageOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat.db")
	told := filepath.Join(dir, "told")
	db := chat(t, path, nil)
	fired := newFirings()
	for range 2 {
		other, err := store.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { other.Close() })
		run(t, &Clock{DB: other, Ladder: store.Ladder{RaiserAfter: 300 * time.Millisecond, PersonAfter: 600 * time.Millisecond},
			Notify: Notifier{Command: []string{"sh", "-c", "cat >> " + told}}, Fired: fired.add, Rearm: 200 * time.Millisecond})
	}
	if _, err := db.Ask(context.Background(), gw, store.AskArgs{Title: "Is the enum closed?", Body: "b", Slug: "enum", Due: "1s"}); err != nil {
		t.Fatal(err)
	}
	got := fired.await(t, 3, 30*time.Second)
	want := []string{"enum:overdue:", "enum:raiser:", "enum:person:notify.command ok"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("fired %v, want %v", got, want)
	}
	data, _ := os.ReadFile(told)
	if n := strings.Count(string(data), "\n"); n != 1 {
		t.Errorf("the person was told %d times:\n%s", n, data)
	}
	// The outcome is recorded on the item.
	zero := int64(0)
	r, err := db.Read(context.Background(), gw, store.ReadArgs{Channel: "gw--dash", Limit: 10, Since: &zero, Peek: true})
	if err != nil {
		t.Fatal(err)
	}
	notes := r.Messages[0].Escalation
	if len(notes) != 3 || notes[2].Outcome != "notify.command ok" {
		t.Errorf("record: %+v", notes)
	}
}

// A clock that starts after stages' times fires them at once, each once,
// and says how late: in its log and in what the person is told.
func TestClockFiresWhatWasMissedAndSaysHowLate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat.db")
	past := time.Now().Add(-3 * time.Hour)
	db := chat(t, path, func() time.Time { return past })
	if _, err := db.Ask(context.Background(), gw, store.AskArgs{Title: "Is the enum closed?", Body: "b", Slug: "enum", Due: "10m"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	later, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { later.Close() })
	var logged bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))
	fired := newFirings()
	told := filepath.Join(dir, "told")
	run(t, &Clock{DB: later, Ladder: store.Ladder{RaiserAfter: 15 * time.Minute, PersonAfter: time.Hour},
		Notify: Notifier{Command: []string{"sh", "-c", "cat >> " + told}}, Fired: fired.add, Log: log})
	got := fired.await(t, 3, 30*time.Second)
	if len(got) != 3 {
		t.Fatalf("fired %v", got)
	}
	mu.Lock()
	text := logged.String()
	mu.Unlock()
	if strings.Count(text, "fired an escalation stage late") != 3 || !strings.Contains(text, "late=2h50m") {
		t.Errorf("the log does not say how late:\n%s", text)
	}
	data, _ := os.ReadFile(told)
	if !strings.Contains(string(data), `"late_by":"1h50m"`) || !strings.Contains(string(data), "Told 1h50m late: no chat process was running") {
		t.Errorf("the person is not told how late: %s", data)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
