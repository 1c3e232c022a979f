package store

import (
	"sync"
	"time"
)

// notifyDelay is how long a commit's change waits before OnCommit sees it.
// The tick file costs a file creation and a rename (about 0.2 ms of kernel
// time here); written at once it competes with the answer the caller is
// waiting for, up to half a millisecond of a write call over MCP
// (docs/performance.md). Waiting a little puts it after the answer and
// folds a burst of commits into one tick. Ticks of different processes can
// then cross; WriteTick never lets the file go back to an earlier write. Nothing wakes on the tick's
// timing: chat_wait and the hook watch the database's -wal as well, and a
// person watching the file does not see 10 ms.
const notifyDelay = 10 * time.Millisecond

// notifier runs OnCommit off the caller's path, notifyDelay after a commit,
// with the newest change when several came in that time (the tick file
// names the newest change anyway). Changes are delivered in commit order;
// flush delivers what is pending at once and returns when it is done.
type notifier struct {
	mu      sync.Mutex
	pending *Change
	running bool
	done    sync.WaitGroup
	hurry   chan struct{} // closed by flush: deliver without the delay
	delay   time.Duration // notifyDelay; tests change it
}

// post queues c for deliver, replacing a change not yet delivered.
func (n *notifier) post(c Change, deliver func(Change)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pending = &c
	if n.running {
		return
	}
	n.running = true
	n.done.Add(1)
	go n.drain(deliver, n.hurried())
}

// hurried is the channel flush closes; n.mu must be held.
func (n *notifier) hurried() chan struct{} {
	if n.hurry == nil {
		n.hurry = make(chan struct{})
	}
	return n.hurry
}

func (n *notifier) drain(deliver func(Change), hurry <-chan struct{}) {
	defer n.done.Done()
	for {
		n.pause(hurry)
		n.mu.Lock()
		c := n.pending
		n.pending = nil
		if c == nil {
			n.running = false
			n.mu.Unlock()
			return
		}
		n.mu.Unlock()
		deliver(*c)
	}
}

// pause waits out the delay, or less once flush is called.
func (n *notifier) pause(hurry <-chan struct{}) {
	if n.delay <= 0 {
		return
	}
	t := time.NewTimer(n.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-hurry:
	}
}

// flush delivers what is pending without the delay and returns once every
// posted change is delivered. Later posts are delivered without delay.
func (n *notifier) flush() {
	n.mu.Lock()
	select {
	case <-n.hurried():
	default:
		close(n.hurry)
	}
	n.mu.Unlock()
	n.done.Wait()
}
