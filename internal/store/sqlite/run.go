package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// The write path. A call that writes waits, in this order, and within one
// deadline, the busy timeout (Options.BusyTimeout) from its start:
//
//  1. its turn in this process (lockWriter on Engine.writer): one write
//     transaction of the process at a time, the others asleep, not polling;
//  2. its turn among the writers of every process (writerQueue.acquire in
//     queue.go): a flock on chat.db.lock, woken by the release itself;
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
// the one at the path; after it, the daily backup runs in the background
// and cannot fail the call.
//
// What this asks of every fn:
//
//   - fn may run more than once (steps 4 and the view's retry), each time
//     in a fresh transaction: it assigns its outputs rather than appending
//     to them, and changes nothing outside the transaction but them.
//   - fn prepares no statement on the handle (stmtCache prepares between
//     calls, before the transaction begins): inside it, the only idle
//     connection may be the transaction's own.
//   - One connection serves one call at a time, which is what lets the
//     busy handler keep its state in a closure.

// Run runs fn in one transaction of kind k (engine.Engine). On SQLite
// every writing call is alone, so Update and Exclusive are one.
func (e *Engine) Run(ctx context.Context, k engine.Kind, fn func(engine.Tx) (*engine.Change, error)) (*engine.Change, error) {
	if k == engine.Read {
		return nil, e.read(ctx, fn)
	}
	deadline := time.Now().Add(e.busyTimeout)
	changed, err := e.attempt(ctx, k != engine.View, deadline, fn)
	if k == engine.View && (isBusy(err) || errors.Is(err, engine.ErrBusy)) {
		changed, err = e.attempt(ctx, true, deadline, fn)
	}
	if errors.Is(err, engine.ErrBusy) {
		err = engine.BusyFor(err, e.busyTimeout) // the time this call had, not the default
	}
	if err == nil {
		e.afterCommit()
	}
	return changed, err
}

// read runs fn in a transaction that only reads: it takes no writer slot,
// no turn in the writers' queue and no write lock, and is never retried as
// a writer (as a view is when SQLite reports BUSY); a statement in it that
// writes fails. A search runs so, and no writer ever waits for it.
func (e *Engine) read(ctx context.Context, fn func(engine.Tx) (*engine.Change, error)) error {
	e.stmts.prepare(ctx)
	sqlTx, err := e.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer sqlTx.Rollback()
	_, err = fn(&tx{Tx: sqlTx, ctx: ctx, stmts: e.stmts})
	return err
}

// attempt runs fn until it commits, fails for another reason than a lock,
// or the deadline passes.
func (e *Engine) attempt(ctx context.Context, immediate bool, deadline time.Time, fn func(engine.Tx) (*engine.Change, error)) (*engine.Change, error) {
	if immediate {
		var err error
		if deadline, err = e.lockWriter(ctx, deadline); err != nil {
			return nil, err
		}
		defer func() {
			e.turns.Add(1)
			<-e.writer
		}()
		if e.queue != nil {
			release, err := e.queue.acquire(ctx, deadline)
			if err != nil {
				return nil, err
			}
			defer release()
		}
	}
	for {
		changed, err := e.once(ctx, immediate, deadline, fn)
		if err == nil {
			return changed, nil
		}
		// SQLite's busy handler already waited; a BUSY that comes back
		// early (a snapshot conflict, a checkpoint) is worth another try
		// until the deadline, but only for a transaction that locks first.
		if !immediate || !isBusy(err) || time.Now().After(deadline) || ctx.Err() != nil {
			if isBusy(err) && immediate {
				return nil, engine.ErrBusy
			}
			return nil, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lockWriter waits for this process's turn to write, as long as turns
// are taken (engine.Wait): a hub's burst of a few hundred writes takes its
// turns one after another. The deadline returned is the one the call's
// next steps (the machine's queue, SQLite's lock) wait by.
func (e *Engine) lockWriter(ctx context.Context, deadline time.Time) (time.Time, error) {
	got, err := engine.Wait(ctx, time.Until(deadline), e.busyTimeout,
		func() (int64, error) { return e.turns.Load(), nil },
		func(ctx context.Context, wait time.Duration) (bool, error) {
			deadline = time.Now().Add(wait)
			timer := time.NewTimer(wait)
			defer timer.Stop()
			select {
			case e.writer <- struct{}{}:
				return true, nil
			case <-ctx.Done():
				return false, ctx.Err()
			case <-timer.C:
				return false, nil
			}
		})
	if err == nil && !got {
		err = engine.Busy{Cause: engine.OwnQueue}
	}
	return deadline, err
}

func (e *Engine) once(ctx context.Context, immediate bool, deadline time.Time, fn func(engine.Tx) (*engine.Change, error)) (*engine.Change, error) {
	ctx = withLockDeadline(ctx, deadline)
	opts := &sql.TxOptions{}
	if immediate {
		opts.Isolation = sql.LevelSerializable // the driver's BEGIN IMMEDIATE
	}
	e.stmts.prepare(ctx)
	sqlTx, err := e.sql.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	t := &tx{Tx: sqlTx, ctx: ctx, stmts: e.stmts, claimsMark: e.path + ClaimsMarkSuffix}
	changed, err := fn(t)
	if err != nil {
		sqlTx.Rollback()
		return nil, err
	}
	if t.wrote {
		if err := e.stillAtPath(); err != nil {
			sqlTx.Rollback()
			return nil, err
		}
	}
	if err := sqlTx.Commit(); err != nil {
		sqlTx.Rollback()
		return nil, err
	}
	return changed, nil
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

// tx is one transaction on SQLite (engine.Tx). Its writing calls are
// alone, so it has no turns to take within one.
type tx struct {
	*sql.Tx
	ctx   context.Context
	stmts *stmtCache // nil: prepare every query afresh
	wrote bool       // an exec ran: the commit writes
	// claimsMark is the file MarkPathClaims writes; "" in a read.
	claimsMark string
}

func (t *tx) Exec(query string, args ...any) (sql.Result, error) {
	t.wrote = true
	if st := t.stmts.in(t.ctx, t.Tx, query); st != nil {
		return st.ExecContext(t.ctx, args...)
	}
	return t.ExecContext(t.ctx, query, args...)
}

func (t *tx) Query(query string, args ...any) (*sql.Rows, error) {
	if st := t.stmts.in(t.ctx, t.Tx, query); st != nil {
		return st.QueryContext(t.ctx, args...)
	}
	return t.QueryContext(t.ctx, query, args...)
}

func (t *tx) Row(query string, args ...any) *sql.Row {
	if st := t.stmts.in(t.ctx, t.Tx, query); st != nil {
		return st.QueryRowContext(t.ctx, args...)
	}
	return t.QueryRowContext(t.ctx, query, args...)
}

func (t *tx) Insert(id *int64, query string, args ...any) error {
	t.wrote = true
	return t.Row(query, args...).Scan(id)
}

func (t *tx) Prepare(query string) (*sql.Stmt, error) {
	t.wrote = true // only the seeding prepares, and it writes
	return t.PrepareContext(t.ctx, query)
}

func (t *tx) Wrote() bool { return t.wrote }

func (t *tx) LockChannel(int64) (bool, error)             { return false, nil }
func (t *tx) TryLockChannel(int64) (bool, bool, error)    { return true, false, nil }
func (t *tx) LockName(engine.Space, string) (bool, error) { return false, nil }
func (t *tx) Clock(int64)                                 {}
func (t *tx) Wake(int64)                                  {}
func (t *tx) SeenParty(id int64, now string) error {
	_, err := t.Exec(`UPDATE parties SET last_seen = ? WHERE id = ?`, now, id)
	return err
}
