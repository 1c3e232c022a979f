package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Several processes opening a new database at once (a session's first call,
// a `watch` that waited for the file, a second session) all switch it to
// WAL; the switch needs the file to itself, and SQLite reports the clash at
// once rather than through the busy handler. Each Open must wait its turn
// instead of failing the call with "busy".
func TestConcurrentOpensOfANewDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for round := range 40 {
		path := filepath.Join(dir, fmt.Sprintf("chat-%d.db", round))
		start := make(chan struct{})
		errs := make(chan error, 4)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				db, err := Open(ctx, path)
				if err == nil {
					err = db.Close()
				}
				errs <- err
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
