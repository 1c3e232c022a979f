package postgres

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

// Calls waiting for a full pool have their turns in the order they came:
// forty calls queue, each once the one before waits, behind the one
// connection of a pool of one, and are served in that order.
// database/sql alone hands a freed connection to a random waiter, so that
// some calls of a busy hub waited many times as long as the rest.
func TestPoolTurnsGoInTheOrderAsked(t *testing.T) {
	ctx := context.Background()
	e, err := Open(ctx, pgtest.URL(t), Options{MaxConns: 1, BusyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	first, release, err := e.conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 40
	served := make(chan int, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			conn, release, err := e.conn(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			served <- i
			conn.Close()
			release()
		})
		waitQueued(t, i+1) // in the queue before the next asks
	}
	first.Close()
	release()
	wg.Wait()
	close(served)
	var order []int
	for i := range served {
		order = append(order, i)
	}
	for pos, i := range order {
		if i != pos {
			t.Fatalf("turns went in the order %v: call %d was served as number %d", order, i, pos)
		}
	}
}

// waitQueued waits until n calls wait for a connection: their goroutines
// are parked inside conn — in turn's select, in the channel's queue of
// senders, which is first come first served.
func waitQueued(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); queued() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued for a connection, want %d", queued(), n)
		}
	}
}

// queued is how many goroutines are parked inside (*Engine).conn.
func queued() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		running := strings.Contains(header, "[running") || strings.Contains(header, "[runnable") || strings.Contains(header, "[syscall")
		if !running && strings.Contains(g, ".(*Engine).conn(") {
			n++
		}
	}
	return n
}
