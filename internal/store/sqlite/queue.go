package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// writerQueue lines up the writers of every process on this machine that
// use one database, in the kernel: an exclusive flock on a file beside the
// database, taken before BEGIN IMMEDIATE and released after the commit.
//
// SQLite alone makes waiting writers poll its lock, every millisecond or
// two: eight busy servers spend much of two cores polling, and the lock
// sits idle between a release and the next poll. A writer blocked in flock
// uses no CPU and is woken by the release itself. The queue is only an
// optimisation: SQLite's own locking still guards every transaction, so a
// process that does not queue (the Python edition, a file system without
// flock) is merely not helped by it.
//
// A blocked flock cannot be cancelled. So a process keeps at most one in
// flight: a writer whose deadline passes leaves it pending, the next writer
// of the process waits on that same request (keeping its place in the
// kernel's queue), and a grant that finds nobody waiting is let go at once.
// The process's writer slot (DB.writer) admits one acquirer at a time.
type writerQueue struct {
	path string

	mu      sync.Mutex
	f       *os.File   // nil until first used
	off     bool       // flock cannot work here: do without
	pending chan error // the flock in flight, if any; it delivers its result once
	waiting bool       // an acquirer waits for pending's result
	closed  bool
}

func newWriterQueue(dbPath string) *writerQueue {
	return &writerQueue{path: dbPath + ".lock"}
}

// acquire waits for this process's turn among the database's writers until
// the deadline, and returns the function that ends the turn. Where the
// queue cannot work, it returns at once and the caller relies on SQLite
// alone; when the wait times out, err is ErrBusy (or the context's error).
func (q *writerQueue) acquire(ctx context.Context, deadline time.Time) (release func(), err error) {
	q.mu.Lock()
	f, ok := q.file()
	if !ok {
		q.mu.Unlock()
		return func() {}, nil // no queue: SQLite's busy handler alone
	}
	if q.pending == nil {
		switch err := tryLock(f); {
		case err == nil:
			q.mu.Unlock()
			return func() { unlock(f) }, nil
		case !errors.Is(err, errLocked):
			q.turnOff()
			q.mu.Unlock()
			return func() {}, nil
		case !time.Now().Before(deadline):
			q.mu.Unlock()
			return nil, engine.ErrBusy
		}
		q.pending = make(chan error, 1)
		go q.lockInBackground(f, q.pending)
	}
	granted := q.pending
	q.waiting = true
	q.mu.Unlock()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case err := <-granted:
		return q.taken(f, err)
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = engine.ErrBusy
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting = false
	select {
	case lockErr := <-granted: // granted while we gave up: let it go
		q.pending = nil
		if lockErr == nil {
			unlock(f)
		}
	default: // still in flight: lockInBackground lets it go, or hands it to the next writer
	}
	return nil, err
}

// lockInBackground blocks in flock and hands the result to the waiting
// acquirer, or, with nobody waiting any more, lets the lock go at once.
func (q *writerQueue) lockInBackground(f *os.File, result chan error) {
	err := lock(f)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.waiting {
		result <- err
		return
	}
	q.pending = nil
	if err == nil {
		unlock(f)
	}
	if q.closed {
		f.Close()
	}
}

func (q *writerQueue) taken(f *os.File, err error) (func(), error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending, q.waiting = nil, false
	if err != nil {
		q.turnOff()
		return func() {}, nil
	}
	return func() { unlock(f) }, nil
}

// file opens the lock file on first use. Called with q.mu held.
func (q *writerQueue) file() (*os.File, bool) {
	if q.off || q.closed {
		return nil, false
	}
	if q.f == nil {
		// Never through a symlink: one planted here would make us create
		// or lock a file wherever it points.
		f, err := os.OpenFile(q.path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
		if err != nil {
			// A folder that refuses the file stays so; anything else (out
			// of file descriptors, say) may pass: try again next time.
			if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) ||
				errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ELOOP) {
				q.off = true
			}
			return nil, false
		}
		q.f = f
	}
	return q.f, true
}

// turnOff gives up on the queue for this handle. Called with q.mu held.
func (q *writerQueue) turnOff() {
	q.off = true
	if q.f != nil && q.pending == nil {
		q.f.Close()
		q.f = nil
	}
}

// close releases the lock file; a flock still in flight closes it when it
// returns.
func (q *writerQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if q.f != nil && q.pending == nil {
		q.f.Close()
	}
	q.f = nil
}
