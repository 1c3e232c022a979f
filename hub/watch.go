package hub

import (
	"context"
	"sync"
	"time"

	"github.com/mcpp/mcpp-chat/internal/wake"
)

// Watcher follows the hub's state from a member machine by long-polling
// /v1/wait, and wakes its waiters at each change, as wake.Watcher does
// for a database file: chat_wait's peers, watch, the hook's cache and the
// tick file on this machine.
type Watcher struct {
	c *Client
	// OnPoll, if set before the first Next, is told the state (its
	// ETag) after each poll that reached the hub, and whether it is new
	// (the first is); it runs on the watcher's own goroutine.
	OnPoll func(etag string, changed bool)
	// OnError, if set, is told each failed poll; the watcher retries,
	// backing off up to MaxBackoff.
	OnError func(error)

	changed wake.Broadcast
	once    sync.Once
	ctx     context.Context
	stop    context.CancelFunc
	done    chan struct{}
}

// MaxBackoff is the longest pause between polls of a hub that fails.
const MaxBackoff = 10 * time.Second

// pollTimeout is how long each poll waits on the hub.
const pollTimeout = 45 * time.Second

// Watch is a watcher of the hub; it starts polling at the first Next
// (or Start).
func (c *Client) Watch() *Watcher {
	ctx, stop := context.WithCancel(context.Background())
	return &Watcher{c: c, ctx: ctx, stop: stop, done: make(chan struct{})}
}

// Next is a channel closed at the next change the hub reports; the first
// Next's at the first answer. It takes its channel before it starts the
// poller: an answer that came in between would have woken nobody, and
// the waiter would have slept until the following change.
func (w *Watcher) Next() <-chan struct{} {
	next := w.changed.Next()
	w.Start()
	return next
}

// Start begins polling, if it has not begun.
func (w *Watcher) Start() {
	w.once.Do(func() { go w.run() })
}

// Close stops polling and waits for the poller to end.
func (w *Watcher) Close() error {
	w.stop()
	w.once.Do(func() { close(w.done) }) // never started: nothing to wait for
	<-w.done
	return nil
}

func (w *Watcher) run() {
	defer close(w.done)
	etag, backoff := "", time.Duration(0)
	for w.ctx.Err() == nil {
		tag, err := w.c.Wait(w.ctx, etag, pollTimeout)
		if err != nil {
			if w.ctx.Err() != nil {
				return
			}
			if w.OnError != nil {
				w.OnError(err)
			}
			backoff = min(max(2*backoff, 250*time.Millisecond), MaxBackoff)
			select {
			case <-time.After(backoff):
			case <-w.ctx.Done():
				return
			}
			// Whatever happened while the hub was out of reach is news.
			etag = ""
			continue
		}
		backoff = 0
		changed := tag != etag
		etag = tag
		if w.OnPoll != nil {
			w.OnPoll(tag, changed)
		}
		if changed {
			// The first answer too: a change between a waiter's look
			// and this poll's start must not wait for the next one.
			w.changed.Notify()
		}
	}
}
