package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Several processes opening a new database at once (a session's first call,
// a `watch` that waited for the file, a second session) all switch it to
// WAL; the switch needs the file to itself, and SQLite reports the clash at
// once rather than through the busy handler. Each Open must wait its turn
// instead of failing the call with "busy".
func TestConcurrentOpensOfANewDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	rounds := 40
	if testing.Short() {
		rounds = 5 // the full run gives the clash more chances to show
	}
	for round := range rounds {
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

// A -wal or -shm that is a symbolic link makes SQLite refuse the database
// with "unable to open": the answer names the link instead of asking for
// write access the user already has.
func TestSymlinkedSidecarIsNamed(t *testing.T) {
	t.Parallel()
	for _, side := range []string{"-wal", "-shm"} {
		path := filepath.Join(t.TempDir(), "chat.db")
		db, err := Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		os.Remove(path + side)
		if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), path+side); err != nil {
			t.Fatal(err)
		}
		_, err = Open(context.Background(), path)
		if err == nil || !strings.Contains(err.Error(), path+side+" is a symbolic link") || strings.Contains(err.Error(), "write access") {
			t.Errorf("%s linked: %v", side, err)
		}
	}
}
