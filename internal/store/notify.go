package store

import "sync"

// notifier runs OnCommit off the caller's path. Writing the tick file
// right after an fsync'd commit costs a file creation and a rename, which
// the file system's journal makes wait for that commit: half a millisecond
// or more of every write call's answer (docs/performance.md). So the
// change is handed to a goroutine that delivers changes in commit order,
// keeping only the newest when several wait (the tick file names the
// newest change anyway); Close waits for the last delivery.
type notifier struct {
	mu      sync.Mutex
	pending *Change
	running bool
	done    sync.WaitGroup
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
	go n.drain(deliver)
}

func (n *notifier) drain(deliver func(Change)) {
	defer n.done.Done()
	for {
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

// wait returns once every posted change is delivered.
func (n *notifier) wait() { n.done.Wait() }
