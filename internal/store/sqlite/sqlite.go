// Package sqlite is the chat's engine on one host: a SQLite file in WAL
// mode that every process of the machine opens. It runs the protocol's
// transactions (run.go: the writers' turns in this process and among the
// machine's processes, queue.go, BEGIN IMMEDIATE), keeps statements
// prepared (stmts.go), names the file's committed state without opening
// SQLite (fingerprint.go), copies the file once a day (backup.go), reads
// it for the hook without ever writing a byte (readonly.go), and keeps a
// full-text index in a file of its own beside it (search*.go). It speaks
// the protocol's SQL as written; the protocol itself is package store's.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// Options tune an engine; the zero value means the defaults.
type Options struct {
	// BusyTimeout bounds all the waiting of one call for its turn to
	// write — this process's writer slot, the writers' queue, SQLite's
	// lock — and Open's wait for a new file's switch to WAL. 0 means
	// engine.DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Clock is a backup's day; nil means time.Now.
	Clock func() time.Time
}

// Engine is a read-write handle on a chat database file.
type Engine struct {
	sql  *sql.DB
	path string
	// writer admits one write transaction of this process at a time. The
	// others wait here, asleep, instead of each polling the file lock in
	// SQLite's busy handler: forty pollers on two cores starve the one
	// transaction that holds the lock until callers see ErrBusy.
	writer chan struct{}
	// turns counts the writes that had their turn (lockWriter).
	turns atomic.Int64
	// queue does the same for the writers of every process on the machine.
	queue *writerQueue
	// backup, if set by DailyBackup, copies the database once a day.
	backup *dailyBackup
	// stmts keeps the queries prepared across calls.
	stmts *stmtCache
	// opened is the file at path when it was opened: a write checks that
	// it is still the one there (stillAtPath).
	opened      os.FileInfo
	busyTimeout time.Duration
	clock       func() time.Time
	// search is the full-text index beside the database, opened by the
	// first search (search.go).
	search searchHolder
}

// Open opens (creating if needed) the database at path and brings its
// schema up to date. A file that is not a chat database, or one written by
// a newer edition, is refused without writing a byte.
func Open(ctx context.Context, path string, o Options) (*Engine, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve database path: %w", err)
	}
	if err := createOwnerOnly(path); err != nil {
		return nil, err
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = engine.DefaultBusyTimeout
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	db, err := driver.Open(dsn(path), func(c *sqlite3.Conn) error { return setUpConn(c, o.BusyTimeout) })
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// Concurrent reads (a hub's members) each take a connection; with
	// database/sql's 2 idle ones kept, every burst opened and closed the
	// rest, each a new SQLite instance (issue 24's profile: 16 % of a
	// SQLite hub's CPU).
	db.SetMaxIdleConns(8)
	e := &Engine{sql: db, path: path, writer: make(chan struct{}, 1), queue: newWriterQueue(path),
		busyTimeout: o.BusyTimeout, clock: o.Clock}
	if err := e.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if e.opened, err = os.Stat(path); err != nil {
		db.Close()
		return nil, fmt.Errorf("the chat database %s went away while it was being opened — run the command again", path)
	}
	e.stmts = newStmtCache(db)
	return e, nil
}

// Where is the database file.
func (e *Engine) Where() string { return e.path }

// SQL is the engine's handle (tests, migrate's copy).
func (e *Engine) SQL() *sql.DB { return e.sql }

// State is the file's Fingerprint: a few stats, no SQLite.
func (e *Engine) State() (string, bool) { return Fingerprint(e.path) }

// CheapState says State costs no round trip (engine.CheapState).
func (e *Engine) CheapState() {}

// Version reads the database's schema version.
func (e *Engine) Version(ctx context.Context) (int, error) {
	return inspect(ctx, e.sql, e.path)
}

// Close waits for a running backup, stops the search index's keeper and
// releases the handle.
func (e *Engine) Close() error {
	e.waitBackup()
	e.search.close()
	e.stmts.close()
	if e.queue != nil {
		e.queue.close()
	}
	return e.sql.Close()
}

// stillAtPath refuses a write when the database file this process holds is
// no longer the one at its path: deleted, or replaced by another file.
// SQLite would go on writing to the file it holds, confirming writes that
// vanish when the process exits and that no other session ever sees. One
// stat per write transaction; reads do without.
func (e *Engine) stillAtPath() error {
	info, err := os.Stat(e.path)
	if err == nil && os.SameFile(info, e.opened) {
		return nil
	}
	return engine.StorageErrorf("the chat database %s was deleted or replaced while this session had it open — nothing was written (it would have gone to the old file and been lost); restart this session, or just its chat server (Claude Code: /mcp, reconnect), so that it opens the file now at that path", e.path)
}

func dsn(path string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", engine.DefaultBusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(full)")
	q.Set("_txlock", "deferred")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// createOwnerOnly makes the database's folder (0700) and an empty file
// (0600) so that SQLite never creates them with the umask's wider modes.
func createOwnerOnly(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot read the database %s: %w — check its permissions", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("cannot create the database folder %s: %w — create it or set MCPP_CHAT_DB", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot create the database %s: %w — check the folder's permissions or set MCPP_CHAT_DB", path, err)
	}
	return f.Close()
}

// isBusy reports a lock conflict that a retry can resolve.
func isBusy(err error) bool {
	return errors.Is(err, sqlite3.BUSY) || errors.Is(err, sqlite3.LOCKED)
}

// Describe turns a driver error into one a user can act on.
func (e *Engine) Describe(err error) error {
	if isBusy(err) {
		return engine.Busy{Waited: e.busyTimeout}
	}
	return describe(e.path, err)
}

func describe(path string, err error) error {
	switch {
	case err == nil:
		return nil
	case isBusy(err):
		return engine.ErrBusy
	case errors.Is(err, sqlite3.NOTADB), errors.Is(err, sqlite3.CORRUPT):
		return engine.StorageErrorf("%s is not a readable chat database (%w) — move it aside or point MCPP_CHAT_DB at another file", path, err)
	case errors.Is(err, sqlite3.READONLY), errors.Is(err, sqlite3.PERM), errors.Is(err, sqlite3.CANTOPEN),
		errors.Is(err, sqlite3.IOERR), errors.Is(err, sqlite3.FULL):
		return describeFile(path, err)
	}
	return err
}

// describeFile explains an error that the file, the files beside it or
// its disk caused: what SQLite says (an I/O error, "unable to open") is
// the same for several causes, each with its own fix.
func describeFile(path string, err error) error {
	if diskFull(filepath.Dir(path)) {
		return engine.StorageErrorf("the disk holding %s is full, so the chat database cannot grow: nothing was written — free some space on it and retry; meanwhile a running session can still read with chat_read peek=true and chat_inbox", filepath.Dir(path))
	}
	if link := linkedSidecar(path); link != "" {
		return engine.StorageErrorf("%s is a symbolic link, and SQLite opens no link beside a database — with every session stopped, replace the link with the file it points to (or remove it if it points nowhere), or point MCPP_CHAT_DB elsewhere", link)
	}
	if errors.Is(err, sqlite3.IOERR) || errors.Is(err, sqlite3.FULL) {
		return err
	}
	return engine.StorageErrorf("cannot write the chat database %s (%w) — give your user write access to it and its folder, or point MCPP_CHAT_DB elsewhere", path, err)
}

// linkedSidecar is the -wal or -shm beside the database that is a symbolic
// link, or "": SQLite refuses to open one, and the error it gives reads
// like a permission problem.
func linkedSidecar(path string) string {
	for _, side := range []string{path + "-wal", path + "-shm"} {
		if info, err := os.Lstat(side); err == nil && info.Mode()&fs.ModeSymlink != 0 {
			return side
		}
	}
	return ""
}

// minFreeBytes is the room below which a failed write is put down to a
// full disk: less than a few pages of the database and its -wal.
const minFreeBytes = 64 << 10
