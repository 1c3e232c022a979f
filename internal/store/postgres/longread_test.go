package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// Long reads share the pool's turns within bounds: at most two per party,
// all but two of the turns in all (at least one), the rest waiting in the
// order they came — and a party under its share is not kept behind
// another's queue. A waiter leaves with its context, and fails busy only
// when no long read ended for its patience.
func TestLongReadsShare(t *testing.T) {
	ctx := context.Background()
	for turns, want := range map[int]int{1: 1, 2: 1, 3: 1, 8: 6} {
		if got := newLongReads(turns).max; got != want {
			t.Errorf("a pool of %d lets %d long reads run at once, want %d", turns, got, want)
		}
	}
	l := newLongReads(8)
	now := func(party string) func() {
		t.Helper()
		done, err := l.admit(ctx, party, time.Minute)
		if err != nil {
			t.Fatalf("a long read of %s: %v", party, err)
		}
		return done
	}
	queued := func(party string) chan func() {
		t.Helper()
		in := make(chan func(), 1)
		go func() {
			done, err := l.admit(ctx, party, time.Minute)
			if err != nil {
				t.Errorf("a long read of %s: %v", party, err)
				return
			}
			in <- done
		}()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			l.mu.Lock()
			n := len(l.queue)
			last := n > 0 && l.queue[n-1].party == party
			l.mu.Unlock()
			if last {
				return in
			}
			if time.Now().After(deadline) {
				t.Fatalf("a long read of %s did not queue", party)
			}
		}
	}
	letIn := func(in chan func(), what string) func() {
		t.Helper()
		select {
		case done := <-in:
			return done
		case <-time.After(time.Minute):
			t.Fatalf("%s was not let in", what)
			return nil
		}
	}
	stillOut := func(in chan func(), what string) {
		t.Helper()
		select {
		case <-in:
			t.Fatalf("%s was let in", what)
		default:
		}
	}

	a1, a2 := now("a"), now("a")
	a3 := queued("a") // a's share is taken
	b1, b2, c1, c2 := now("b"), now("b"), now("c"), now("c")
	d1 := queued("d") // six: the pool's share is taken
	a2()
	a3done := letIn(a3, "a's waiting read, when one of a's ended")
	stillOut(d1, "a read of d with the pool's share taken again")
	c1()
	d1done := letIn(d1, "d's read, when one of c's ended")
	a4 := queued("a") // a1 and a3 run
	d1done()
	e := now("e") // under its share, and so is the pool: it does not wait behind a4
	stillOut(a4, "a third read of a")
	a1()
	a4done := letIn(a4, "a's waiting read, when one of a's ended")
	for _, done := range []func(){a3done, a4done, b1, b2, c2, e} {
		done()
	}
	if len(l.queue) != 0 || l.running != 0 || len(l.byParty) != 0 {
		t.Fatalf("%d waiting, %d running (%v) after every read ended", len(l.queue), l.running, l.byParty)
	}

	l = newLongReads(3)
	first := now("x")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.admit(cancelled, "y", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	if _, err := l.admit(ctx, "y", time.Millisecond); !errors.Is(err, engine.ErrBusy) || !strings.Contains(err.Error(), "searches and long reads") {
		t.Fatalf("a waiter behind a read that never ends: %v, want busy naming the long reads", err)
	}
	first()
	if len(l.queue) != 0 || l.running != 0 {
		t.Fatalf("%d waiting and %d running after every read ended", len(l.queue), l.running)
	}
}
