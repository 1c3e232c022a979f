package sqlite

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// openReader is the hook's read-only handle on the database at path.
func openReader(t *testing.T, path string) *Reader {
	t.Helper()
	r, err := OpenReadOnly(context.Background(), path)
	mustDo(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// messages are the bodies r reads, in order, one per line.
func messages(t *testing.T, r *Reader) string {
	t.Helper()
	var bodies []string
	_, err := r.Run(context.Background(), engine.Read, func(t engine.Tx) (*engine.Change, error) {
		rows, err := t.Query(`SELECT body FROM messages ORDER BY id`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var b string
			if err := rows.Scan(&b); err != nil {
				return nil, err
			}
			bodies = append(bodies, b)
		}
		return nil, rows.Err()
	})
	mustDo(t, err)
	return strings.Join(bodies, "\n")
}

// fileDigest is a hash of the file at path.
func fileDigest(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	mustDo(t, err)
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// With a writer's -wal present the ordinary read-only mode is used; it
// changes no byte of the database or its -wal.
func TestReadOnlyWritesNoByteWithWAL(t *testing.T) {
	db := openEngine(t, Options{})
	seat(t, db)
	mustDo(t, say(context.Background(), db, "hello"))
	if _, err := os.Stat(db.Where() + "-wal"); err != nil {
		t.Fatalf("expected the writer's -wal: %v", err)
	}
	dbSum, walSum := fileDigest(t, db.Where()), fileDigest(t, db.Where()+"-wal")
	r := openReader(t, db.Where())
	if r.stamp != nil {
		t.Fatal("a database with a -wal must not be read as immutable")
	}
	if bodies := messages(t, r); bodies != "hello" {
		t.Fatalf("the reader found %q", bodies)
	}
	r.Close()
	if fileDigest(t, db.Where()) != dbSum || fileDigest(t, db.Where()+"-wal") != walSum {
		t.Fatal("the read-only handle changed chat.db or its -wal")
	}
}

// Without -wal and -shm (every connection closed cleanly) the read must
// work and create neither file.
func TestReadOnlyWithoutWALCreatesNothing(t *testing.T) {
	db := openEngine(t, Options{})
	seat(t, db)
	mustDo(t, say(context.Background(), db, "hello"))
	path := db.Where()
	db.Close()
	for _, f := range []string{path + "-wal", path + "-shm"} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("%s survived a clean close", f)
		}
	}
	sum := fileDigest(t, path)
	r := openReader(t, path)
	if r.stamp == nil {
		t.Fatal("expected an immutable snapshot read")
	}
	if bodies := messages(t, r); bodies != "hello" {
		t.Fatalf("the reader found %q", bodies)
	}
	r.Close()
	for _, f := range []string{path + "-wal", path + "-shm", path + "-journal"} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("the read-only handle created %s", f)
		}
	}
	if fileDigest(t, path) != sum {
		t.Fatal("the read-only handle changed chat.db")
	}
}
