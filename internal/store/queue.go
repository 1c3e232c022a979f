package store

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"
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
type writerQueue struct {
	path string
	mu   sync.Mutex
	f    *os.File // nil until first used, and after an abandoned wait
	off  bool     // flock does not work here: do without
}

func newWriterQueue(dbPath string) *writerQueue {
	return &writerQueue{path: dbPath + ".lock"}
}

// errQueueOff reports that the queue cannot be used on this file system.
var errQueueOff = errors.New("no writer queue")

// acquire waits for this process's turn among the database's writers until
// the deadline, and returns the function that ends the turn. Where the
// queue cannot work, it returns at once and the caller relies on SQLite
// alone; when the wait times out, err is ErrBusy (or the context's error).
func (q *writerQueue) acquire(ctx context.Context, deadline time.Time) (release func(), err error) {
	f, err := q.file()
	if err != nil {
		return func() {}, nil // no queue: SQLite's busy handler alone
	}
	switch err := tryLock(f); {
	case err == nil:
		return func() { unlock(f) }, nil
	case !errors.Is(err, errLocked):
		q.disable()
		return func() {}, nil
	}
	got := make(chan error, 1)
	go func() { got <- lock(f) }()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			q.disable()
			return func() {}, nil
		}
		return func() { unlock(f) }, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = ErrBusy
	}
	// The blocked flock cannot be cancelled. Its handle is retired: when it
	// is granted the lock, it lets go at once by closing, and the next
	// writer of this process opens a fresh handle (a second flock on the
	// same handle would share the lock instead of waiting for it).
	q.retire(f)
	go func() {
		<-got
		f.Close()
	}()
	return nil, err
}

func (q *writerQueue) file() (*os.File, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.off {
		return nil, errQueueOff
	}
	if q.f == nil {
		f, err := os.OpenFile(q.path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			q.off = true // a read-only folder, say: SQLite will tell the caller
			return nil, err
		}
		q.f = f
	}
	return q.f, nil
}

func (q *writerQueue) retire(f *os.File) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.f == f {
		q.f = nil
	}
}

func (q *writerQueue) disable() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.off = true
	if q.f != nil {
		q.f.Close()
		q.f = nil
	}
}

func (q *writerQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.f != nil {
		q.f.Close()
		q.f = nil
	}
}
