package store

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// settledFingerprint waits until the database's fingerprint can be told
// (file times settle for 30 ms after a write).
func settledFingerprint(t *testing.T, db *DB) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, ok := Fingerprint(db.path); ok {
			return
		}
	}
	t.Fatal("the fingerprint never settled")
}

// Reads skip the sweep while nothing was committed since one found nothing,
// and sweep again after another handle's commit made an item sweepable.
func TestReadSweepSkippedOnlyWhileUnchanged(t *testing.T) {
	db := world(t)
	ctx := context.Background()
	must(t)(db.Ask(ctx, gw, AskArgs{Title: "chunk api", Body: "b"}))
	must(t)(db.Reply(ctx, dash, "chunk-api", "answer", ""))
	must(t)(db.PruneOK(ctx, gw, "chunk-api", ""))
	must(t)(db.PruneOK(ctx, dash, "chunk-api", "")) // prune-ok'd by both, not done yet

	settledFingerprint(t, db)
	peek := ReadArgs{Channel: "gw--dash", Limit: 50, Peek: true}
	must(t)(db.Read(ctx, dash, peek))
	ran := db.sweeps.runs.Load()
	must(t)(db.Inbox(ctx, gw))
	must(t)(db.Read(ctx, dash, peek))
	if got := db.sweeps.runs.Load(); got != ran {
		t.Fatalf("%d more sweeps with nothing committed since one found nothing", got-ran)
	}

	// Another handle (another process, as far as SQLite knows) makes the
	// item done: now unanimous prune-ok, so sweepable.
	other, err := Open(ctx, db.path)
	if err != nil {
		t.Fatal(err)
	}
	must(t)(other.Resolve(ctx, gw, "chunk-api", "", false, ""))
	settledFingerprint(t, db)
	r, err := db.Read(ctx, dash, peek)
	if err != nil || !reflect.DeepEqual(r.ArchivedByThisRead, []string{"chunk-api"}) {
		t.Fatalf("read after another handle's resolve swept %+v, %v; want chunk-api archived", r.ArchivedByThisRead, err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
}
