// Package postgres is the chat's engine for a team: one PostgreSQL
// database that sessions on many machines, and hubs, share. It runs the
// protocol's transactions (run.go: a bounded pool whose calls take turns
// in the order they came, a read with no transaction until it writes),
// takes turns per channel with advisory locks where the protocol says a
// call must (lock.go), rewrites the protocol's SQL (SQLite's dialect) into
// its own (dialect.go), names what one party sees by the clocks of its
// channels and announces each commit to the waiters it concerns (state.go,
// NOTIFY), searches with PostgreSQL's own full-text search (search.go),
// bounds the share of the pool long reads hold (longread.go), explains its
// driver's errors (connect.go, lost.go, scrub.go) and takes a host's chat
// in (copy.go).
//
// It speaks database/sql to the "pgx" driver, which this package does not
// import: a binary that serves PostgreSQL stores links it
// (github.com/jackc/pgx/v5/stdlib), and the hook, which reads SQLite on
// every prompt, does not pay for it.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpp/mcpp-chat/internal/redact"
	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// DefaultMaxConns is how many connections a process opens to a team store
// at most, unless Options.MaxConns says otherwise.
const DefaultMaxConns = 8

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

// Options tune an engine; the zero value means the defaults.
type Options struct {
	// BusyTimeout is how long a call waits for a channel, a row or a
	// turn of the pool in which nothing moves; 0 means
	// engine.DefaultBusyTimeout.
	BusyTimeout time.Duration
	// MaxConns bounds the pool of connections; 0 means DefaultMaxConns.
	MaxConns int
}

func (o Options) orDefaults() Options {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = engine.DefaultBusyTimeout
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	return o
}

// Engine is a handle on a team store.
type Engine struct {
	sql     *sql.DB
	where   string   // the URL without its password, for messages
	dialect sync.Map // SQLite text → PostgreSQL text, each query once
	// pool is the turns of the connections, which a Reader shares.
	pool *pool
	// patience is how long a call waits for a turn while none is given
	// back, in busy timeouts (poolPatience of them), and for a channel or
	// a row in which nothing commits.
	patience time.Duration
	// readOnly: every call is a READ ONLY transaction, and no other kind
	// runs; shared: the pool is another handle's, which closes it.
	readOnly, shared bool
}

// pool is the turns of a pool's connections.
type pool struct {
	// turns holds one token per connection a call holds (conn, read):
	// its capacity is the pool's.
	turns chan struct{}
	// finished counts the calls that gave their connection back: a call
	// waiting for one goes on waiting while it moves (turn).
	finished atomic.Int64
	// long bounds the turns that long reads hold (longread.go).
	long *longReads
}

func newPool(maxConns int) *pool {
	return &pool{turns: make(chan struct{}, maxConns), long: newLongReads(maxConns)}
}

func newEngine(db *sql.DB, where string, maxConns int, patience time.Duration) *Engine {
	return &Engine{sql: db, where: where, pool: newPool(maxConns), patience: patience}
}

// setPool bounds a team store's pool: calls beyond max wait for a free
// connection (within their busy timeout) instead of each opening its own,
// which a thousand waiting members would turn into a thousand server
// processes and refusals once the server's limit is reached.
func setPool(db *sql.DB, max int) {
	db.SetMaxOpenConns(max)
	db.SetMaxIdleConns(max)
	db.SetConnMaxIdleTime(pgIdleTime)
}

// Open opens the team store at rawURL (postgres://… or postgresql://…) and
// brings its schema up to date. The "pgx" driver must be linked into the
// binary.
func Open(ctx context.Context, rawURL string, o Options) (*Engine, error) {
	o = o.orDefaults()
	db, err := openPostgres(ctx, rawURL, o.MaxConns)
	if err != nil {
		return nil, scrub(err)
	}
	return newEngine(db, redact.URL(rawURL), o.MaxConns, o.BusyTimeout), nil
}

// OpenReadOnly opens the team store at rawURL for reading only: every read
// is a READ ONLY transaction, which PostgreSQL refuses to let write. It
// migrates nothing; a store without the schema is refused.
func OpenReadOnly(ctx context.Context, rawURL string) (*Engine, error) {
	where := redact.URL(rawURL)
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", where, scrub(err))
	}
	setPool(db, DefaultMaxConns)
	e := newEngine(db, where, DefaultMaxConns, engine.DefaultBusyTimeout)
	e.readOnly = true
	version, err := e.Version(ctx)
	if err == nil && version == 0 {
		err = fmt.Errorf("%w: the team store %s has no chat yet — the first chat call makes it", engine.ErrNoDatabase, where)
	}
	if err != nil {
		db.Close()
		return nil, scrub(err)
	}
	return e, nil
}

// SetMaxConns bounds a read-only handle's pool of connections
// (DefaultMaxConns until then), before its first read.
func (e *Engine) SetMaxConns(n int) {
	if n > 0 {
		setPool(e.sql, n)
		e.pool = newPool(n)
	}
}

// Reader is a read-only handle on e's store that reads through e's own
// pool and turns, so that a process holding both (the hub) opens no more
// connections than Options.MaxConns, and its long reads share the one
// bound (longread.go). Closing it leaves e open.
func (e *Engine) Reader() *Engine {
	return &Engine{sql: e.sql, where: e.where, pool: e.pool, patience: e.patience, readOnly: true, shared: true}
}

// Where is the store's URL without its password.
func (e *Engine) Where() string { return e.where }

// SQL is the pool (tests, and migrate's copy).
func (e *Engine) SQL() *sql.DB { return e.sql }

// Close closes the pool, unless it is another handle's.
func (e *Engine) Close() error {
	if e.shared {
		return nil
	}
	return e.sql.Close()
}

// Version reads the store's schema version: 0 for an empty store.
func (e *Engine) Version(ctx context.Context) (int, error) {
	var version int
	_, err := e.Run(ctx, engine.Read, func(t engine.Tx) (*engine.Change, error) {
		var err error
		version, err = pgSchemaVersion(ctx, t.(*tx).Tx, e.where)
		return nil, err
	})
	return version, err
}

// TokenDB is where a team store keeps the hub's tokens
// (engine.TokenStore): the table hub_tokens of the store itself, through
// the pool.
func (e *Engine) TokenDB(context.Context) (*sql.DB, func(string) string, func() error, error) {
	return e.sql, e.rewriteDense, nil, nil
}

// rewriteDense is a query whose parameters are numbered 1 to n, whose
// arguments go as given, in PostgreSQL's dialect (the tokens' statements
// run outside a Tx, which would put skipped ones in order).
func (e *Engine) rewriteDense(query string) string {
	pg := e.rewrite(query)
	if pg.order != nil {
		panic("postgres: " + query + " skips a parameter number; the tokens' statements must use 1 to n")
	}
	return pg.text
}

// Schema is the schema's steps for PostgreSQL in order: the SQL of
// version 1, 2, ... (pg/ holds the steps whose SQL differs).
func Schema() ([]string, error) {
	steps, err := engine.Patches("schema_patches", "schema_patches/pg")
	if err != nil {
		return nil, err
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.SQL
	}
	return out, nil
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
	steps, err := Schema()
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
			latest, engine.Now()); err != nil {
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

// storeClocksSchema holds a team store's clocks (lock.go): a row per
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
// exclusively (lock.go): they alone run with no other call beside them.
const pgWriteKey = pgMigrateKey + 1

// WriteLock is pgWriteKey, for a program that must hold the store alone
// from outside (a test).
const WriteLock = pgWriteKey

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
func announcement(c engine.Change, keys []int64) string {
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

// sqlState is the SQLSTATE code of a PostgreSQL error, "" for others.
func sqlState(err error) string {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState()
	}
	return ""
}

// Describe turns a driver error into one a user can act on.
func (e *Engine) Describe(err error) error {
	state := sqlState(err)
	switch {
	case err == nil:
		return nil
	case state == "55P03": // lock_not_available: lock_timeout ran out
		// A channel's lock is waited for apart (waitForChannel); this is
		// a row, or the name of a party or channel being made.
		return engine.Busy{Cause: engine.Rows}
	case connectCause(err) != noCause:
		return connectError(e.where, err)
	case lostConnection(err):
		// Not reached, the line broke (08…), or the server is shutting
		// down or restarting (57P…).
		return engine.StorageErrorf("cannot reach the PostgreSQL store %s (%w) — nothing was written; check that its server is running and that storage.url (or MCPP_CHAT_STORE) names it, then retry", e.where, scrub(err))
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
