package listen

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"

	"github.com/mcpp/mcpp-chat/internal/store/postgres"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// generous bounds a wait that must end; it only catches a hang.
const generous = 20 * time.Second

// quiet is a listener whose poll never fires during a test: what wakes
// its waiters is the notification, or the reconnection. Its channel hears
// each time it starts listening.
func quiet(url string) (*Listener, chan struct{}) {
	l := New(url)
	l.pollEvery = time.Hour
	l.retryEvery = 20 * time.Millisecond
	listening := make(chan struct{}, 10)
	l.listening = func() { listening <- struct{}{} }
	return l, listening
}

func woken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(generous):
		t.Fatalf("not woken by %s within %v", what, generous)
	}
}

// listeningNow starts the listener (the first Next) and waits until it
// listens, so that the next wake-up is a write's.
func listeningNow(t *testing.T, l *Listener, listening <-chan struct{}) {
	t.Helper()
	l.Next()
	woken(t, listening, "the start of listening")
}

// A commit by another process's handle wakes a waiter through NOTIFY.
func TestWriteWakesAWaiter(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	db, err := store.OpenPostgres(ctx, u, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, listening := quiet(u)
	defer l.Close()
	listeningNow(t, l, listening)
	next := l.Next()
	select {
	case <-next:
		t.Fatal("woken with nothing written")
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := db.Register(ctx, store.Identity{Name: "mesh-gw", Workspace: "/srv/mesh-gw"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ChannelNew(ctx, store.Identity{Name: "mesh-gw", Workspace: "/srv/mesh-gw"}, "solo", "", nil); err != nil {
		t.Fatal(err)
	}
	woken(t, next, "a commit")
}

// The server restarted under a waiter: it is woken (notifications sent
// while the connection was down are lost, so it must look), the listener
// reconnects, and the next write wakes the next waiter again.
func TestRestartWakesAndListensAgain(t *testing.T) {
	srv := pgtest.Own(t)
	ctx := context.Background()
	u := srv.URL("postgres")
	db, err := store.OpenPostgres(ctx, u, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, listening := quiet(u)
	defer l.Close()
	listeningNow(t, l, listening)
	next := l.Next()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	woken(t, next, "the lost connection")
	woken(t, listening, "listening again")
	next = l.Next()
	me := store.Identity{Name: "mesh-gw", Workspace: "/srv/mesh-gw"}
	// The handle's pooled connections died with the server; the write
	// runs again on a new one.
	if _, err := db.Register(ctx, me); err != nil {
		t.Fatalf("writing after the restart: %v", err)
	}
	if _, err := db.ChannelNew(ctx, me, "after-restart", "", nil); err != nil { // a party alone announces nothing
		t.Fatal(err)
	}
	woken(t, next, "a commit after the restart")
}

// Close ends the listener; Next after it never closes.
func TestCloseStops(t *testing.T) {
	l, listening := quiet(pgtest.URL(t))
	listeningNow(t, l, listening)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Next():
		t.Fatal("Next after Close closed")
	case <-time.After(50 * time.Millisecond):
	}
}

// team is a store with gw seated with dash in gw-dash and with fw in
// gw-fw.
func team(t *testing.T, u string) (db *store.DB, gw, dash, fw store.Identity) {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenPostgres(ctx, u, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	gw = store.Identity{Name: "mesh-gw", Workspace: "/srv/mesh-gw"}
	dash = store.Identity{Name: "node-dash", Workspace: "/srv/node-dash"}
	fw = store.Identity{Name: "fw-core", Workspace: "/srv/fw-core"}
	for _, p := range []store.Identity{gw, dash, fw} {
		if _, err := db.Register(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ChannelNew(ctx, gw, "gw-dash", "", []string{"node-dash"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ChannelNew(ctx, gw, "gw-fw", "", []string{"fw-core"}); err != nil {
		t.Fatal(err)
	}
	return db, gw, dash, fw
}

func waitKeys(t *testing.T, db *store.DB, p store.Identity) []int64 {
	t.Helper()
	keys, err := db.WaitKeys(context.Background(), p)
	if err != nil || len(keys) == 0 {
		t.Fatalf("WaitKeys(%s) = %v, %v", p.Name, keys, err)
	}
	return keys
}

func notWoken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("woken by %s", what)
	default:
	}
}

// A waiter that names its keys is woken by a say in its channel and not
// by one in another; by a channel another party seats it in; and by an
// announcement of an older release, which names no keys.
func TestKeyedWaitersHearOnlyWhatConcernsThem(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	db, gw, dash, fw := team(t, u)
	l, listening := quiet(u)
	defer l.Close()
	listeningNow(t, l, listening)

	mine, stop := l.NextOf(waitKeys(t, db, dash))
	defer stop()
	heard := l.Next() // every announcement closes it: proof this one arrived
	if _, err := db.Say(ctx, gw, store.SayArgs{Channel: "gw-fw", Text: "not for dash"}); err != nil {
		t.Fatal(err)
	}
	woken(t, heard, "the say in gw-fw")
	notWoken(t, mine, "a say in a channel node-dash is not in")
	if _, err := db.Say(ctx, gw, store.SayArgs{Channel: "gw-dash", Text: "for dash"}); err != nil {
		t.Fatal(err)
	}
	woken(t, mine, "a say in gw-dash")

	seated, stop := l.NextOf(waitKeys(t, db, dash))
	defer stop()
	if _, err := db.ChannelNew(ctx, fw, "fw-dash", "", []string{"node-dash"}); err != nil {
		t.Fatal(err)
	}
	woken(t, seated, "fw-core seating node-dash in a new channel")

	old, stop := l.NextOf(waitKeys(t, db, dash))
	defer stop()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `SELECT pg_notify($1, 'gw-fw 9 mesh-gw')`, postgres.NotifyChannel); err != nil {
		t.Fatal(err)
	}
	woken(t, old, "an announcement without keys")
}

// The poll wakes the waiters of a clock that moved without an
// announcement — node-dash's cursor, moved by its read — and no others.
func TestPollWakesOnlyTheKeysThatMoved(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	db, gw, dash, fw := team(t, u)
	if _, err := db.Say(ctx, gw, store.SayArgs{Channel: "gw-dash", Text: "unread"}); err != nil {
		t.Fatal(err)
	}
	l, listening := quiet(u)
	l.pollEvery = 20 * time.Millisecond
	defer l.Close()
	listeningNow(t, l, listening)

	others, stop := l.NextOf(waitKeys(t, db, fw))
	defer stop()
	mine, stop := l.NextOf(waitKeys(t, db, dash))
	defer stop()
	if _, err := db.Read(ctx, dash, store.ReadArgs{Channel: "gw-dash", Limit: 10}); err != nil {
		t.Fatal(err)
	}
	woken(t, mine, "the poll after node-dash's read")
	pollsEnded(t, u, 3) // three more, which find nothing new
	notWoken(t, others, "node-dash's read")
}

// pollsEnded waits until n of the listener's polls that began after the
// call have ended, woken whom they wake. Each poll is one query on the
// listener's connection to the database at u, and pg_stat_activity shows
// when that connection's newest query began: a move of it is a poll
// begun, and the poll before it ended.
func pollsEnded(t *testing.T, u string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	const newestPoll = `SELECT query_start FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'SELECT key, n FROM store_clocks UNION ALL %'`
	var last time.Time
	for moves := -1; moves <= n; time.Sleep(2 * time.Millisecond) {
		var began time.Time
		err := c.QueryRow(ctx, newestPoll).Scan(&began)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) { // none yet: no row
			t.Fatalf("%d of the listener's polls seen to end within %v: %v", max(moves-1, 0), generous, err)
		}
		if moves < 0 || !began.Equal(last) {
			moves++
			last = began
		}
	}
}

// The stop of a wait forgets it: a listener does not keep the wishes of
// the waiters that gave up.
func TestStoppedWaitsAreForgotten(t *testing.T) {
	u := pgtest.URL(t)
	l, listening := quiet(u)
	defer l.Close()
	listeningNow(t, l, listening)
	for i := range 100 {
		_, stop := l.NextOf([]int64{0, int64(-i), int64(i + 1)})
		stop()
	}
	l.keyed.mu.Lock()
	defer l.keyed.mu.Unlock()
	if n := len(l.keyed.by); n != 0 {
		t.Fatalf("%d keys still held after every wait stopped", n)
	}
}
