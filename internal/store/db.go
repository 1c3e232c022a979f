// Package store is the only package that speaks SQL. It owns the database
// file: opening it, bringing its schema up to date, and running every tool
// call as one transaction. The hook gets a ReadOnly handle with no write
// methods.
//
// Its files, by what they are:
//
//   - The protocol, the same on every engine: channels.go, messages.go,
//     items.go, parties.go, read.go and readcall.go (read-type calls and
//     their memos: memo.go, sweep.go), need.go, admin.go (the person's
//     commands), seed.go (the demo).
//   - The transaction runner both engines share: db.go (tx, update, view,
//     the busy rules), schema.go, notify.go.
//   - The SQLite engine: sqlite_*.go (the writers' queue, the file's
//     fingerprint, backups, kept statements), readonly*.go (the hook's
//     read-only handle).
//   - The PostgreSQL engine: postgres.go (opening, dialect, one
//     transaction), postgres_lock.go (how calls take turns per channel),
//     postgres_lost.go and postgres_scrub.go (its errors),
//     postgres_longread.go (the share of the pool long reads may hold).
//   - Search: search*.go (SQLite's index file beside the database),
//     postgres_search.go.
//   - Beside the chat: tokens.go (the hub's tokens), copy.go (migrate),
//     view.go and watch.go (the person's views).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
)

// DefaultBusyTimeout is how long a call waits for its turn to write before
// it gives up with a retryable error, unless Options.BusyTimeout says
// otherwise.
const DefaultBusyTimeout = 5 * time.Second

// DefaultMaxConns is how many connections a process opens to a team store
// at most, unless Options.MaxConns says otherwise.
const DefaultMaxConns = 8

// ErrBusy matches (errors.Is) the error of a call that waited its whole
// busy timeout for its turn to write. The call wrote nothing and can be
// retried. The error's text names the timeout the call had and what it
// waited for.
var ErrBusy error = busyError{waited: DefaultBusyTimeout}

// What a call that ran out of its busy timeout waited for: the sentence
// names the real cause, since the fix differs (a process of one's own
// that writes a lot, another process, a team store's channel or pool).
const (
	waitedOtherProcess = iota // SQLite's lock or the machine's writers' queue
	waitedOwnQueue            // this process's writer slot
	waitedChannel             // a team store's lock on one channel
	waitedRows                // a team store's row or name another call holds
	waitedPool                // a free connection to the team store
	waitedLongReads           // the share of a team store's connections long reads may hold
)

// busyError is ErrBusy for a call that waited the given time for cause.
type busyError struct {
	waited time.Duration
	cause  int
}

func (e busyError) Error() string {
	what := fmt.Sprintf("another process has held its write lock for %v", e.waited)
	switch e.cause {
	case waitedOwnQueue:
		what = fmt.Sprintf("this process's own writes have queued ahead of this call for %v", e.waited)
	case waitedRows:
		what = fmt.Sprintf("other calls have held what this call writes for %v", e.waited)
	case waitedChannel:
		what = fmt.Sprintf("other calls have held this channel's write lock for %v", e.waited)
	case waitedPool:
		what = fmt.Sprintf("every connection this process may open to the team store was in use for %v", e.waited)
	case waitedLongReads:
		what = fmt.Sprintf("other searches and long reads have held their share of this process's connections to the team store for %v", e.waited)
	}
	return "the chat database is busy: " + what + " — nothing was written; retry the call in a few seconds"
}

// Is makes every busyError ErrBusy, whatever time it names.
func (busyError) Is(target error) bool {
	_, ok := target.(busyError)
	return ok
}

// busyFor is err, if it is a busyError, with the time this call waited:
// its busy timeout, unless it names a wait of its own (the pool's).
func busyFor(err error, waited time.Duration) error {
	var b busyError
	if !errors.As(err, &b) {
		return busyError{waited: waited}
	}
	if b.cause != waitedPool && b.cause != waitedLongReads {
		b.waited = waited
	}
	return b
}

// Change describes the newest row a committed call touched: what the tick
// file and watchers report.
type Change struct {
	Channel string
	Seq     int64
	Author  string
	// CommittedAt is the call's time (as Now writes it): the tick names
	// the time of the write, not of the tick's own delayed write.
	CommittedAt string
}

// DB is a read-write handle on the chat database.
type DB struct {
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
	// OnCommit, if set, is told the newest row of every committed call
	// that changed something. It runs in the background, after the call
	// has returned, in commit order; when calls commit faster than it
	// runs, only the newest waiting change is delivered. It must not fail
	// the call. Close waits for it.
	OnCommit func(Change)
	notify   notifier
	// sweeps lets reads skip an archive sweep that would find nothing.
	sweeps sweepMemo
	// answers lets inbox and whoami answer again from an unchanged state.
	answers answerMemo
	// backup, if set by DailyBackup, copies the database once a day.
	backup *dailyBackup
	// stmts keeps the queries prepared across calls.
	stmts *stmtCache
	// opened is the file at path when it was opened: a write checks that
	// it is still the one there (stillAtPath).
	opened os.FileInfo
	// pg is the PostgreSQL engine of a team store; nil for SQLite.
	pg *postgres
	// busyTimeout and clock are Options'.
	busyTimeout time.Duration
	clock       func() time.Time
	// search is the full-text index beside the database, opened by the
	// first search (search.go).
	search searchHolder
}

// Options tune a handle; the zero value means the defaults.
type Options struct {
	// BusyTimeout bounds all the waiting of one call for its turn to
	// write — this process's writer slot, the writers' queue, SQLite's
	// lock — and Open's wait for a new file's switch to WAL. 0 means
	// DefaultBusyTimeout.
	BusyTimeout time.Duration
	// MaxConns bounds a team store's pool of connections; 0 means
	// DefaultMaxConns. (A SQLite file needs no bound: its connections
	// are files this process opens.)
	MaxConns int
	// Clock is the time the store writes: the rows' times and a backup's
	// day. nil means time.Now. Waiting always goes by the real clock.
	Clock func() time.Time
}

func (o Options) orDefaults() Options {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	return o
}

// Open opens (creating if needed) the database at path with the default
// Options and brings its schema up to date. A file that is not a chat
// database, or one written by a newer edition, is refused without writing
// a byte.
func Open(ctx context.Context, path string) (*DB, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, o Options) (*DB, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve database path: %w", err)
	}
	if err := createOwnerOnly(path); err != nil {
		return nil, err
	}
	o = o.orDefaults()
	db, err := driver.Open(dsn(path, false), func(c *sqlite3.Conn) error { return setUpConn(c, o.BusyTimeout) })
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// Concurrent reads (a hub's members) each take a connection; with
	// database/sql's 2 idle ones kept, every burst opened and closed the
	// rest, each a new SQLite instance (issue 24's profile: 16 % of a
	// SQLite hub's CPU).
	db.SetMaxIdleConns(8)
	d := &DB{sql: db, path: path, writer: make(chan struct{}, 1), queue: newWriterQueue(path),
		notify: notifier{delay: notifyDelay}, busyTimeout: o.BusyTimeout, clock: o.Clock}
	if err := d.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if d.opened, err = os.Stat(path); err != nil {
		db.Close()
		return nil, fmt.Errorf("the chat database %s went away while it was being opened — run the command again", path)
	}
	d.stmts = newStmtCache(db)
	return d, nil
}

// stillAtPath refuses a write when the database file this process holds is
// no longer the one at its path: deleted, or replaced by another file.
// SQLite would go on writing to the file it holds, confirming writes that
// vanish when the process exits and that no other session ever sees. One
// stat per write transaction; reads do without.
func (d *DB) stillAtPath() error {
	if d.pg != nil {
		return nil
	}
	info, err := os.Stat(d.path)
	if err == nil && os.SameFile(info, d.opened) {
		return nil
	}
	return storageErrorf("the chat database %s was deleted or replaced while this session had it open — nothing was written (it would have gone to the old file and been lost); restart this session, or just its chat server (Claude Code: /mcp, reconnect), so that it opens the file now at that path", d.path)
}

// Path is the database file.
func (d *DB) Path() string { return d.path }

// Close waits for a running backup and the last OnCommit, and releases the
// handle.
func (d *DB) Close() error {
	d.waitBackup()
	d.notify.flush()
	d.search.close()
	d.stmts.close()
	if d.queue != nil {
		d.queue.close()
	}
	return d.sql.Close()
}

func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", DefaultBusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Add("_pragma", "synchronous(full)")
		q.Set("_txlock", "deferred")
	}
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

// describe turns a driver error into one a user can act on.
func (d *DB) describe(err error) error {
	if d.pg != nil {
		return d.pg.describe(err)
	}
	if isBusy(err) {
		return busyError{waited: d.busyTimeout}
	}
	return describe(d.path, err)
}

func describe(path string, err error) error {
	switch {
	case err == nil:
		return nil
	case isBusy(err):
		return ErrBusy
	case errors.Is(err, sqlite3.NOTADB), errors.Is(err, sqlite3.CORRUPT):
		return storageErrorf("%s is not a readable chat database (%w) — move it aside or point MCPP_CHAT_DB at another file", path, err)
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
		return storageErrorf("the disk holding %s is full, so the chat database cannot grow: nothing was written — free some space on it and retry; meanwhile a running session can still read with chat_read peek=true and chat_inbox", filepath.Dir(path))
	}
	if link := linkedSidecar(path); link != "" {
		return storageErrorf("%s is a symbolic link, and SQLite opens no link beside a database — with every session stopped, replace the link with the file it points to (or remove it if it points nowhere), or point MCPP_CHAT_DB elsewhere", link)
	}
	if errors.Is(err, sqlite3.IOERR) || errors.Is(err, sqlite3.FULL) {
		return err
	}
	return storageErrorf("cannot write the chat database %s (%w) — give your user write access to it and its folder, or point MCPP_CHAT_DB elsewhere", path, err)
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

// tx is one tool call's transaction.
type tx struct {
	// Tx is nil, on a team store, while a read has not yet written or
	// locked anything: its statements run on conn, and begin starts the
	// transaction at the first write or lock (postgres.go, try).
	*sql.Tx
	conn    *sql.Conn
	begin   func() error
	ctx     context.Context
	now     string
	changed *Change
	stmts   *stmtCache // nil: prepare every query afresh
	wrote   bool       // an exec ran: the commit writes
	// dialect turns this package's SQL, written for SQLite, into the
	// engine's; nil for SQLite.
	dialect func(string) string
	// team is the team store's per-transaction state (its channel locks
	// and clocks); nil for SQLite, whose writes are alone anyway.
	team *teamTx
}

// forEngine is a statement as the engine takes it: the text in its
// dialect, and each flag as the 0 or 1 the schema stores (SQLite's driver
// does that itself; PostgreSQL's refuses a bool for an integer).
func (t *tx) forEngine(query string, args []any) (string, []any) {
	if t.dialect == nil {
		return query, args
	}
	for i, a := range args {
		if b, ok := a.(bool); ok {
			args[i] = 0
			if b {
				args[i] = 1
			}
		}
	}
	return t.dialect(query), args
}

func (t *tx) exec(query string, args ...any) (sql.Result, error) {
	if err := t.writes(); err != nil {
		return nil, err
	}
	t.wrote = true
	query, args = t.forEngine(query, args)
	if st := t.stmts.in(t, query); st != nil {
		return st.ExecContext(t.ctx, args...)
	}
	return t.ExecContext(t.ctx, query, args...)
}

func (t *tx) query(query string, args ...any) (*sql.Rows, error) {
	query, args = t.forEngine(query, args)
	if st := t.stmts.in(t, query); st != nil {
		return st.QueryContext(t.ctx, args...)
	}
	if t.Tx == nil {
		return t.conn.QueryContext(t.ctx, query, args...)
	}
	return t.QueryContext(t.ctx, query, args...)
}

func (t *tx) row(query string, args ...any) *sql.Row {
	query, args = t.forEngine(query, args)
	if st := t.stmts.in(t, query); st != nil {
		return st.QueryRowContext(t.ctx, args...)
	}
	if t.Tx == nil {
		return t.conn.QueryRowContext(t.ctx, query, args...)
	}
	return t.QueryRowContext(t.ctx, query, args...)
}

// writes starts the transaction of a read that is about to write or take
// a lock, which only a transaction keeps until its commit.
func (t *tx) writes() error {
	if t.Tx != nil || t.begin == nil {
		return nil
	}
	return t.begin()
}

// insert runs an INSERT … RETURNING id and stores the new row's id (both
// engines have RETURNING; only SQLite has LastInsertId).
func (t *tx) insert(id *int64, query string, args ...any) error {
	if err := t.writes(); err != nil {
		return err
	}
	t.wrote = true
	return t.row(query, args...).Scan(id)
}

// touch records the row the tick file will report after the commit.
func (t *tx) touch(channel string, seq int64, author string) {
	t.changed = &Change{Channel: channel, Seq: seq, Author: author, CommittedAt: t.now}
}

// The write path. A call that writes waits, in this order, and within one
// deadline, the busy timeout (Options.BusyTimeout) from its start:
//
//  1. its turn in this process (lockWriter on DB.writer): one write
//     transaction of the process at a time, the others asleep, not polling;
//  2. its turn among the writers of every process (writerQueue.acquire in
//     sqlite_queue.go): a flock on chat.db.lock, woken by the release itself;
//  3. SQLite's write lock, BEGIN IMMEDIATE (once), with the connection's
//     busy handler (waitForLock) bounded by the same deadline, which
//     reaches it in the context (withLockDeadline);
//  4. a retry every 5 ms while a BUSY still comes back early (a snapshot
//     conflict, a checkpoint), until the deadline (attempt).
//
// A call that runs out of the deadline at any step fails with ErrBusy,
// having written nothing. A view skips 1 and 2: its deferred transaction
// reads without the write lock and takes it only if fn writes; when that
// upgrade is refused because another process wrote meanwhile, fn runs
// again from the start, through 1–4, within what is left of the deadline.
// Before a commit that writes, stillAtPath checks that the file is still
// the one at the path; after it, the tick (OnCommit through the notifier)
// and the daily backup run in the background and cannot fail the call.
//
// What this asks of every fn given to update or view:
//
//   - fn may run more than once (steps 4 and the view's retry), each time
//     in a fresh transaction: it assigns its outputs rather than appending
//     to them, and changes nothing outside the transaction but them.
//   - fn prepares no statement on the handle (stmtCache prepares between
//     calls, before the transaction begins): inside it, the only idle
//     connection may be the transaction's own.
//   - One connection serves one call at a time, which is what lets the
//     busy handler keep its state in a closure.

// update runs fn in one BEGIN IMMEDIATE transaction: the write lock is taken
// up front so that the transaction never has to be retried half-way.
func (d *DB) update(ctx context.Context, fn func(*tx) error) error {
	return d.run(ctx, true, time.Now().Add(d.busyTimeout), fn)
}

// exclusive runs fn as update does, but alone: on a team store no other
// call of any process runs beside it (the person's own commands, which
// rewrite parties and cursors across channels, and migrate's copy). On
// SQLite every write is alone anyway.
func (d *DB) exclusive(ctx context.Context, fn func(*tx) error) error {
	if d.pg == nil {
		return d.update(ctx, fn)
	}
	deadline := time.Now().Add(d.busyTimeout)
	changed, err := d.pg.once(ctx, d, pgExclusive, true, deadline, fn)
	if errors.Is(err, ErrBusy) {
		err = busyFor(err, d.busyTimeout)
	}
	if err == nil && changed != nil && d.OnCommit != nil {
		d.notify.post(*changed, d.OnCommit)
	}
	return err
}

// view runs fn in a deferred transaction: it reads without the write lock and
// takes it only if fn writes. If the upgrade to a writer fails because
// another process wrote meanwhile, fn is run again under BEGIN IMMEDIATE,
// within the same busy timeout.
func (d *DB) view(ctx context.Context, fn func(*tx) error) error {
	deadline := time.Now().Add(d.busyTimeout)
	if d.pg != nil {
		// A team store has no store-wide write lock to upgrade to: a view
		// reads without locks, and what it writes (a cursor, last_seen)
		// only ever moves forward, so it conflicts with no one's writes
		// but those to the same row (postgres.go).
		return d.run(ctx, false, deadline, fn)
	}
	err := d.run(ctx, false, deadline, fn)
	if isBusy(err) || errors.Is(err, ErrBusy) {
		return d.run(ctx, true, deadline, fn)
	}
	return err
}

func (d *DB) run(ctx context.Context, immediate bool, deadline time.Time, fn func(*tx) error) error {
	changed, err := d.attempt(ctx, immediate, deadline, fn)
	if errors.Is(err, ErrBusy) {
		err = busyFor(err, d.busyTimeout) // the time this call had, not the default
	}
	if err == nil && changed != nil && d.OnCommit != nil {
		d.notify.post(*changed, d.OnCommit)
	}
	if err == nil {
		d.afterCommit()
	}
	return err
}

// attempt runs fn until it commits, fails for another reason than a lock,
// or the deadline passes.
func (d *DB) attempt(ctx context.Context, immediate bool, deadline time.Time, fn func(*tx) error) (*Change, error) {
	if d.pg != nil {
		// A team store's writes take turns per channel, inside the
		// transaction (tx.lockChannel), not per process.
		return d.pg.once(ctx, d, pgShared, immediate, deadline, fn)
	}
	if immediate {
		var err error
		if deadline, err = d.lockWriter(ctx, deadline); err != nil {
			return nil, err
		}
		defer func() {
			d.turns.Add(1)
			<-d.writer
		}()
		if d.queue != nil {
			release, err := d.queue.acquire(ctx, deadline)
			if err != nil {
				return nil, err
			}
			defer release()
		}
	}
	for {
		changed, err := d.once(ctx, immediate, deadline, fn)
		if err == nil {
			return changed, nil
		}
		// SQLite's busy handler already waited; a BUSY that comes back
		// early (a snapshot conflict, a checkpoint) is worth another try
		// until the deadline, but only for a transaction that locks first.
		if !immediate || !isBusy(err) || time.Now().After(deadline) || ctx.Err() != nil {
			if isBusy(err) && immediate {
				return nil, ErrBusy
			}
			return nil, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// setUpConn prepares every new read-write connection: stable query plans,
// and SQLite's lock waits bounded by the call's deadline, or busyTimeout.
func setUpConn(c *sqlite3.Conn, busyTimeout time.Duration) error {
	if err := stablePlans(c); err != nil {
		return err
	}
	return c.BusyHandler(waitForLock(busyTimeout))
}

type lockDeadlineKey struct{}

// withLockDeadline tells the connection's busy handler when the call stops
// waiting for SQLite's lock. It is a value, not a cancellation: a
// transaction that got the lock in time finishes however long it takes.
func withLockDeadline(ctx context.Context, deadline time.Time) context.Context {
	return context.WithValue(ctx, lockDeadlineKey{}, deadline)
}

// waitForLock is a connection's busy handler. A call has one deadline for
// all its waiting — its turn in this process, the writers' queue, SQLite's
// lock — so a call that queued 4 s in the process waits at most 1 s more
// here; SQLite's own busy_timeout would start 5 s afresh. Without a
// deadline in the context (a migration, a backup) it allows busyTimeout
// from the first retry.
func waitForLock(busyTimeout time.Duration) func(ctx context.Context, count int) bool {
	var first time.Time // the handler belongs to one connection, used by one call at a time
	return func(ctx context.Context, count int) bool {
		now := time.Now()
		if count == 0 {
			first = now
		}
		deadline, ok := ctx.Value(lockDeadlineKey{}).(time.Time)
		if !ok {
			deadline = first.Add(busyTimeout)
		}
		if !now.Before(deadline) {
			return false
		}
		// Retry about every millisecond, spread so that waiters do not
		// retry in step.
		time.Sleep(min(time.Until(deadline), time.Duration(500+rand.IntN(1000))*time.Microsecond))
		return true
	}
}

// lockWriter waits for this process's turn to write. The deadline is how
// long the queue may stand still, not how long it may be: a hub's burst of
// a few hundred writes takes its turns one after another, and the last is
// as good as the first. Each time the deadline passes while turns were
// taken meanwhile, it moves on by the busy timeout; the deadline returned
// is the one the call's next steps (the machine's queue, SQLite's lock)
// wait by.
func (d *DB) lockWriter(ctx context.Context, deadline time.Time) (time.Time, error) {
	for {
		seen := d.turns.Load()
		timer := time.NewTimer(time.Until(deadline))
		select {
		case d.writer <- struct{}{}:
			timer.Stop()
			return deadline, nil
		case <-ctx.Done():
			timer.Stop()
			return deadline, ctx.Err()
		case <-timer.C:
		}
		if d.turns.Load() == seen {
			return deadline, busyError{cause: waitedOwnQueue}
		}
		deadline = time.Now().Add(d.busyTimeout)
	}
}

func (d *DB) once(ctx context.Context, immediate bool, deadline time.Time, fn func(*tx) error) (*Change, error) {
	ctx = withLockDeadline(ctx, deadline)
	opts := &sql.TxOptions{}
	if immediate {
		opts.Isolation = sql.LevelSerializable // the driver's BEGIN IMMEDIATE
	}
	d.stmts.prepare(ctx)
	sqlTx, err := d.sql.BeginTx(ctx, opts)
	if err != nil {
		return nil, d.wrap(err)
	}
	t := &tx{Tx: sqlTx, ctx: ctx, now: Timestamp(d.clock()), stmts: d.stmts}
	if err := fn(t); err != nil {
		sqlTx.Rollback()
		return nil, d.wrap(err)
	}
	if t.wrote {
		if err := d.stillAtPath(); err != nil {
			sqlTx.Rollback()
			return nil, err
		}
	}
	if err := sqlTx.Commit(); err != nil {
		sqlTx.Rollback()
		return nil, d.wrap(err)
	}
	return t.changed, nil
}

// wrap keeps user errors and busy errors as they are (callers test for
// them) and explains every other driver error.
func (d *DB) wrap(err error) error {
	var ue *UserError
	var se *StorageError
	if errors.As(err, &ue) || errors.As(err, &se) || isBusy(err) || errors.Is(err, ErrBusy) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return d.describe(err)
}

// Now is the current time in the format both editions write:
// 2026-11-29T18:09:27.662912+00:00.
func Now() string {
	return Timestamp(time.Now())
}

// Timestamp is t in the format both editions write.
func Timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000") + "+00:00"
}

// UserError is a refusal caused by the call's arguments or the state of the
// conversation. Its message is one sentence that says what to do.
type UserError struct{ msg string }

func (e *UserError) Error() string { return e.msg }

func userErrorf(format string, args ...any) error {
	return &UserError{msg: fmt.Sprintf(format, args...)}
}

// StorageError is a state of the database file or its disk that stops a
// call and that the user must fix (a full disk, say). Its message is one
// sentence that says what happened and what to do; it wraps the driver's
// error behind it, if any.
type StorageError struct {
	msg string
	err error
}

func (e *StorageError) Error() string { return e.msg }
func (e *StorageError) Unwrap() error { return e.err }

// storageErrorf formats a StorageError as fmt.Errorf does, %w included.
func storageErrorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &StorageError{msg: err.Error(), err: errors.Unwrap(err)}
}

// quoteList renders names for an error message: a, b, c.
func quoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
