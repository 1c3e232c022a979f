package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// Run runs fn in one transaction of kind k (engine.Engine): a read in a
// READ ONLY transaction, anything else by once.
func (e *Engine) Run(ctx context.Context, k engine.Kind, fn func(engine.Tx) (*engine.Change, error)) (*engine.Change, error) {
	if k == engine.Read {
		return nil, e.read(ctx, fn)
	}
	if e.readOnly {
		return nil, fmt.Errorf("the read-only handle on %s runs no writing call", e.where)
	}
	mode := pgShared
	if k == engine.Exclusive {
		mode = pgExclusive
	}
	// A team store has no store-wide write lock to upgrade to: a view
	// reads without locks, and what it writes (a cursor, last_seen) only
	// ever moves forward, so it conflicts with no one's writes but those
	// to the same row.
	changed, err := e.once(ctx, mode, k != engine.View, time.Now().Add(e.patience), fn)
	if errors.Is(err, engine.ErrBusy) {
		err = engine.BusyFor(err, e.patience) // the time this call had, not the default
	}
	return changed, err
}

// once runs fn in one transaction, taking the locks it needs as it goes
// (lock.go), waiting for any of them only until the deadline, and
// announces what it changed at the commit.
//
// A pooled connection the server closed (a restart cuts them all; the
// pool finds out only when it next uses one) fails the first statement:
// then nothing was written, and the call runs again on a new connection,
// within the deadline. So does a call PostgreSQL chose to end to break a
// deadlock. A connection lost at the commit of a transaction that wrote
// may have committed, so that is reported, never run twice.
func (e *Engine) once(ctx context.Context, mode int, writing bool, deadline time.Time, fn func(engine.Tx) (*engine.Change, error)) (*engine.Change, error) {
	for {
		changed, atCommit, err := e.try(ctx, mode, writing, deadline, fn)
		if err == nil || atCommit || !(lostConnection(err) || retryable(err)) || time.Now().After(deadline) || ctx.Err() != nil {
			return changed, err
		}
		if unreachable(err) { // no server yet: do not spin
			time.Sleep(min(20*time.Millisecond, time.Until(deadline)))
		}
	}
}

// retryable reports a transaction PostgreSQL ended so that another could
// go on (a deadlock, a serialization failure): it wrote nothing, and the
// same call may well succeed at once.
//
// A unique violation is retried too: two calls that made the same party
// name from different base names ("x" taking "x~2" beside a folder named
// "x~2") — the second finds the first's row when it runs again.
func retryable(err error) bool {
	state := sqlState(err)
	return state == "40P01" || state == "40001" || state == "23505"
}

// lostConnection reports the error of a connection that broke or that the
// server closed, after which a new connection may well work.
func lostConnection(err error) bool {
	if misconfigured(err) {
		return false // it fails the same way until the person changes something
	}
	state := sqlState(err)
	return unreachable(err) || connClosed(err) || strings.HasPrefix(state, "08") || strings.HasPrefix(state, "57P")
}

// try is one attempt of once; atCommit says the commit of a transaction
// that wrote failed.
func (e *Engine) try(ctx context.Context, mode int, writing bool, deadline time.Time, fn func(engine.Tx) (*engine.Change, error)) (changed *engine.Change, atCommit bool, err error) {
	wait := time.Until(deadline)
	if wait < time.Millisecond {
		return nil, false, engine.ErrBusy
	}
	conn, release, err := e.conn(ctx)
	if err != nil {
		return nil, false, err
	}
	defer release()
	defer conn.Close()
	t := &tx{ctx: ctx, e: e, team: newTeamTx(writing || mode == pgExclusive, e.patience)}
	t.begin = func() error { return e.begin(t, conn, mode, wait) }
	defer func() {
		if t.Tx != nil {
			t.Tx.Rollback()
		}
	}()
	if writing || mode == pgExclusive {
		if err := t.begin(); err != nil {
			return nil, false, err
		}
	} else {
		// A read runs its statements as they come, each on its own, until
		// it first writes or locks (see tx.begin): a read that only reads
		// saves a round trip each for BEGIN, the lock and COMMIT, and
		// PostgreSQL's statements in a READ COMMITTED transaction see no
		// more of one state than those outside one.
		t.conn = conn
	}
	changed, err = fn(t)
	if err != nil {
		return nil, false, err
	}
	if t.Tx == nil && changed == nil {
		return nil, false, nil // read only: nothing to commit
	}
	if err := t.writes(); err != nil {
		return nil, false, err
	}
	if err := e.announce(t, mode, changed); err != nil {
		return nil, false, err
	}
	if err := t.Tx.Commit(); err != nil {
		// Whether a commit that lost its connection committed is unknown;
		// a transaction that wrote nothing is safe to run again.
		return nil, t.wrote, e.describeCommit(err, t.wrote)
	}
	return changed, false, nil
}

// begin starts t's transaction on conn and takes pgWriteKey as mode says,
// waiting for it no longer than wait.
func (e *Engine) begin(t *tx, conn *sql.Conn, mode int, wait time.Duration) error {
	sqlTx, err := conn.BeginTx(t.ctx, nil)
	if err != nil {
		return e.Describe(err)
	}
	t.Tx = sqlTx
	// lock_timeout takes no parameter; wait is a number of milliseconds.
	// The lock's timeout (the transaction's own, as SET LOCAL sets it)
	// and the lock in one round trip: every call that writes pays for them.
	lock := `SELECT set_config('lock_timeout', $1, true), pg_advisory_xact_lock_shared($2)`
	if mode == pgExclusive {
		lock = `SELECT set_config('lock_timeout', $1, true), pg_advisory_xact_lock($2)`
	}
	if _, err := sqlTx.ExecContext(t.ctx, lock, fmt.Sprintf("%dms", wait.Milliseconds()), pgWriteKey); err != nil {
		return e.Describe(err)
	}
	return nil
}

// announce moves the clocks of what t wrote and sends its announcement,
// in one round trip, before the commit.
func (e *Engine) announce(t *tx, mode int, changed *engine.Change) error {
	var keys []int64
	if t.wrote {
		keys = t.team.clockKeys()
		if mode == pgExclusive && !slices.Contains(keys, 0) {
			// The person's commands rewrite parties, seats and cursors
			// across channels: every party's state must move.
			keys = append([]int64{0}, keys...)
		}
	}
	payload := ""
	if changed != nil {
		wake := t.team.wakeKeys()
		if mode == pgExclusive {
			wake = []int64{0}
		}
		payload = announcement(*changed, wake)
	}
	const bump = `INSERT INTO store_clocks (key, n) SELECT k, 1 FROM unnest($1::bigint[]) k
		ON CONFLICT (key) DO UPDATE SET n = store_clocks.n + 1`
	var err error
	switch {
	case len(keys) > 0 && payload != "":
		_, err = t.Tx.ExecContext(t.ctx, `WITH bumped AS (`+bump+` RETURNING 1) SELECT pg_notify($2, $3), (SELECT count(*) FROM bumped)`, keys, NotifyChannel, payload)
	case len(keys) > 0:
		_, err = t.Tx.ExecContext(t.ctx, bump, keys)
	case payload != "":
		_, err = t.Tx.ExecContext(t.ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, payload)
	}
	if err != nil {
		return e.Describe(err)
	}
	return nil
}

// poolPatience is how many busy timeouts the pool may stand still before a
// call waiting for it fails. The pool is a queue of this process's own
// calls, and each of them holding a connection either commits or fails by
// its own channel's rule (waitForChannel) — but behind a hundred calls of
// other processes in one channel it may have its turn only every several
// seconds on a loaded machine. The pool's own bound is for a store that
// answers nothing.
const poolPatience = 6

// conn waits for one of the pool's connections (Options.MaxConns), as
// long as calls of this process give theirs back: a call fails "busy"
// only when none did for poolPatience busy timeouts. The caller gives
// the turn back with release once it has closed the connection.
//
// The calls waiting have their turns in the order they came (a channel's
// queue of senders is first in, first out). database/sql alone would
// hand a freed connection to a random waiter: behind a full pool, a few
// calls of a busy hub then waited many times as long as the rest.
func (e *Engine) conn(ctx context.Context) (*sql.Conn, func(), error) {
	ctx, release, err := e.HoldTurn(ctx)
	if err != nil {
		return nil, nil, err
	}
	conn, err := e.sql.Conn(ctx)
	if err != nil {
		release()
		return nil, nil, e.Describe(err)
	}
	return conn, release, nil
}

// turnHeld marks a context whose call holds a turn of its pool.
type turnHeld struct{ p *pool }

// HoldTurn waits for a turn unless ctx's call holds one already (a read
// call holds one from its first look at the party's state to its
// commit, so that it queues once). release gives it back; ctx, passed
// on, says it is held (engine.Turns).
func (e *Engine) HoldTurn(ctx context.Context) (held context.Context, release func(), err error) {
	if ctx.Value(turnHeld{e.pool}) != nil {
		return ctx, func() {}, nil
	}
	if err := e.pool.turn(ctx, e.patience); err != nil {
		return ctx, nil, err
	}
	return context.WithValue(ctx, turnHeld{e.pool}, true), e.pool.release, nil
}

// turn waits for a turn, first come first served, while turns are given
// back (engine.Wait).
func (p *pool) turn(ctx context.Context, patience time.Duration) error {
	select {
	case p.turns <- struct{}{}:
		return nil
	default:
	}
	got, err := engine.Wait(ctx, poolPatience*patience, poolPatience*patience,
		func() (int64, error) { return p.finished.Load(), nil },
		func(ctx context.Context, wait time.Duration) (bool, error) {
			timer := time.NewTimer(wait)
			defer timer.Stop()
			select {
			case p.turns <- struct{}{}:
				return true, nil
			case <-ctx.Done():
				return false, ctx.Err()
			case <-timer.C:
				return false, nil
			}
		})
	if err == nil && !got {
		err = engine.Busy{Waited: poolPatience * patience, Cause: engine.Pool}
	}
	return err
}

// release gives back a turn.
func (p *pool) release() {
	p.finished.Add(1)
	<-p.turns
}

// read runs fn in a READ ONLY transaction, again on a new connection
// when the pooled one was closed by the server (see once). It holds one
// of the pool's turns throughout, as every call does: a read that took a
// connection without one took it from the calls queued for a turn, and
// eight searches held every connection a write could have.
func (e *Engine) read(ctx context.Context, fn func(engine.Tx) (*engine.Change, error)) error {
	ctx, release, err := e.HoldTurn(ctx)
	if err != nil {
		return err
	}
	defer release()
	for attempt := 1; ; attempt++ {
		err := e.readOnce(ctx, fn)
		if err == nil || !lostConnection(err) || unreachable(err) || attempt == 3 || ctx.Err() != nil {
			return err
		}
	}
}

func (e *Engine) readOnce(ctx context.Context, fn func(engine.Tx) (*engine.Change, error)) error {
	sqlTx, err := e.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return e.Describe(err)
	}
	defer sqlTx.Rollback()
	_, err = fn(&tx{Tx: sqlTx, ctx: ctx, e: e})
	return err
}

// tx is one transaction on a team store (engine.Tx): the protocol's SQL
// rewritten, and the turns the protocol asks for taken (lock.go).
type tx struct {
	// Tx is nil while a read has not yet written or locked anything: its
	// statements run on conn, and begin starts the transaction at the
	// first write or lock (try).
	*sql.Tx
	conn  *sql.Conn
	begin func() error
	ctx   context.Context
	e     *Engine
	wrote bool // an exec ran: the commit writes
	// team is the transaction's channel locks and clocks (lock.go); nil
	// in a READ ONLY transaction.
	team *teamTx
}

// forEngine is a statement as PostgreSQL takes it: the text in its
// dialect, and each flag as the 0 or 1 the schema stores (SQLite's driver
// does that itself; PostgreSQL's refuses a bool for an integer).
func (t *tx) forEngine(query string, args []any) (string, []any) {
	for i, a := range args {
		if b, ok := a.(bool); ok {
			args[i] = 0
			if b {
				args[i] = 1
			}
		}
	}
	pg := t.e.rewrite(query)
	return pg.text, pg.args(args)
}

func (t *tx) Exec(query string, args ...any) (sql.Result, error) {
	if err := t.writes(); err != nil {
		return nil, err
	}
	t.wrote = true
	query, args = t.forEngine(query, args)
	return t.ExecContext(t.ctx, query, args...)
}

func (t *tx) Query(query string, args ...any) (*sql.Rows, error) {
	query, args = t.forEngine(query, args)
	if t.Tx == nil {
		return t.conn.QueryContext(t.ctx, query, args...)
	}
	return t.QueryContext(t.ctx, query, args...)
}

func (t *tx) Row(query string, args ...any) *sql.Row {
	query, args = t.forEngine(query, args)
	if t.Tx == nil {
		return t.conn.QueryRowContext(t.ctx, query, args...)
	}
	return t.QueryRowContext(t.ctx, query, args...)
}

func (t *tx) Insert(id *int64, query string, args ...any) error {
	if err := t.writes(); err != nil {
		return err
	}
	t.wrote = true
	return t.Row(query, args...).Scan(id)
}

func (t *tx) Prepare(query string) (*sql.Stmt, error) {
	if err := t.writes(); err != nil {
		return nil, err
	}
	t.wrote = true // only the seeding prepares, and it writes
	pg := t.e.rewrite(query)
	if pg.order != nil {
		return nil, fmt.Errorf("prepare %q: a prepared statement must use its parameters 1 to n", query)
	}
	return t.PrepareContext(t.ctx, pg.text)
}

func (t *tx) Wrote() bool { return t.wrote }

// writes starts the transaction of a read that is about to write or take
// a lock, which only a transaction keeps until its commit.
func (t *tx) writes() error {
	if t.Tx != nil || t.begin == nil {
		return nil
	}
	return t.begin()
}
