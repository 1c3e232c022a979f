package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

// Calls waiting for a full pool have their turns in the order they came:
// forty calls queue, each a moment after the one before, behind the one
// connection of a pool of one. database/sql alone hands a freed
// connection to a random waiter, so that some calls of a busy hub waited
// many times as long as the rest.
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
		time.Sleep(20 * time.Millisecond) // in the queue before the next asks
	}
	first.Close()
	release()
	wg.Wait()
	close(served)
	var order []int
	for i := range served {
		order = append(order, i)
	}
	// Goroutines start late on a loaded machine, so neighbours may swap;
	// the first ten asked must still all be served before the last ten.
	for pos, i := range order {
		if i < 10 && pos >= waiters-10 {
			t.Fatalf("turns went in the order %v: call %d of the first ten asked was served among the last ten", order, i)
		}
	}
}
