// Package store is the chat protocol: parties, channels, messages, the
// items' handshake (ask → ack → resolve → prune-ok), cursors and read
// receipts, the inbox, search's scope and hits, and the person's own
// commands — the same on every engine. Every tool call is one transaction
// that an engine runs (package engine is the port; packages sqlite and
// postgres are the engines, named only in open.go); the protocol's SQL is
// written in SQLite's dialect, and it says where a call must hold a
// channel's turn (tx.lockChannel), never how. The hook, the page and log
// get a ReadOnly handle, which has no write methods.
package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// DefaultBusyTimeout is how long a call waits for its turn to write before
// it gives up with a retryable error, unless Options.BusyTimeout says
// otherwise.
const DefaultBusyTimeout = engine.DefaultBusyTimeout

// ErrBusy matches (errors.Is) the error of a call that waited its whole
// busy timeout for its turn to write. The call wrote nothing and can be
// retried. The error's text names the timeout the call had and what it
// waited for.
var ErrBusy = engine.ErrBusy

// ErrNoDatabase reports that the database file does not exist (nobody has
// used the chat yet). A read-only handle never creates it.
var ErrNoDatabase = engine.ErrNoDatabase

// ErrUnknownParty reports a folder whose party has never used the chat. A
// read-only handle never creates a party.
var ErrUnknownParty = errors.New("this folder is not a chat party yet — any chat tool call from it makes it one")

// Change describes the newest row a committed call touched: what the tick
// file and watchers report.
type Change = engine.Change

// UserError is a refusal caused by the call's arguments or the state of the
// conversation. Its message is one sentence that says what to do.
type UserError = engine.UserError

// StorageError is a state of the database file or its disk that stops a
// call and that the user must fix (a full disk, say).
type StorageError = engine.StorageError

var userErrorf = engine.UserErrorf

// Now is the current time in the format both editions write:
// 2026-11-29T18:09:27.662912+00:00.
func Now() string { return engine.Now() }

// Timestamp is t in the format both editions write.
func Timestamp(t time.Time) string { return engine.Timestamp(t) }

// DB is a read-write handle on the chat.
type DB struct {
	eng engine.Engine
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
	clock   func() time.Time
	att     attention
}

// New is a handle on the chat an engine opened (open.go opens them by
// the store's address); Options' Clock is the time it writes.
func New(eng engine.Engine, o Options) *DB {
	return &DB{eng: eng, notify: notifier{delay: notifyDelay}, clock: o.clock(), att: attention{rules: o.Attention}}
}

// NewReadOnly is a read-only handle on the chat an engine opened.
func NewReadOnly(eng engine.Engine) *ReadOnly { return &ReadOnly{eng: eng} }

// Path names the store: the database file, or a team store's URL without
// its password.
func (d *DB) Path() string { return d.eng.Where() }

// Close waits for the last OnCommit and releases the handle.
func (d *DB) Close() error {
	d.notify.flush()
	return d.eng.Close()
}

// State names the store's committed state: it changes with every commit
// that wrote. ok is false when it cannot tell.
func (d *DB) State() (string, bool) { return d.eng.State() }

// Version reads the store's schema version.
func (d *DB) Version(ctx context.Context) (int, error) {
	v, err := d.eng.Version(ctx)
	return v, d.wrap(err)
}

// tx is one tool call's transaction: the engine's, and what the protocol
// keeps of it — the call's time and the row the tick file will report.
type tx struct {
	et      engine.Tx
	ctx     context.Context
	now     string
	changed *Change
	// att are the handle's rules of attention; attended is what
	// addressing decided for the call's last post (mentions.go).
	att      attention
	attended attended
}

func (t *tx) exec(query string, args ...any) (sql.Result, error) { return t.et.Exec(query, args...) }
func (t *tx) query(query string, args ...any) (*sql.Rows, error) { return t.et.Query(query, args...) }
func (t *tx) row(query string, args ...any) *sql.Row             { return t.et.Row(query, args...) }

// insert runs an INSERT … RETURNING id and stores the new row's id (both
// engines have RETURNING; only SQLite has LastInsertId).
func (t *tx) insert(id *int64, query string, args ...any) error {
	return t.et.Insert(id, query, args...)
}

// wrote reports that the transaction wrote.
func (t *tx) wrote() bool { return t.et.Wrote() }

// The turns a call takes within its transaction (engine.Tx): a writing
// call holds the channel it writes in from the moment it finds it, so
// that a channel's seqs are gapless and an item's state moves one call at
// a time.

func (t *tx) lockChannel(id int64) (fresh bool, err error) { return t.et.LockChannel(id) }
func (t *tx) tryLockChannel(id int64) (got, recheck bool, err error) {
	return t.et.TryLockChannel(id)
}
func (t *tx) lockName(space engine.Space, name string) (fresh bool, err error) {
	return t.et.LockName(space, name)
}
func (t *tx) clock(key int64) { t.et.Clock(key) }
func (t *tx) wake(key int64)  { t.et.Wake(key) }

// touch records the row the tick file will report after the commit.
func (t *tx) touch(channel string, seq int64, author string) {
	t.changed = &Change{Channel: channel, Seq: seq, Author: author, CommittedAt: t.now}
}

// update runs fn as one call that writes.
func (d *DB) update(ctx context.Context, fn func(*tx) error) error {
	return d.run(ctx, engine.Update, fn)
}

// view runs fn as one call that reads, and may write what only moves
// forward (a cursor, last_seen).
func (d *DB) view(ctx context.Context, fn func(*tx) error) error {
	return d.run(ctx, engine.View, fn)
}

// exclusive runs fn as update does, but alone: no other call of any
// process runs beside it (the person's own commands, which rewrite
// parties and cursors across channels).
func (d *DB) exclusive(ctx context.Context, fn func(*tx) error) error {
	return d.run(ctx, engine.Exclusive, fn)
}

// read runs fn in a transaction that only reads: a search's, which no
// writer ever waits for (searchread.go).
func (d *DB) read(ctx context.Context, fn func(*tx) error) error {
	return d.run(ctx, engine.Read, fn)
}

// run runs fn in one transaction of kind k, and tells OnCommit what it
// changed once it committed. fn may run more than once, each time in a
// fresh transaction (engine.Engine.Run): it assigns its outputs rather
// than appending to them. Within a call Once runs, fn runs in that call's
// transaction (once.go).
func (d *DB) run(ctx context.Context, k engine.Kind, fn func(*tx) error) error {
	if k != engine.Exclusive {
		if ok, err := d.inAmbient(ctx, fn); ok {
			return err // the ambient call's transaction explains it
		}
	}
	changed, err := d.eng.Run(ctx, k, func(et engine.Tx) (*Change, error) {
		t := &tx{et: et, ctx: ctx, now: Timestamp(d.clock()), att: d.att}
		if err := fn(t); err != nil {
			return nil, err
		}
		return t.changed, nil
	})
	if err != nil {
		return d.wrap(err)
	}
	if changed != nil && d.OnCommit != nil {
		d.notify.post(*changed, d.OnCommit)
	}
	return nil
}

// wrap keeps the errors callers test for as they are — a refusal, a state
// of the store the user must fix, a busy store, an unknown party, the
// call's own end — and has the engine explain every other.
func (d *DB) wrap(err error) error { return wrap(d.eng, err) }

func wrap(eng engine.Engine, err error) error {
	var ue *UserError
	var se *StorageError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue), errors.As(err, &se), errors.Is(err, ErrBusy), errors.Is(err, ErrUnknownParty),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return eng.Describe(err)
}

// quoteList renders names for an error message: a, b, c.
func quoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
