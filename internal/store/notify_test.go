package store

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A write call answers without waiting for OnCommit (the tick file), and
// OnCommit still learns of the changes in commit order, ending with the
// newest; Close waits for that last delivery.
func TestOnCommitRunsAfterTheCallInOrder(t *testing.T) {
	t.Parallel()
	db := world(t)
	ctx := context.Background()
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []int64
	db.OnCommit = func(c Change) {
		<-release
		mu.Lock()
		seen = append(seen, c.Seq)
		mu.Unlock()
	}
	var last int64
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 20; i++ {
			r, err := db.Say(ctx, gw, SayArgs{Channel: "gw--dash", Text: "hello"})
			if err != nil {
				done <- err
				return
			}
			last = r.Seq
		}
		done <- nil
	}()
	awaitNil(t, done, 30*time.Second, "a write call waited for OnCommit")
	close(release)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[len(seen)-1] != last {
		t.Fatalf("OnCommit saw %v, want it to end with the newest seq %d", seen, last)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Fatalf("OnCommit saw %v: not in commit order", seen)
		}
	}
}

// Commits within the delay reach OnCommit once, as the newest change; the
// delivery waits for the delay, not the commit.
func TestNotifierFoldsABurstAfterTheDelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := notifier{delay: notifyDelay}
		// The deliveries run on the notifier's goroutine, ordered with the
		// checks by the bubble's clock, which the race detector does not
		// see: a lock tells it.
		var mu sync.Mutex
		var all []Change
		deliver := func(c Change) { mu.Lock(); defer mu.Unlock(); all = append(all, c) }
		delivered := func() []Change { mu.Lock(); defer mu.Unlock(); return slices.Clone(all) }
		for seq := int64(1); seq <= 5; seq++ {
			n.post(Change{Channel: "ops", Seq: seq}, deliver)
		}
		time.Sleep(notifyDelay - time.Nanosecond)
		synctest.Wait()
		if got := delivered(); len(got) != 0 {
			t.Fatalf("delivered %+v before the delay", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := delivered(); len(got) != 1 || got[0].Seq != 5 {
			t.Fatalf("delivered %+v at the delay, want only the newest (seq 5)", got)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := delivered(); len(got) != 1 {
			t.Fatalf("delivered %+v for one burst, want one delivery", got)
		}
		n.post(Change{Channel: "ops", Seq: 6}, deliver) // a later commit: a delivery of its own
		n.flush()
		if got := delivered(); len(got) != 2 || got[1].Seq != 6 {
			t.Fatalf("delivered %+v, want seq 6 at the flush", got)
		}
	})
}

// Close does not sit out the delay: what is pending is delivered at once.
func TestCloseDeliversThePendingChangeAtOnce(t *testing.T) {
	t.Parallel()
	db := world(t)
	db.notify.delay = time.Hour // a Close that waited would time the test out
	var seen []Change
	db.OnCommit = func(c Change) { seen = append(seen, c) }
	r, err := db.Say(context.Background(), gw, SayArgs{Channel: "gw--dash", Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	awaitNil(t, closed, 10*time.Second, "Close waited for the delivery delay")
	if len(seen) != 1 || seen[0].Seq != r.Seq {
		t.Fatalf("OnCommit saw %+v, want the say (seq %d) once", seen, r.Seq)
	}
}

// The change carries the call's own time — the one its rows got — so a
// delayed tick still says when the write happened.
func TestChangeCarriesTheCallsTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 23, 30, 0, 123456000, time.UTC)
	db := worldWith(t, Options{Clock: func() time.Time { return at }})
	got := make(chan Change, 1)
	db.OnCommit = func(c Change) { got <- c }
	if _, err := db.Say(context.Background(), gw, SayArgs{Channel: "gw--dash", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	var written string
	if err := rawSQL(db).QueryRow(`SELECT created_at FROM messages WHERE body = 'hello'`).Scan(&written); err != nil {
		t.Fatal(err)
	}
	var c Change
	select {
	case c = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("OnCommit never ran")
	}
	if want := "2026-11-29T23:30:00.123456+00:00"; c.CommittedAt != want || written != want {
		t.Fatalf("change time %q, message time %q, want the call's %q", c.CommittedAt, written, want)
	}
}

// awaitNil fails the test with the error that arrives on ch, or with
// timedOut if none arrives within d.
func awaitNil(t *testing.T, ch <-chan error, d time.Duration, timedOut string) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		t.Fatal(timedOut)
	}
}
