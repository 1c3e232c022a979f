package store

import (
	"context"
	"reflect"
	"testing"
)

// trustedFingerprint waits until the store's fingerprint can be told:
// a database file's times are trusted a moment after a write (fingerprint);
// a team store's counter at once.
func trustedFingerprint(t *testing.T, db *DB) {
	t.Helper()
	if !isPostgres(db) {
		fingerprint(t, db)
	}
}

// Reads skip the sweep while nothing was committed since one found nothing,
// and sweep again after another handle's commit made an item sweepable.
func TestReadSweepSkippedOnlyWhileUnchanged(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "chunk api", Body: "b"}))
		must(t)(db.Reply(ctx, dash, "chunk-api", "answer", ""))
		must(t)(db.PruneOK(ctx, gw, "chunk-api", ""))
		must(t)(db.PruneOK(ctx, dash, "chunk-api", "")) // prune-ok'd by both, not done yet

		trustedFingerprint(t, db)
		peek := ReadArgs{Channel: "gw--dash", Limit: 50, Peek: true}
		must(t)(db.Read(ctx, dash, peek))
		ran := db.sweeps.runs.Load()
		must(t)(db.Inbox(ctx, gw))
		must(t)(db.Read(ctx, dash, peek))
		// A team store keeps no memo of its sweeps (readSweep): each read
		// sweeps.
		if got := db.sweeps.runs.Load(); !isPostgres(db) && got != ran {
			t.Fatalf("%d more sweeps with nothing committed since one found nothing", got-ran)
		}

		// Another handle (another process, as far as SQLite knows) makes the
		// item done: now unanimous prune-ok, so sweepable.
		other := secondHandle(t, db)
		must(t)(other.Resolve(ctx, gw, "chunk-api", "", false, ""))
		trustedFingerprint(t, db)
		r, err := db.Read(ctx, dash, peek)
		if err != nil || !reflect.DeepEqual(r.ArchivedByThisRead, []string{"chunk-api"}) {
			t.Fatalf("read after another handle's resolve swept %+v, %v; want chunk-api archived", r.ArchivedByThisRead, err)
		}
	})
}

// sweepableAfterResolve is a database whose item chunk-api is prune-ok'd by
// both consumers but not done, with a trusted fingerprint and the memo of a
// sweep that found nothing; a resolve makes the item sweepable.
func sweepableAfterResolve(t *testing.T) (*DB, *DB) {
	t.Helper()
	db := world(t)
	ctx := context.Background()
	must(t)(db.Ask(ctx, gw, AskArgs{Title: "chunk api", Body: "b"}))
	must(t)(db.Reply(ctx, dash, "chunk-api", "answer", ""))
	must(t)(db.PruneOK(ctx, gw, "chunk-api", ""))
	must(t)(db.PruneOK(ctx, dash, "chunk-api", ""))
	fingerprint(t, db)
	must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 50, Peek: true}))
	other, err := Open(ctx, db.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return db, other
}

// A commit that lands between the fingerprint and the read's snapshot is
// in the snapshot: the sweep must run on it.
func TestReadSweepRunsOnACommitBeforeTheSnapshot(t *testing.T) {
	t.Parallel()
	db, other := sweepableAfterResolve(t)
	ctx := context.Background()
	s := db.readSweep()
	must(t)(other.Resolve(ctx, gw, "chunk-api", "", false, "")) // after the fingerprint, before BEGIN
	var swept []archived
	err := db.view(ctx, func(tx *tx) error {
		p, err := tx.me(dash, false)
		if err != nil {
			return err
		}
		swept, err = s.run(tx, p)
		return err
	})
	if err != nil || len(swept) != 1 || swept[0].slug != "chunk-api" {
		t.Fatalf("swept %+v, %v; want chunk-api archived", swept, err)
	}
}

// view retries under BEGIN IMMEDIATE because another process committed
// after the first attempt's snapshot; the retry sees that commit and must
// sweep it.
func TestReadSweepRunsOnTheRetrysSnapshot(t *testing.T) {
	t.Parallel()
	db, other := sweepableAfterResolve(t)
	ctx := context.Background()
	s := db.readSweep()
	attempt := 0
	var swept []archived
	err := db.view(ctx, func(tx *tx) error {
		attempt++
		p, err := tx.me(dash, false)
		if err != nil {
			return err
		}
		if swept, err = s.run(tx, p); err != nil {
			return err
		}
		if attempt == 1 {
			must(t)(other.Resolve(ctx, gw, "chunk-api", "", false, ""))
		}
		// A write on the first attempt's stale snapshot fails with a busy
		// snapshot error, and view runs the function again.
		_, err = tx.exec(`UPDATE parties SET last_seen = ? WHERE id = ?`, tx.now, p.id)
		return err
	})
	if attempt != 2 {
		t.Fatalf("%d attempts, want the write to force one retry", attempt)
	}
	if err != nil || len(swept) != 1 || swept[0].slug != "chunk-api" {
		t.Fatalf("the retry swept %+v, %v; want chunk-api archived", swept, err)
	}
}
