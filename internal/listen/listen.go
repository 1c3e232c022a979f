// Package listen wakes the waiters of a team store. PostgreSQL announces
// every commit that changed something on store.NotifyChannel; a Listener
// hears it on a connection of its own and closes the channel its waiters
// hold, as the file watcher does for a database file.
//
// Notifications sent while the connection is down are lost, so whenever
// it drops (a server restarted, a network cut) every waiter is woken to
// look for itself, and the listener reconnects. A slow poll wakes them
// too: the safety net for whatever the notifications miss.
package listen

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"
)

// Defaults of a Listener's times.
const (
	// PollEvery wakes every waiter even without a notification.
	PollEvery = 2 * time.Second
	// RetryEvery is the pause between attempts to reconnect.
	RetryEvery = 500 * time.Millisecond
)

// Listener hears a team store's commits. It connects at the first Next,
// so a process that never waits holds no connection.
type Listener struct {
	url        string
	pollEvery  time.Duration
	retryEvery time.Duration
	changed    wake.Broadcast
	// listening, if set, is told each time a connection starts listening
	// (after its waiters were woken): tests wait for it.
	listening func()

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when run has ended
}

// New returns a listener of the team store at url.
func New(url string) *Listener {
	return &Listener{url: url, pollEvery: PollEvery, retryEvery: RetryEvery, done: make(chan struct{})}
}

// Next returns a channel closed at the next change after this call. After
// Close it returns a channel that never closes: a waiter then ends by its
// own context.
func (l *Listener) Next() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return make(chan struct{})
	}
	if !l.started {
		l.started = true
		var ctx context.Context
		ctx, l.cancel = context.WithCancel(context.Background())
		go l.run(ctx)
	}
	return l.changed.Next()
}

// Close stops listening and waits for the connection to close.
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	started := l.started
	l.mu.Unlock()
	if started {
		l.cancel()
		<-l.done
	}
	return nil
}

// run keeps a connection listening until ctx ends, and polls beside it.
func (l *Listener) run(ctx context.Context) {
	defer close(l.done)
	go l.poll(ctx)
	for ctx.Err() == nil {
		l.listen(ctx)
		// Down: what was announced meanwhile is lost; let every waiter
		// look, then try again.
		l.changed.Notify()
		select {
		case <-ctx.Done():
		case <-time.After(l.retryEvery):
		}
	}
}

// listen connects, listens and wakes the waiters at each notification,
// until the connection fails or ctx ends.
func (l *Listener) listen(ctx context.Context) {
	conn, err := pgx.Connect(ctx, l.url)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+store.NotifyChannel); err != nil {
		return
	}
	// Listening now: whatever was committed before may not have been
	// heard by anyone.
	l.changed.Notify()
	if l.listening != nil {
		l.listening()
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return
		}
		l.changed.Notify()
	}
}

func (l *Listener) poll(ctx context.Context) {
	t := time.NewTicker(l.pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.changed.Notify()
		}
	}
}
