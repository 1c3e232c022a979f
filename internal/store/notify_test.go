package store

import (
	"context"
	"sync"
	"testing"
	"time"
)

// A write call answers without waiting for OnCommit (the tick file), and
// OnCommit still learns of the changes in commit order, ending with the
// newest; Close waits for that last delivery.
func TestOnCommitRunsAfterTheCallInOrder(t *testing.T) {
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
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a write call waited for OnCommit")
	}
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
