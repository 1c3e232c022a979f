package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// ReadOnlyBusyTimeout is how long a read-only handle waits for a lock. A
// WAL reader never waits for a writer, only for rare exclusive holders
// (recovery, a locking_mode=exclusive connection); the hook must answer
// within a second, so it gives up early and says nothing.
const ReadOnlyBusyTimeout = 250 * time.Millisecond

// errSnapshotMoved reports that the database file changed under an
// immutable read; the read is thrown away and done again.
var errSnapshotMoved = errors.New("the database changed during an immutable read")

// Reader is a handle that can only read: the hook's. It never moves a
// cursor, never acks, never sweeps, never creates a party, and changes no
// byte of the database or its -wal.
//
// A WAL database is read through SQLite's ordinary read-only mode while its
// -wal exists. Without a -wal (no connection is open and the last one
// checkpointed everything into the main file) that mode would create an
// empty -wal and a -shm, so the file is read as immutable instead, and the
// read is kept only if the file did not change while it ran.
type Reader struct {
	path  string
	db    *sql.DB
	stamp *fileStamp // set while reading an immutable snapshot
	// mu makes reads of one handle take turns: a reopen replaces db, and
	// a long-lived handle (the page) reads from several goroutines.
	mu sync.Mutex
	// search is the full-text index beside the database (search.go).
	search searchHolder
	// stmts keeps the queries prepared once the handle searched (nil
	// before): a search runs the same few each time, and a handle that
	// searches lives on (the page), while the hook's reads once each.
	stmts *stmtCache
	// shared: db and pg are a DB's (DB.Reader), which closes them.
	shared bool
}

// OpenReadOnly opens the database at path for reading. It fails, without
// creating anything, when the file is missing or is not an SQLite database.
func OpenReadOnly(ctx context.Context, path string) (*Reader, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve database path: %w", err)
	}
	r := &Reader{path: path}
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Where is the database file.
func (r *Reader) Where() string { return r.path }

// SQL is the handle (tests).
func (r *Reader) SQL() *sql.DB { return r.db }

// State is the file's Fingerprint.
func (r *Reader) State() (string, bool) { return Fingerprint(r.path) }

// CheapState says State costs no round trip (engine.CheapState).
func (r *Reader) CheapState() {}

// CommitMark names the file's last commit (see the function of that name).
func (r *Reader) CommitMark() (mark string, ok bool) {
	return CommitMark(r.path)
}

// Close releases the handle.
func (r *Reader) Close() error {
	r.search.close()
	r.stmts.close()
	if r.db == nil || r.shared {
		return nil
	}
	return r.db.Close()
}

func (r *Reader) open(ctx context.Context) error {
	wal, err := walHeader(r.path)
	if err != nil {
		return err
	}
	r.stamp = nil
	immutable := wal && !fileExists(r.path+"-wal")
	if immutable {
		st, err := quietStamp(ctx, r.path)
		if err != nil {
			return err
		}
		r.stamp = &st
	}
	db, err := sql.Open("sqlite3", readOnlyDSN(r.path, immutable))
	if err != nil {
		return fmt.Errorf("open %s: %w", r.path, err)
	}
	db.SetMaxOpenConns(1)
	r.db = db
	return nil
}

func (r *Reader) reopen(ctx context.Context) error {
	if r.stmts != nil {
		r.stmts.close()
		r.stmts = nil
	}
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
	return r.open(ctx)
}

func readOnlyDSN(path string, immutable bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", ReadOnlyBusyTimeout.Milliseconds()))
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// walHeader reads the file header: an error unless it is an SQLite file,
// and whether it is in WAL mode (read and write versions both 2).
func walHeader(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, engine.ErrNoDatabase
	}
	if err != nil {
		return false, fmt.Errorf("cannot read the chat database %s: %w", path, err)
	}
	defer f.Close()
	var h [100]byte
	n, err := io.ReadFull(f, h[:])
	if n == 0 {
		// Empty: another process is making the database this moment (an
		// mcpp host's worker starting beside this look), as SQLite takes
		// an empty file for an empty database. No chat yet.
		return false, engine.ErrNoDatabase
	}
	if err != nil || !isSQLite(h[:]) {
		return false, fmt.Errorf("%s is not an SQLite database — move it aside or point MCPP_CHAT_DB at another file", path)
	}
	return h[18] == 2 && h[19] == 2, nil
}

// isSQLite reports whether a file's first bytes are SQLite's header string.
func isSQLite(head []byte) bool {
	return bytes.HasPrefix(head, []byte("SQLite format 3\x00"))
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// fileStamp identifies one version of a file: any write changes the
// modification or change time, a replacement changes the inode.
type fileStamp struct {
	size         int64
	mtime, ctime time.Time
	ino          uint64
}

// changed is the file's last change: the later of its modification and
// change times.
func (a fileStamp) changed() time.Time {
	if a.ctime.After(a.mtime) {
		return a.ctime
	}
	return a.mtime
}

// trusted reports whether the file's last change is far enough before now
// that a later write cannot leave its times unchanged: trustAge, or
// coarseTrustAge on a file system that keeps whole seconds (both times
// without nanoseconds).
func trusted(st fileStamp, now time.Time) bool {
	return now.Sub(st.changed()) >= trustAgeOf(st)
}

func trustAgeOf(st fileStamp) time.Duration {
	if st.mtime.Nanosecond() == 0 && st.ctime.Nanosecond() == 0 {
		return coarseTrustAge
	}
	return trustAge
}

func (a fileStamp) same(b fileStamp) bool {
	return a.size == b.size && a.ino == b.ino && a.mtime.Equal(b.mtime) && a.ctime.Equal(b.ctime)
}

// trustAge is how old the last write must be before a stamp can be
// trusted: file times tick in kernel jiffies (up to 10 ms), so a write in
// the same tick as the previous one could leave the time unchanged.
const trustAge = 30 * time.Millisecond

// coarseTrustAge is trustAge for file systems whose times tick in seconds
// (FAT, HFS+, ext4 with small inodes, some network file systems).
const coarseTrustAge = 2 * time.Second

// quietStamp stamps the file once its last write is older than trustAge,
// so that any later write shows in the stamp.
func quietStamp(ctx context.Context, path string) (fileStamp, error) {
	for {
		st, err := stampOf(path)
		if err != nil {
			return st, err
		}
		now := time.Now()
		if trusted(st, now) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(trustAgeOf(st) - now.Sub(st.changed())):
		}
	}
}

func stampOf(path string) (fileStamp, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileStamp{}, engine.ErrNoDatabase
	}
	if err != nil {
		return fileStamp{}, fmt.Errorf("cannot read the chat database %s: %w", path, err)
	}
	st := fileStamp{size: info.Size(), mtime: info.ModTime()}
	st.ctime, st.ino = statDetails(info)
	return st, nil
}

// view runs fn in a read-only transaction. An immutable read whose file
// changed meanwhile is done again from a fresh open (by then the writer's
// -wal exists, so the ordinary read-only mode is used). So is a read on a
// handle opened immutable when a -wal has appeared since: a long-lived
// handle (watch) would not see what is committed there.
func (r *Reader) view(ctx context.Context, fn func(engine.Tx) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stamp != nil && fileExists(r.path+"-wal") {
		if err := r.reopen(ctx); err != nil {
			return err
		}
	}
	for attempt := 1; ; attempt++ {
		err := r.viewOnce(ctx, fn)
		if !errors.Is(err, errSnapshotMoved) || attempt == 3 {
			return err
		}
		if err := r.reopen(ctx); err != nil {
			return err
		}
	}
}

func (r *Reader) viewOnce(ctx context.Context, fn func(engine.Tx) error) error {
	r.stmts.prepare(ctx)
	sqlTx, err := r.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer sqlTx.Rollback()
	err = fn(&tx{Tx: sqlTx, ctx: ctx, stmts: r.stmts})
	// An immutable read sees pages as they are on disk: if a writer
	// checkpointed meanwhile, its result (or its error: a torn page looks
	// corrupt) is not a snapshot, whatever it is.
	if r.stamp != nil {
		st, serr := stampOf(r.path)
		if serr != nil || !st.same(*r.stamp) {
			return errSnapshotMoved
		}
	}
	return err
}

// keepStatements has the handle keep its queries prepared from now on.
func (r *Reader) keepStatements() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stmts == nil && r.db != nil {
		r.stmts = newStmtCache(r.db)
	}
}

// Describe turns a driver error into one a user can act on.
func (r *Reader) Describe(err error) error {
	if isBusy(err) {
		return fmt.Errorf("the chat database %s is locked by another process: %w", r.path, err)
	}
	return describe(r.path, err)
}

// Run runs fn in a read-only transaction; the handle has no other kind.
func (r *Reader) Run(ctx context.Context, k engine.Kind, fn func(engine.Tx) (*engine.Change, error)) (*engine.Change, error) {
	if k != engine.Read {
		return nil, fmt.Errorf("the read-only handle on %s runs no writing call", r.path)
	}
	return nil, r.view(ctx, func(t engine.Tx) error {
		_, err := fn(t)
		return err
	})
}

// Version reads the database's schema version.
func (r *Reader) Version(ctx context.Context) (int, error) {
	var version int
	err := r.view(ctx, func(t engine.Tx) error {
		var err error
		version, err = inspect(ctx, t.(*tx), r.path)
		return err
	})
	return version, err
}
