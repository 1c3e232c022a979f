//go:build unix

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// Two handles on one database stand for two processes: each has its own
// lock file handle, as separate processes would.
func queues(t *testing.T, n int) []*writerQueue {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chat.db")
	var qs []*writerQueue
	for range n {
		q := newWriterQueue(path)
		t.Cleanup(q.close)
		qs = append(qs, q)
	}
	return qs
}

func mustAcquire(t *testing.T, q *writerQueue) func() {
	t.Helper()
	release, err := q.acquire(context.Background(), time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return release
}

func mustWait(t *testing.T, q *writerQueue, why string) {
	t.Helper()
	if _, err := q.acquire(context.Background(), time.Now().Add(50*time.Millisecond)); !errors.Is(err, engine.ErrBusy) {
		t.Fatalf("%s: got %v, want ErrBusy", why, err)
	}
}

// A writer queued behind another is let in by the release itself.
func TestWriterQueueHandsOverOnRelease(t *testing.T) {
	qs := queues(t, 2)
	release := mustAcquire(t, qs[0])
	mustWait(t, qs[1], "while the first writer holds the queue")
	got := make(chan error)
	go func() {
		release, err := qs[1].acquire(context.Background(), time.Now().Add(10*time.Second))
		if err == nil {
			release()
		}
		got <- err
	}()
	select {
	case <-got:
		t.Fatal("the second writer got in while the first held the queue")
	case <-time.After(20 * time.Millisecond):
	}
	release()
	if err := <-got; err != nil {
		t.Fatalf("the queued writer, after the release: %v", err)
	}
}

// A wait that timed out leaves its flock in flight; the kernel grants it
// later, and with nobody waiting the process must let it go at once — and
// never let its next writer in beside another process's.
func TestWriterQueueAbandonedWaitKeepsItExclusive(t *testing.T) {
	qs := queues(t, 3)
	first := mustAcquire(t, qs[0])
	mustWait(t, qs[1], "behind the first writer") // abandons a blocked flock
	first()
	third := mustAcquire(t, qs[2])
	mustWait(t, qs[1], "the process whose wait was abandoned, while the third writer holds the queue")
	mustWait(t, qs[0], "the first writer again, while the third holds the queue")
	third()
	mustAcquire(t, qs[1])()
}

// Timed-out waits share one flock in flight: a stuck holder does not make
// a waiting process pile up blocked threads and file handles.
func TestWriterQueueKeepsOneWaitInFlight(t *testing.T) {
	qs := queues(t, 2)
	release := mustAcquire(t, qs[0])
	before := runtime.NumGoroutine()
	for range 30 {
		if _, err := qs[1].acquire(context.Background(), time.Now().Add(2*time.Millisecond)); !errors.Is(err, engine.ErrBusy) {
			t.Fatalf("got %v, want ErrBusy", err)
		}
	}
	if grew := runtime.NumGoroutine() - before; grew > 1 {
		t.Fatalf("30 timed-out waits left %d goroutines blocked in flock, want at most 1", grew)
	}
	release()
	mustAcquire(t, qs[1])()
}

// A deadline already passed gives up at once, with nothing left in flight.
func TestWriterQueuePastDeadline(t *testing.T) {
	qs := queues(t, 2)
	defer mustAcquire(t, qs[0])()
	before := runtime.NumGoroutine()
	if _, err := qs[1].acquire(context.Background(), time.Now().Add(-time.Second)); !errors.Is(err, engine.ErrBusy) {
		t.Fatalf("got %v, want ErrBusy", err)
	}
	if runtime.NumGoroutine() != before {
		t.Fatal("a wait past its deadline left a flock in flight")
	}
}

func TestWriterQueueCancelled(t *testing.T) {
	qs := queues(t, 2)
	defer mustAcquire(t, qs[0])()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := qs[1].acquire(ctx, time.Now().Add(10*time.Second)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
}

// Where the lock file cannot be made, writers go on without the queue.
func TestWriterQueueOffWithoutItsFile(t *testing.T) {
	q := newWriterQueue(filepath.Join(t.TempDir(), "missing-folder", "chat.db"))
	for range 2 {
		release, err := q.acquire(context.Background(), time.Now().Add(time.Second))
		if err != nil || release == nil {
			t.Fatalf("got %v, want to go on without a queue", err)
		}
		release()
	}
}

// holdWriteLock takes SQLite's write lock on path from a connection of its
// own, as another program would (it does not queue), until release.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	conn, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetMaxOpenConns(1)
	tx, err := conn.BeginTx(context.Background(), &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE parties SET last_seen = last_seen`); err != nil {
		t.Fatal(err)
	}
	return func() { tx.Rollback(); conn.Close() }
}

// A call has one deadline for all its waiting: one that spent its budget
// elsewhere does not get a fresh busy timeout from SQLite's lock.
func TestLockWaitEndsAtTheCallsDeadline(t *testing.T) {
	e := openEngine(t, Options{BusyTimeout: time.Hour}) // what a fresh budget would wait
	defer holdWriteLock(t, e.Where())()
	done := make(chan error, 1)
	go func() {
		_, err := e.attempt(context.Background(), true, time.Now().Add(10*time.Millisecond), func(t engine.Tx) (*engine.Change, error) {
			_, err := t.Exec(`UPDATE parties SET last_seen = last_seen`)
			return nil, err
		})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, engine.ErrBusy) {
			t.Fatalf("got %v, want ErrBusy", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("SQLite's lock was given a budget of its own")
	}
}

// A write that waited its whole busy timeout for another program's lock
// gives up, writes nothing, and its error names the timeout it had.
func TestBusyErrorNamesTheTimeout(t *testing.T) {
	e := openEngine(t, Options{BusyTimeout: 20 * time.Millisecond})
	ctx := context.Background()
	release := holdWriteLock(t, e.Where())
	err := addParty(ctx, e, "during-the-lock")
	if !errors.Is(err, engine.ErrBusy) || !strings.Contains(err.Error(), "write lock for 20ms — nothing was written; retry") {
		t.Fatalf("got %v, want ErrBusy naming 20ms", err)
	}
	release()
	if err := addParty(ctx, e, "after-the-lock"); err != nil {
		t.Fatalf("after the lock: %v", err)
	}
}

func TestWaitForLock(t *testing.T) {
	wait := waitForLock(engine.DefaultBusyTimeout)
	past := withLockDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	if wait(past, 0) {
		t.Error("retried past the call's deadline")
	}
	if !wait(withLockDeadline(context.Background(), time.Now().Add(time.Minute)), 3) {
		t.Error("gave up before the call's deadline")
	}
	if !wait(context.Background(), 0) {
		t.Error("without a deadline, the first wait must retry (the busy timeout from now)")
	}
}

// A symlink planted at chat.db.lock is not followed: opening it created a
// file wherever it pointed. The writes go on, queued by SQLite alone.
func TestQueueRefusesASymlinkedLockFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat.db")
	target := filepath.Join(t.TempDir(), "created-by-us")
	if err := os.Symlink(target, path+".lock"); err != nil {
		t.Fatal(err)
	}
	e, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := addParty(context.Background(), e, "a"); err != nil {
		t.Fatalf("a write with the lock file refused: %v", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Fatal("the lock file's symlink was followed: its target was created")
	}
}
