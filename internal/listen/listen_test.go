package listen

import (
	"context"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
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
