package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// otherEditionWriter writes says into a channel the way the Python edition
// does, through Python's own sqlite3 module: one BEGIN IMMEDIATE per
// message, the next seq in the channel, no trigger and no FTS5 of its own
// (its SQLite may lack it). It first writes a history in one transaction,
// so that the first search has a large index to build, says "seeded", then
// goes on writing one message at a time.
const otherEditionWriter = `
import datetime, sqlite3, sys, time
db, channel, author, history, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
con = sqlite3.connect(db, timeout=60, isolation_level=None)
triggers = con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
if triggers:
    sys.exit("chat.db has triggers another edition's writes would run: %r" % triggers)
ch = con.execute("SELECT id FROM channels WHERE name = ?", (channel,)).fetchone()[0]
me = con.execute("SELECT id FROM parties WHERE name = ?", (author,)).fetchone()[0]

def say(body):
    seq = con.execute("SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE channel_id = ?", (ch,)).fetchone()[0]
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    con.execute("INSERT INTO messages (channel_id, seq, kind, body, author_id, status, created_at, updated_at)"
                " VALUES (?, ?, 'say', ?, ?, 'none', ?, ?)", (ch, seq, body, me, now, now))

con.execute("BEGIN IMMEDIATE")
for i in range(history):
    say("osprey history note %d" % i)
con.execute("COMMIT")
print("seeded", flush=True)
for i in range(n):
    con.execute("BEGIN IMMEDIATE")
    say("kestrel sighting number %d" % i)
    con.execute("COMMIT")
    time.sleep(0.003)
print("wrote", n, flush=True)
`

// A writer of the other edition keeps writing, every write succeeding,
// while searches build and bring up to date the index; then search finds
// all it wrote. Python's sqlite3 writes the rows as the Python edition's
// code does (its sources are not part of this repository).
func TestSearchIndexesWhatAnotherEditionWrites(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH, so no writer of the other edition")
	}
	w := newWorld(t)
	gw, dash := w.repo("mesh-gw"), w.repo("node-dash")
	w.mustCall(gw, "chat_channel_new", map[string]any{"name": "gw--dash"}, nil)
	w.mustCall(dash, "chat_channel_join", map[string]any{"name": "gw--dash"}, nil)
	script := filepath.Join(t.TempDir(), "writer.py")
	if err := os.WriteFile(script, []byte(otherEditionWriter), 0o600); err != nil {
		t.Fatal(err)
	}
	const history, written = 20_000, 300
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	writer := exec.CommandContext(ctx, python, script, w.db, "gw--dash", "mesh-gw", fmt.Sprint(history), fmt.Sprint(written))
	out, errs := &syncBuffer{}, &syncBuffer{}
	writer.Stdout, writer.Stderr = out, errs
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	finished := make(chan error, 1)
	go func() { finished <- writer.Wait() }()
	for !strings.Contains(out.String(), "seeded") {
		select {
		case err := <-finished:
			t.Fatalf("the writer ended before its history: %v\n%s", err, errs)
		case <-time.After(10 * time.Millisecond):
		}
	}

	// Searches in processes of their own, two at a time, until the writer
	// is done: the first indexes the history, the others what came since.
	var wg sync.WaitGroup
	done := make(chan struct{})
	var searches atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				got, msg, code := w.runIn(dash, "search", "kestrel", "--limit", "1")
				if code != 0 {
					t.Errorf("search while the other edition writes: exit %d: %s%s", code, got, msg)
					return
				}
				searches.Add(1)
			}
		}()
	}
	err = <-finished
	close(done)
	wg.Wait()
	if err != nil || !strings.Contains(out.String(), fmt.Sprintf("wrote %d", written)) {
		t.Fatalf("the other edition's writer failed while searches ran: %v\n%s%s", err, out, errs)
	}
	if searches.Load() < 2 {
		t.Errorf("only %d searches ran while the writer wrote", searches.Load())
	}
	t.Logf("%d searches ran while the other edition wrote %d messages", searches.Load(), written)

	got, msg, _ := w.runIn(dash, "search", "kestrel")
	if !strings.Contains(got, fmt.Sprintf("%d hits, best first, for", written)) {
		t.Errorf("search kestrel after the writer: want %d hits\n%s%s", written, got, msg)
	}
	last := fmt.Sprintf(`"kestrel sighting number %d"`, written-1)
	if got, msg, _ := w.runIn(dash, "search", last); !strings.Contains(got, "1 hit, best first, for") || !strings.Contains(got, "mesh-gw") {
		t.Errorf("search %s: want the last message the writer wrote\n%s%s", last, got, msg)
	}
	if got, msg, _ := w.runIn(dash, "search", "osprey", "--limit", "1"); !strings.Contains(got, fmt.Sprintf("%d hits, best first, for", history)) {
		t.Errorf("search osprey: want the %d messages of the history\n%s%s", history, got, msg)
	}
}
