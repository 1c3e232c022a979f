package store

// The PostgreSQL engine, for a team that shares one store across machines.
// It speaks database/sql to the "pgx" driver, which this package does not
// import: a binary that serves PostgreSQL stores links it
// (github.com/jackc/pgx/v5/stdlib), and the hook, which reads SQLite on
// every prompt, does not pay for it.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpp/mcpp-chat/internal/redact"
)

// pgMigrateKey is the advisory lock under which a PostgreSQL schema is
// brought up to date, so that two processes starting at once take turns
// instead of racing on CREATE TABLE. ("mcppchat" in ASCII, as one int64.)
const pgMigrateKey int64 = 0x6d63_7070_6368_6174

// pgIdleTime is how long a pool keeps a connection nobody uses. A hub
// uses the store from many requests at once (each checks its token, and
// calls, summaries and long-polls overlap): a pool that closed what it
// did not need at the end of each burst opened it again at the next,
// each a new server process (~20 ms here, docs/performance.md) that
// prepares its statements again. A quiet minute gives them back.
const pgIdleTime = time.Minute

// setPool bounds a team store's pool: calls beyond max wait for a free
// connection (within their busy timeout) instead of each opening its own,
// which a thousand waiting members would turn into a thousand server
// processes and refusals once the server's limit is reached.
func setPool(db *sql.DB, max int) {
	db.SetMaxOpenConns(max)
	db.SetMaxIdleConns(max)
	db.SetConnMaxIdleTime(pgIdleTime)
}

// SetMaxConns bounds the read-only handle's pool of connections to a team
// store (DefaultMaxConns until then), before its first read; on SQLite it
// does nothing.
func (r *ReadOnly) SetMaxConns(n int) {
	if r.pg != nil && n > 0 {
		setPool(r.db, n)
		r.pg = newPostgres(r.pg.where, n, r.pg.patience)
	}
}

// OpenPostgres opens the team store at rawURL (postgres://… or
// postgresql://…) and brings its schema up to date. The "pgx" driver must
// be linked into the binary.
func OpenPostgres(ctx context.Context, rawURL string, o Options) (*DB, error) {
	o = o.orDefaults()
	db, err := openPostgres(ctx, rawURL, o.MaxConns)
	if err != nil {
		return nil, scrub(err)
	}
	where := redact.URL(rawURL)
	return &DB{sql: db, path: where, pg: newPostgres(where, o.MaxConns, o.BusyTimeout), writer: make(chan struct{}, 1),
		notify: notifier{delay: notifyDelay}, busyTimeout: o.BusyTimeout, clock: o.Clock}, nil
}

// Reader is a read-only handle on d's team store that reads through d's
// own pool and turns, so that a process holding both (the hub) opens no
// more connections than Options.MaxConns, and its long reads share the
// one bound (postgres_longread.go). Closing it leaves d open. On a
// database file it is nil: open one with OpenReadOnly.
func (d *DB) Reader() *ReadOnly {
	if d.pg == nil {
		return nil
	}
	return &ReadOnly{path: d.path, db: d.sql, pg: d.pg, shared: true}
}

// OpenReadOnlyPostgres opens the team store at rawURL for reading only:
// every read is a READ ONLY transaction, which PostgreSQL refuses to let
// write. It migrates nothing; a store without the schema is refused.
func OpenReadOnlyPostgres(ctx context.Context, rawURL string) (*ReadOnly, error) {
	where := redact.URL(rawURL)
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", where, scrub(err))
	}
	setPool(db, DefaultMaxConns)
	r := &ReadOnly{path: where, db: db, pg: newPostgres(where, DefaultMaxConns, DefaultBusyTimeout)}
	version, err := r.Version(ctx)
	if err == nil && version == 0 {
		err = fmt.Errorf("%w: the team store %s has no chat yet — the first chat call makes it", ErrNoDatabase, where)
	}
	if err != nil {
		db.Close()
		return nil, scrub(err)
	}
	return r, nil
}

// openPostgres connects to the PostgreSQL database at rawURL and brings
// its schema up to date.
func openPostgres(ctx context.Context, rawURL string, maxConns int) (*sql.DB, error) {
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", redact.URL(rawURL), err)
	}
	setPool(db, maxConns)
	if err := migratePostgres(ctx, db, redact.URL(rawURL)); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// migratePostgres applies the missing schema steps in one transaction
// (PostgreSQL's DDL is transactional: a step that fails leaves nothing
// behind) under pgMigrateKey. A newer schema, or a database holding
// tables that are not a chat store, is refused without writing.
func migratePostgres(ctx context.Context, db *sql.DB, where string) error {
	steps, err := PostgresSchema()
	if err != nil {
		return err
	}
	latest := len(steps)
	t, err := db.BeginTx(ctx, nil)
	if err != nil {
		if said := connectError(where, err); said != nil {
			return said
		}
		return fmt.Errorf("connect to %s: %w", where, err)
	}
	defer t.Rollback()
	if _, err := t.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, pgMigrateKey); err != nil {
		return fmt.Errorf("lock %s for its schema: %w", where, err)
	}
	version, err := pgSchemaVersion(ctx, t, where)
	if err != nil {
		return err
	}
	if version > latest {
		return fmt.Errorf("%s has schema version %d but this mcpp-chat knows only up to %d — upgrade mcpp-chat (the database was not changed)", where, version, latest)
	}
	for i, step := range steps[version:] {
		if _, err := t.ExecContext(ctx, step); err != nil {
			return fmt.Errorf("apply schema version %d to %s: %w", version+i+1, where, err)
		}
	}
	if version < latest {
		if _, err := t.ExecContext(ctx, `INSERT INTO schema_version (id, version, updated_at) VALUES (1, $1, $2)
			ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`,
			latest, Now()); err != nil {
			return fmt.Errorf("record schema version in %s: %w", where, err)
		}
	}
	// The clocks are the engine's, not the chat's schema (which is the
	// Python edition's): made here, under the same lock, by whichever
	// mcpp-chat first needs them.
	if _, err := t.ExecContext(ctx, storeClocksSchema); err != nil {
		return fmt.Errorf("make the clocks of %s: %w", where, err)
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("commit the schema of %s: %w", where, err)
	}
	return nil
}

// storeClocksSchema holds a team store's clocks (postgres_lock.go): a row per
// channel and party that writes moved, key 0 for the rest.
//
// The index finds a party's seats without reading every party's: the
// state of what a party sees (partyState) starts from them.
const storeClocksSchema = `CREATE TABLE IF NOT EXISTS store_clocks (key BIGINT PRIMARY KEY, n BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS store_seats_by_party ON channel_parties (party_id)`

// pgSchemaVersion is the schema version of the database: 0 when it has no
// tables at all (a new store). Tables without schema_version mean a
// database that belongs to something else.
func pgSchemaVersion(ctx context.Context, q *sql.Tx, where string) (int, error) {
	var hasVersion bool
	if err := q.QueryRowContext(ctx, `SELECT to_regclass('schema_version') IS NOT NULL`).Scan(&hasVersion); err != nil {
		return 0, fmt.Errorf("read the schema of %s: %w", where, err)
	}
	if !hasVersion {
		var tables int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&tables); err != nil {
			return 0, fmt.Errorf("read the schema of %s: %w", where, err)
		}
		if tables > 0 {
			return 0, fmt.Errorf("%s holds %d tables but no schema_version: it is not a chat store — give mcpp-chat an empty database of its own (the database was not changed)", where, tables)
		}
		return 0, nil
	}
	var version int
	err := q.QueryRowContext(ctx, `SELECT version FROM schema_version WHERE id = 1`).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the schema version of %s: %w", where, err)
	}
	return version, nil
}

// pgWriteKey is the advisory lock every call holds shared until its
// transaction ends, and the person's own commands and migrate's copy hold
// exclusively (postgres_lock.go): they alone run with no other call beside them.
const pgWriteKey = pgMigrateKey + 1

// How a call holds pgWriteKey.
const (
	pgShared = iota
	pgExclusive
)

// NotifyChannel is the PostgreSQL notification channel on which every
// commit that changed something is announced (announcement).
const NotifyChannel = "mcpp_chat"

// announcement is a commit's notification payload: the channel, seq and
// author, as in the tick line, then the clock keys whose waiters it
// concerns (WaitKeys), comma-separated. Releases before the keys sent
// only the first three, which a listener takes to concern everyone.
func announcement(c Change, keys []int64) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strconv.FormatInt(k, 10)
	}
	return fmt.Sprintf("%s %d %s %s", c.Channel, c.Seq, c.Author, strings.Join(parts, ","))
}

// AnnouncedKeys are the clock keys an announcement names; ok is false for
// one that names none, which concerns every waiter.
func AnnouncedKeys(payload string) (keys []int64, ok bool) {
	fields := strings.Fields(payload)
	if len(fields) != 4 {
		return nil, false
	}
	for _, f := range strings.Split(fields[3], ",") {
		k, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, false
		}
		keys = append(keys, k)
	}
	return keys, true
}

// WaitKeys are the clock keys of what the party me sees on a team store,
// for a waiter to be woken only by the commits that concern it
// (announcement): the channels it ever sat in, its own, and 0, the
// person's commands. nil on a database file, or for a party not made yet:
// then every change concerns the waiter.
func (d *DB) WaitKeys(ctx context.Context, me Identity) ([]int64, error) {
	if d.pg == nil {
		return nil, nil
	}
	key, by := me.Workspace, "workspace_path"
	if me.Team {
		key, by = me.Name, "name"
	}
	var id int64
	var channels string
	err := d.sql.QueryRowContext(ctx, `SELECT me.id, coalesce((SELECT string_agg(channel_id::text, ',') FROM channel_parties WHERE party_id = me.id), '')
		FROM parties me WHERE me.`+by+` = $1`, key).Scan(&id, &channels)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, d.pg.describe(err)
	}
	keys := []int64{0, -id}
	for _, f := range strings.Split(channels, ",") {
		if k, err := strconv.ParseInt(f, 10, 64); err == nil {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// postgres is the engine of a store on PostgreSQL: its write lock, its
// dialect and its announcements. The protocol is the package's, as on
// SQLite.
type postgres struct {
	where   string   // the URL without its password, for messages
	dialect sync.Map // SQLite text → PostgreSQL text, each query once
	// finished counts the calls that gave their connection back: a call
	// waiting for one goes on waiting while it moves (conn).
	finished atomic.Int64
	// turns holds one token per connection a call holds (conn, readOnly):
	// its capacity is the pool's.
	turns chan struct{}
	// long bounds the turns that long reads hold (postgres_longread.go).
	long *longReads
	// patience is how long a call waits for a turn while none is given
	// back, in busy timeouts (poolPatience of them).
	patience time.Duration
}

// newPostgres is the engine of a store at where, whose pool holds
// maxConns connections.
func newPostgres(where string, maxConns int, patience time.Duration) *postgres {
	return &postgres{where: where, turns: make(chan struct{}, maxConns), long: newLongReads(maxConns), patience: patience}
}

// once runs fn in one transaction, taking the locks it needs as it goes
// (postgres_lock.go), waiting for any of them only until the deadline, and
// announces what it changed at the commit.
//
// A pooled connection the server closed (a restart cuts them all; the
// pool finds out only when it next uses one) fails the first statement:
// then nothing was written, and the call runs again on a new connection,
// within the deadline. So does a call PostgreSQL chose to end to break a
// deadlock. A connection lost at the commit of a transaction that wrote
// may have committed, so that is reported, never run twice.
func (p *postgres) once(ctx context.Context, d *DB, mode int, writing bool, deadline time.Time, fn func(*tx) error) (*Change, error) {
	for {
		changed, atCommit, err := p.try(ctx, d, mode, writing, deadline, fn)
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
func (p *postgres) try(ctx context.Context, d *DB, mode int, writing bool, deadline time.Time, fn func(*tx) error) (changed *Change, atCommit bool, err error) {
	wait := time.Until(deadline)
	if wait < time.Millisecond {
		return nil, false, ErrBusy
	}
	conn, release, err := p.conn(ctx, d.sql, d.busyTimeout)
	if err != nil {
		return nil, false, err
	}
	defer release()
	defer conn.Close()
	t := &tx{ctx: ctx, now: Timestamp(d.clock()), dialect: p.rewrite, team: newTeamTx(writing || mode == pgExclusive, d.busyTimeout)}
	t.begin = func() error { return p.begin(t, conn, mode, wait) }
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
	if err := fn(t); err != nil {
		return nil, false, d.wrap(err)
	}
	if t.Tx == nil && t.changed == nil {
		return nil, false, nil // read only: nothing to commit
	}
	if err := t.writes(); err != nil {
		return nil, false, err
	}
	if err := p.announce(t, mode); err != nil {
		return nil, false, err
	}
	if err := t.Tx.Commit(); err != nil {
		// Whether a commit that lost its connection committed is unknown;
		// a transaction that wrote nothing is safe to run again.
		return nil, t.wrote, p.describeCommit(err, t.wrote)
	}
	return t.changed, false, nil
}

// begin starts t's transaction on conn and takes pgWriteKey as mode says,
// waiting for it no longer than wait.
func (p *postgres) begin(t *tx, conn *sql.Conn, mode int, wait time.Duration) error {
	sqlTx, err := conn.BeginTx(t.ctx, nil)
	if err != nil {
		return p.describe(err)
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
		return p.describe(err)
	}
	return nil
}

// announce moves the clocks of what t wrote and sends its announcement,
// in one round trip, before the commit.
func (p *postgres) announce(t *tx, mode int) error {
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
	if t.changed != nil {
		wake := t.team.wakeKeys()
		if mode == pgExclusive {
			wake = []int64{0}
		}
		payload = announcement(*t.changed, wake)
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
		return p.describe(err)
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
func (p *postgres) conn(ctx context.Context, db *sql.DB, patience time.Duration) (*sql.Conn, func(), error) {
	ctx, release, err := p.holdTurn(ctx, patience)
	if err != nil {
		return nil, nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		release()
		return nil, nil, p.describe(err)
	}
	return conn, release, nil
}

// turnHeld marks a context whose call holds a turn of its postgres.
type turnHeld struct{ p *postgres }

// holdTurn waits for a turn unless ctx's call holds one already (a read
// call holds one from its first look at the party's state to its
// commit, so that it queues once). release gives it back; ctx, passed
// on, says it is held.
func (p *postgres) holdTurn(ctx context.Context, patience time.Duration) (held context.Context, release func(), err error) {
	if ctx.Value(turnHeld{p}) != nil {
		return ctx, func() {}, nil
	}
	if err := p.turn(ctx, patience); err != nil {
		return ctx, nil, err
	}
	return context.WithValue(ctx, turnHeld{p}, true), p.release, nil
}

func (p *postgres) turn(ctx context.Context, patience time.Duration) error {
	select {
	case p.turns <- struct{}{}:
		return nil
	default:
	}
	for {
		seen := p.finished.Load()
		timer := time.NewTimer(poolPatience * patience)
		select {
		case p.turns <- struct{}{}:
			timer.Stop()
			return nil
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		if p.finished.Load() == seen {
			return busyError{waited: poolPatience * patience, cause: waitedPool}
		}
	}
}

// release gives back a turn.
func (p *postgres) release() {
	p.finished.Add(1)
	<-p.turns
}

// partyState names the state of what one party sees: the clocks of the
// channels it has ever sat in, its own, and row 0 (the person's commands).
// Every write that changes the party's inbox bumps one of them — it
// happens in one of those channels under its lock (a consumer is seated
// when its item is raised, and leaving keeps the seat's row), or is the
// party's own — so other channels' writes leave it where it was. The set
// itself is read with the clocks: a channel the party joins enters it and
// changes the name. So do the cursors of its channels: a peer's read
// moves only the peer's own clock, and the party's read receipts
// (unread_by_peers) move with it. Cursors only go forward (the person's
// commands that set one bump row 0), so their sum moves at every read
// that moves one. One probe per seat, whatever the size of the history:
// every inbox on a team store asks it.
func (p *postgres) partyState(ctx context.Context, q rowQuerier, id Identity) (string, bool) {
	state, _, ok := p.partyStateOf(ctx, q, id)
	return state, ok
}

// partyStateOf is partyState and the party's row, which a read call then
// need not look up again.
func (p *postgres) partyStateOf(ctx context.Context, q rowQuerier, id Identity) (string, party, bool) {
	key, by := id.Workspace, "workspace_path"
	if id.Team {
		key, by = id.Name, "name"
	}
	var state sql.NullString
	var me party
	err := q.QueryRowContext(ctx, `SELECT me.id, me.name, me.last_seen, me.id || '|' || coalesce((
			SELECT string_agg(k.key || ':' || k.n, ',' ORDER BY k.key) FROM store_clocks k
			WHERE k.key IN (0, -me.id) OR k.key IN (SELECT channel_id FROM channel_parties WHERE party_id = me.id)), '') || '|' ||
		       (SELECT coalesce(sum(c.last_seq), 0) FROM cursors c
		        WHERE c.channel_id IN (SELECT channel_id FROM channel_parties WHERE party_id = me.id))
		FROM parties me WHERE me.`+by+` = $1`,
		key).Scan(&me.id, &me.name, &me.lastSeen, &state)
	if err != nil || !state.Valid {
		return "", party{}, false // no such party yet: nothing to keep
	}
	return p.where + "|" + state.String, me, true
}

// PartyState names the state of what the party id sees on a team store
// (partyState); ok is false on a database file, for a party not made
// yet, or when the store cannot be asked.
func (r *ReadOnly) PartyState(id Identity) (state string, ok bool) {
	if r.pg == nil {
		return "", false
	}
	return r.pg.partyState(context.Background(), r.db, id)
}

// fingerprint is the store's state: the sum of its clocks, which every
// commit that wrote moves forward.
func (p *postgres) fingerprint(q rowQuerier) (string, bool) {
	var n int64
	if err := q.QueryRowContext(context.Background(), `SELECT coalesce(sum(n), 0) FROM store_clocks`).Scan(&n); err != nil {
		return "", false
	}
	return fmt.Sprintf("%s|%d", p.where, n), true
}

// readOnly runs fn in a READ ONLY transaction, again on a new connection
// when the pooled one was closed by the server (see once). It holds one
// of the pool's turns throughout, as every call does: a read that took a
// connection without one took it from the calls queued for a turn, and
// eight searches held every connection a write could have.
func (p *postgres) readOnly(ctx context.Context, db *sql.DB, fn func(*tx) error) error {
	ctx, release, err := p.holdTurn(ctx, p.patience)
	if err != nil {
		return err
	}
	defer release()
	for attempt := 1; ; attempt++ {
		err := p.readOnlyOnce(ctx, db, fn)
		if err == nil || !lostConnection(err) || unreachable(err) || attempt == 3 || ctx.Err() != nil {
			return err
		}
	}
}

func (p *postgres) readOnlyOnce(ctx context.Context, db *sql.DB, fn func(*tx) error) error {
	sqlTx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return p.describe(err)
	}
	defer sqlTx.Rollback()
	if err := fn(&tx{Tx: sqlTx, ctx: ctx, now: Now(), dialect: p.rewrite}); err != nil {
		if errors.Is(err, ErrUnknownParty) {
			return err
		}
		return p.describe(err)
	}
	return nil
}

// sqlState is the SQLSTATE code of a PostgreSQL error, "" for others.
func sqlState(err error) string {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState()
	}
	return ""
}

// describe turns a driver error into one a user can act on.
func (p *postgres) describe(err error) error {
	state := sqlState(err)
	switch {
	case err == nil:
		return nil
	case state == "55P03": // lock_not_available: lock_timeout ran out
		// A channel's lock is waited for apart (waitForChannel); this is
		// a row, or the name of a party or channel being made.
		return busyError{cause: waitedRows}
	case connectCause(err) != noCause:
		return connectError(p.where, err)
	case lostConnection(err):
		// Not reached, the line broke (08…), or the server is shutting
		// down or restarting (57P…).
		return storageErrorf("cannot reach the PostgreSQL store %s (%w) — nothing was written; check that its server is running and that storage.url (or MCPP_CHAT_STORE) names it, then retry", p.where, scrub(err))
	}
	return err
}

// unreachable reports an error of the connection rather than of a
// statement: the server was not reached, or the connection broke.
func unreachable(err error) bool {
	var netErr *net.OpError
	return errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || strings.HasPrefix(err.Error(), "failed to connect")
}

// rewrite is query in PostgreSQL's dialect.
func (p *postgres) rewrite(query string) string {
	if pg, ok := p.dialect.Load(query); ok {
		return pg.(string)
	}
	pg := toPostgres(query)
	p.dialect.Store(query, pg)
	return pg
}

// toPostgres rewrites the few SQLite forms this package uses that
// PostgreSQL spells otherwise: parameters (? and ?N become $N), the
// two-argument min and max (LEAST, GREATEST), and a JSON array of ids as
// an array.
func toPostgres(query string) string {
	// An id list as = ANY(array), which the planner takes to an index
	// even in the generic plan it reuses; an IN over a set-returning
	// function it guesses at a hundred rows and hashes a scan of the table.
	query = strings.ReplaceAll(query, "IN (SELECT value FROM json_each(?))", "= ANY(ARRAY(SELECT json_array_elements_text(?::json)::bigint))")
	query = scalarMinMax(query)
	return numberParams(query)
}

// numberParams turns ? and ?N outside string literals into $N.
func numberParams(query string) string {
	var b strings.Builder
	next, quoted := 1, false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + query[i+1:j])
				i = j - 1
			} else {
				fmt.Fprintf(&b, "$%d", next)
				next++
			}
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// scalarMinMax renames min(a, b) and max(a, b) — SQLite's scalar forms,
// told from the aggregates by a comma at their own level — to LEAST and
// GREATEST.
func scalarMinMax(query string) string {
	lower := strings.ToLower(query)
	var b strings.Builder
	last := 0
	for i := 0; i+4 <= len(query); i++ {
		name := lower[i : i+4]
		if name != "min(" && name != "max(" || i > 0 && isIdent(query[i-1]) {
			continue
		}
		if !hasTopLevelComma(query[i+4:]) {
			continue
		}
		b.WriteString(query[last:i])
		b.WriteString(map[string]string{"min(": "LEAST(", "max(": "GREATEST("}[name])
		last = i + 4
	}
	b.WriteString(query[last:])
	return b.String()
}

// hasTopLevelComma reports a comma before the parenthesis that closes the
// call whose arguments rest begins with.
func hasTopLevelComma(rest string) bool {
	depth := 0
	for _, c := range rest {
		switch c {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return false
			}
			depth--
		case ',':
			if depth == 0 {
				return true
			}
		}
	}
	return false
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
