package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fingerprint takes the database's fingerprint once the files' times can
// be trusted (right after a write there is none, by design).
func fingerprint(t *testing.T, path string) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if fp, ok := Fingerprint(path); ok {
			return fp
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fingerprint for %s", path)
		}
	}
}

// fingerprintAged takes the database's fingerprint as if its files' last
// change were old enough to trust on any file system, without waiting for
// it. Only for states that differ in more than their times: a commit moves
// the WAL-index header.
func fingerprintAged(t *testing.T, path string) string {
	t.Helper()
	fp, ok := fingerprintAt(path, time.Now().Add(coarseTrustAge))
	if !ok {
		t.Fatalf("no fingerprint for %s", path)
	}
	return fp
}

// Every committed write shows as a new fingerprint — also the first write
// after a checkpoint, which restarts the -wal from its start at the same
// size; reads, including the hook's read-only handle, leave it as it was.
func TestFingerprintMovesWithEveryCommitOnly(t *testing.T) {
	e := openEngine(t, Options{})
	ctx := context.Background()
	seen := map[string]int{}
	seen[fingerprintAged(t, e.Where())] = -1
	for i := range 60 {
		mustDo(t, addParty(ctx, e, fmt.Sprintf("party-%d", i)))
		fp := fingerprintAged(t, e.Where())
		if j, dup := seen[fp]; dup {
			t.Fatalf("after say %d the fingerprint is the one after say %d: a write would go unnoticed", i, j)
		}
		seen[fp] = i
		if i%20 == 19 {
			if _, err := e.sql.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
				t.Fatal(err)
			}
		}
		if i%20 == 0 {
			peekAndLook(t, e)
			if again := fingerprintAged(t, e.Where()); again != fp {
				t.Fatalf("a peek and a read-only look changed the fingerprint:\n%s\n%s", fp, again)
			}
		}
	}
}

// With every connection closed SQLite folds the -wal into the file and
// removes it. A write by another process that opened, wrote and closed in
// between shows although the file's size and header stay the same; a
// fingerprint is given only once the file's times can be trusted.
func TestFingerprintWithoutWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.db")
	ctx := context.Background()
	writeAndClose := func(name string) {
		e, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		mustDo(t, addParty(ctx, e, name))
	}
	writeAndClose("mesh-gw")
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Skip("the -wal outlived the last connection; nothing to show here")
	}
	before := fingerprint(t, path)
	if again := fingerprint(t, path); again != before {
		t.Fatalf("unstable without a -wal:\n%s\n%s", before, again)
	}
	look(t, path)
	if again := fingerprint(t, path); again != before {
		t.Fatalf("an immutable read changed the fingerprint:\n%s\n%s", before, again)
	}
	info, _ := os.Stat(path)
	writeAndClose("node-dash")
	if after, _ := os.Stat(path); after.Size() != info.Size() {
		t.Logf("the file grew from %d to %d bytes", info.Size(), after.Size())
	}
	if fingerprint(t, path) == before {
		t.Fatal("a write by a connection that has since closed left the fingerprint unchanged")
	}
}

// After "commit, the last connection closes (checkpoint, -wal deleted),
// another opens", the new empty WAL has the same header as the one before
// and its file may get the same inode: the fingerprint must still differ.
func TestFingerprintAcrossFreshWALs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.db")
	ctx := context.Background()
	open := func() *Engine {
		e, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := open()
	mustDo(t, addParty(ctx, e, "mesh-gw"))
	e.Close()
	seen := map[string]int{}
	for i := range 5 {
		reader := open() // holds a fresh, empty WAL open
		before := fingerprint(t, path)
		if j, dup := seen[before]; dup {
			t.Fatalf("cycle %d: the fingerprint of cycle %d came back although a message was written in between", i, j)
		}
		seen[before] = i
		writer := open()
		mustDo(t, addParty(ctx, writer, fmt.Sprintf("cycle-%d", i)))
		writer.Close()
		reader.Close()
	}
}

// A file changed less than a clock tick ago could change again without its
// times moving: no fingerprint for it yet.
func TestTrusted(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		mtime, ctime time.Time
		want         bool
	}{
		{now.Add(-time.Minute), now.Add(-time.Minute), true},
		{now.Add(-time.Millisecond), now.Add(-time.Minute), false},
		{now.Add(-time.Minute), now.Add(-time.Millisecond), false}, // times restored after a write
		{now.Add(-trustAge), now.Add(-trustAge), true},
		// Whole seconds only (a file system that keeps no more): seconds
		// must pass.
		{now.Add(-time.Minute).Truncate(time.Second), now.Add(-time.Minute).Truncate(time.Second), true},
		{now.Truncate(time.Second).Add(-time.Second), now.Truncate(time.Second).Add(-time.Second), false},
	} {
		if got := trusted(fileStamp{mtime: c.mtime, ctime: c.ctime}, now); got != c.want {
			t.Errorf("mtime %v ago, ctime %v ago: trusted = %v", now.Sub(c.mtime), now.Sub(c.ctime), got)
		}
	}
}

// No answer is better than a wrong one: anything the fingerprint cannot
// vouch for sends the caller to the database.
func TestFingerprintRefusesWhatItCannotRead(t *testing.T) {
	dir := t.TempDir()
	if _, ok := Fingerprint(filepath.Join(dir, "missing.db")); ok {
		t.Error("a missing file has a fingerprint")
	}
	notDB := filepath.Join(dir, "notes.db")
	os.WriteFile(notDB, []byte("not a database, but long enough to have a header of a hundred bytes........................................"), 0o600)
	if _, ok := Fingerprint(notDB); ok {
		t.Error("a file that is not SQLite has a fingerprint")
	}
	e := openEngine(t, Options{})
	mustDo(t, addParty(context.Background(), e, "mesh-gw"))
	shm := e.Where() + "-shm"
	data, err := os.ReadFile(shm)
	if err != nil {
		t.Fatal(err)
	}
	torn := append([]byte{}, data...)
	torn[48+16] ^= 0xff // the second copy of mxFrame
	if err := os.WriteFile(shm, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := Fingerprint(e.Where()); ok {
		t.Error("a WAL-index header caught mid-write (its two copies differ) gave a fingerprint")
	}
	os.WriteFile(shm, data, 0o600)
}

// CommitMark moves with every commit, and not with a peek or a read-only
// look.
func TestCommitMarkMovesWithEveryCommitOnly(t *testing.T) {
	e := openEngine(t, Options{})
	ctx := context.Background()
	mustDo(t, addParty(ctx, e, "mesh-gw"))
	mark := func() string {
		t.Helper()
		return commitMark(t, e.Where())
	}
	seen := map[string]int{mark(): -1}
	for i := range 30 {
		mustDo(t, addParty(ctx, e, fmt.Sprintf("party-%d", i)))
		m := mark()
		if j, dup := seen[m]; dup {
			t.Fatalf("after write %d the mark is the one after write %d", i, j)
		}
		seen[m] = i
		peekAndLook(t, e)
		if again := mark(); again != m {
			t.Fatalf("a peek and a read-only look moved the mark:\n%s\n%s", m, again)
		}
	}
}

// commitMark waits for the database file's times to be trusted (only a
// checkpoint writes it) and returns the mark.
func commitMark(t *testing.T, path string) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if m, ok := CommitMark(path); ok {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("no commit mark for %s", path)
		}
	}
}

// The commit mark moves with every commit, checkpoints included, and not
// with reads; a database without a -wal has none.
func TestCommitMarkMovesWithEveryCommit(t *testing.T) {
	e := openEngine(t, Options{})
	ctx := context.Background()
	mustDo(t, addParty(ctx, e, "mesh-gw"))
	seen := map[string]int{commitMark(t, e.Where()): -1}
	for i := range 30 {
		mustDo(t, addParty(ctx, e, fmt.Sprintf("party-%d", i)))
		if i%10 == 9 {
			if _, err := e.sql.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				t.Fatal(err)
			}
		}
		m := commitMark(t, e.Where())
		if j, dup := seen[m]; dup {
			t.Fatalf("after write %d the mark is the one after write %d: a commit would go unnoticed", i, j)
		}
		seen[m] = i
		peek(t, e)
		if again := commitMark(t, e.Where()); again != m {
			t.Fatalf("a peek moved the mark:\n%s\n%s", m, again)
		}
	}
	path := e.Where()
	e.Close()
	if !fileExists(path + "-wal") {
		if m, ok := CommitMark(path); ok {
			t.Errorf("without a -wal the mark is %q, want none", m)
		}
	}
}
