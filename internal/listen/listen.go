// Package listen wakes the waiters of a team store. PostgreSQL announces
// every commit that changed something on postgres.NotifyChannel; a Listener
// hears it on a connection of its own and closes the channel its waiters
// hold, as the file watcher does for a database file.
//
// A waiter that names the clock keys of what it sees (store.WaitKeys:
// its channels, its party) is woken only by the commits that name one of
// them, so a team's thousand waiters are not all woken by every say; one
// that names none is woken by every commit.
//
// Notifications sent while the connection is down are lost, so whenever
// it drops (a server restarted, a network cut) every waiter is woken to
// look for itself, and the listener reconnects. A slow poll of the
// clocks is the safety net for whatever the notifications miss (a write
// that announces nothing, a process of an older release): it wakes the
// waiters of the keys that moved since it last looked.
package listen

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpp/mcpp-chat/internal/store/postgres"
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
	keyed      interests
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

// NextOf is a channel closed at the next change that may concern one of
// keys, and a stop that forgets the wish (call it once done waiting).
// Without keys it is Next.
func (l *Listener) NextOf(keys []int64) (<-chan struct{}, func()) {
	if len(keys) == 0 {
		return l.Next(), func() {}
	}
	l.Next() // starts the listener, or knows it closed
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return make(chan struct{}), func() {}
	}
	in := l.keyed.add(keys)
	return in.ch, func() { l.keyed.remove(in) }
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

// run keeps a connection listening until ctx ends.
func (l *Listener) run(ctx context.Context) {
	defer close(l.done)
	for ctx.Err() == nil {
		l.listen(ctx)
		// Down: what was announced meanwhile is lost; let every waiter
		// look, then try again.
		l.wakeAll()
		select {
		case <-ctx.Done():
		case <-time.After(l.retryEvery):
		}
	}
}

// wakeAll wakes every waiter, whatever keys it named.
func (l *Listener) wakeAll() {
	l.changed.Notify()
	l.keyed.fireAll()
}

// listen connects, listens and wakes the waiters at each notification,
// and polls the clocks on the same connection whenever none came for
// pollEvery, until the connection fails or ctx ends.
func (l *Listener) listen(ctx context.Context) {
	conn, err := pgx.Connect(ctx, l.url)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+postgres.NotifyChannel); err != nil {
		return
	}
	clocks, _ := readClocks(ctx, conn)
	// Listening now: whatever was committed before may not have been
	// heard by anyone.
	l.wakeAll()
	if l.listening != nil {
		l.listening()
	}
	for {
		waitCtx, cancel := context.WithTimeout(ctx, l.pollEvery)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case err == nil:
			l.announced(n.Payload)
		case ctx.Err() == nil && waitCtx.Err() != nil && pgconn.Timeout(err) && !conn.IsClosed():
			if clocks, err = l.poll(ctx, conn, clocks); err != nil {
				return
			}
		default:
			return
		}
	}
}

// announced wakes the waiters of a commit's notification: those of the
// keys it names (postgres.announcement), or every waiter when it names none
// (another release's) or the person's commands (key 0).
func (l *Listener) announced(payload string) {
	l.changed.Notify()
	keys, ok := postgres.AnnouncedKeys(payload)
	if !ok || slices.Contains(keys, 0) {
		l.keyed.fireAll()
		return
	}
	l.keyed.fire(keys)
}

// poll reads the clocks and wakes the waiters of every key that moved
// since before; nothing moved, nobody is woken.
func (l *Listener) poll(ctx context.Context, conn *pgx.Conn, before map[int64]int64) (map[int64]int64, error) {
	now, err := readClocks(ctx, conn)
	if err != nil {
		return before, err
	}
	var moved []int64
	for k, n := range now {
		if before[k] != n {
			moved = append(moved, k)
		}
	}
	switch {
	case before == nil || slices.Contains(moved, 0) || slices.Contains(moved, oldClock):
		l.wakeAll()
	case len(moved) > 0:
		l.changed.Notify()
		l.keyed.fire(moved)
	}
	return now, nil
}

// oldClock stands in the clocks read for the store-wide counter that
// releases before the per-channel clocks bump: when it moves, every
// waiter looks.
const oldClock = -1 << 62

// readClocks reads every clock of the store, the old counter among them.
func readClocks(ctx context.Context, conn *pgx.Conn) (map[int64]int64, error) {
	rows, err := conn.Query(ctx, `SELECT key, n FROM store_clocks UNION ALL SELECT $1, n FROM store_clock`, int64(oldClock))
	if err != nil {
		return nil, err
	}
	clocks := map[int64]int64{}
	for rows.Next() {
		var k, n int64
		if err := rows.Scan(&k, &n); err != nil {
			rows.Close()
			return nil, err
		}
		clocks[k] = n
	}
	return clocks, rows.Err()
}

// interests are the waiters that named keys: each is woken, and
// forgotten, at the first change to any of its keys.
type interests struct {
	mu sync.Mutex
	by map[int64]map[*interest]struct{}
}

type interest struct {
	keys []int64
	ch   chan struct{}
}

func (s *interests) add(keys []int64) *interest {
	in := &interest{keys: keys, ch: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[int64]map[*interest]struct{}{}
	}
	for _, k := range keys {
		if s.by[k] == nil {
			s.by[k] = map[*interest]struct{}{}
		}
		s.by[k][in] = struct{}{}
	}
	return in
}

// remove forgets in; the caller no longer waits on it.
func (s *interests) remove(in *interest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(in)
}

func (s *interests) forget(in *interest) {
	for _, k := range in.keys {
		delete(s.by[k], in)
		if len(s.by[k]) == 0 {
			delete(s.by, k)
		}
	}
}

// fire wakes and forgets the waiters of keys.
func (s *interests) fire(keys []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		for in := range s.by[k] {
			close(in.ch)
			s.forget(in)
		}
	}
}

// fireAll wakes and forgets every waiter.
func (s *interests) fireAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, set := range s.by {
		for in := range set {
			select {
			case <-in.ch:
			default:
				close(in.ch)
			}
		}
	}
	s.by = nil
}
