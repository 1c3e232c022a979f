package store

// The one file of the protocol that names its engines: it opens them, and
// holds what belongs to one engine alone (a file's fingerprint, a team
// store's announcements, migrate's copy into a team store).

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
	"github.com/mcpp/mcpp-chat/internal/store/postgres"
	"github.com/mcpp/mcpp-chat/internal/store/sqlite"
	"github.com/mcpp/mcpp-chat/internal/store/tokens"
)

// DefaultMaxConns is how many connections a process opens to a team store
// at most, unless Options.MaxConns says otherwise.
const DefaultMaxConns = postgres.DefaultMaxConns

// ReadOnlyBusyTimeout is how long a read-only handle on a database file
// waits for a lock: the hook must answer within a second.
const ReadOnlyBusyTimeout = sqlite.ReadOnlyBusyTimeout

// SearchIndexSuffix is appended to a database file's path to name its
// search index.
const SearchIndexSuffix = sqlite.SearchIndexSuffix

// Options tune a handle; the zero value means the defaults.
type Options struct {
	// BusyTimeout bounds all the waiting of one call for its turn to
	// write — on SQLite this process's writer slot, the writers' queue,
	// SQLite's lock, and Open's wait for a new file's switch to WAL; on a
	// team store a channel, a row or a turn of the pool in which nothing
	// moves. 0 means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// MaxConns bounds a team store's pool of connections; 0 means
	// DefaultMaxConns. (A SQLite file needs no bound: its connections
	// are files this process opens.)
	MaxConns int
	// Clock is the time the store writes: the rows' times and a backup's
	// day. nil means time.Now. Waiting always goes by the real clock.
	Clock func() time.Time
	// Attention are the rules of who is told what (config attention.*);
	// nil means DefaultAttention.
	Attention *Attention
}

func (o Options) clock() func() time.Time {
	if o.Clock == nil {
		return time.Now
	}
	return o.Clock
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
	eng, err := sqlite.Open(ctx, path, sqlite.Options{BusyTimeout: o.BusyTimeout, Clock: o.clock()})
	if err != nil {
		return nil, err
	}
	return New(eng, o), nil
}

// OpenPostgres opens the team store at rawURL (postgres://… or
// postgresql://…) and brings its schema up to date. The "pgx" driver must
// be linked into the binary.
func OpenPostgres(ctx context.Context, rawURL string, o Options) (*DB, error) {
	eng, err := postgres.Open(ctx, rawURL, postgres.Options{BusyTimeout: o.BusyTimeout, MaxConns: o.MaxConns})
	if err != nil {
		return nil, err
	}
	return New(eng, o), nil
}

// OpenReadOnly opens the database at path for reading. It fails, without
// creating anything, when the file is missing or is not an SQLite database.
func OpenReadOnly(ctx context.Context, path string) (*ReadOnly, error) {
	eng, err := sqlite.OpenReadOnly(ctx, path)
	if err != nil {
		return nil, err
	}
	return NewReadOnly(eng), nil
}

// OpenReadOnlyPostgres opens the team store at rawURL for reading only:
// every read is a READ ONLY transaction, which PostgreSQL refuses to let
// write. It migrates nothing; a store without the schema is refused.
func OpenReadOnlyPostgres(ctx context.Context, rawURL string) (*ReadOnly, error) {
	eng, err := postgres.OpenReadOnly(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return NewReadOnly(eng), nil
}

// SetMaxConns bounds the read-only handle's pool of connections to a team
// store (DefaultMaxConns until then), before its first read; on a
// database file it does nothing.
func (r *ReadOnly) SetMaxConns(n int) {
	if pg, ok := r.eng.(*postgres.Engine); ok {
		pg.SetMaxConns(n)
	}
}

// Reader is a read-only handle on d's team store that reads through d's
// own pool and turns, so that a process holding both (the hub) opens no
// more connections than Options.MaxConns, and its long reads share the
// one bound. Closing it leaves d open. On a database file it is nil: open
// one with OpenReadOnly.
func (d *DB) Reader() *ReadOnly {
	pg, ok := d.eng.(*postgres.Engine)
	if !ok {
		return nil
	}
	return &ReadOnly{eng: pg.Reader(), att: d.att}
}

// Fingerprint names the committed state of the database file at path
// without opening SQLite (see sqlite.Fingerprint): the hook skips its
// reads while it holds.
func Fingerprint(path string) (fp string, ok bool) { return sqlite.Fingerprint(path) }

// CommitMark names the last commit published in the database file's
// WAL-index (see sqlite.CommitMark).
func CommitMark(path string) (mark string, ok bool) { return sqlite.CommitMark(path) }

// PathClaimsUntil reads, beside the database file at path, until when a
// claim on a path may be live (sqlite.PathClaimsUntil): "" when none was
// ever made; ok is false when it cannot tell.
func PathClaimsUntil(path string) (until string, ok bool) { return sqlite.PathClaimsUntil(path) }

// SchemaVersion is the newest schema this binary knows.
func SchemaVersion() int { return engine.SchemaVersion() }

// WaitKeys are the clock keys of what the party me sees on a team store,
// for a waiter to be woken only by the commits that concern it. nil on a
// database file, or for a party not made yet: then every change concerns
// the waiter.
func (d *DB) WaitKeys(ctx context.Context, me Identity) ([]int64, error) {
	a, ok := d.eng.(engine.Announcer)
	if !ok {
		return nil, nil
	}
	return a.WaitKeys(ctx, me.who())
}

// DailyBackup has a database file copied into dir once a day, after a
// commit, keeping retainDays copies; onError hears a failed one. A team
// store is backed up as PostgreSQL is: it does nothing there.
func (d *DB) DailyBackup(dir string, retainDays int, onError func(error)) {
	if b, ok := d.eng.(engine.Backups); ok {
		b.DailyBackup(dir, retainDays, onError)
	}
}

// Backup copies the database file into dir as today's backup, unless one
// is there, and keeps the newest retainDays.
func (d *DB) Backup(ctx context.Context, dir string, retainDays int, now time.Time) (path string, made bool, err error) {
	b, ok := d.eng.(engine.Backups)
	if !ok {
		return "", false, fmt.Errorf("the team store %s has no backups of mcpp-chat's own: back it up as you back up PostgreSQL", d.Path())
	}
	return b.Backup(ctx, dir, retainDays, now)
}

// Copied is what a copy into a team store wrote.
type Copied = postgres.Copied

// CopyTo copies everything in the database src reads — parties, channels,
// seats, messages, items and their consumers, cursors, and every table a
// later schema added (postgres.copyTables), and the tokens a hub on it
// issued — into the team store dst, keeping every id, seq and time, in
// one transaction of dst: a
// copy that fails leaves dst as it was. A dst that already holds a party
// or a channel is refused: a copy never merges two chats.
func CopyTo(ctx context.Context, src *ReadOnly, dst *DB) (Copied, error) {
	pg, ok := dst.eng.(*postgres.Engine)
	if !ok {
		return Copied{}, fmt.Errorf("copy into %s: only a PostgreSQL store is a copy's target — give a postgres:// URL", dst.Path())
	}
	toks, err := src.hubTokens(ctx)
	if err != nil {
		return Copied{}, err
	}
	copied, err := pg.CopyFrom(ctx, src.eng, func(to engine.Tx) (int, error) { return copyTokens(to, toks) })
	return copied, dst.wrap(err)
}

// copyTokens adds toks to the store's tokens, making their table if no
// hub has yet; a token whose id is there already is left as it is.
func copyTokens(to engine.Tx, toks []tokens.Record) (int, error) {
	if len(toks) == 0 {
		return 0, nil
	}
	if _, err := to.Exec(tokens.Schema); err != nil {
		return 0, fmt.Errorf("make the hub's token table: %w", err)
	}
	n := 0
	for _, r := range toks {
		res, err := to.Exec(tokens.Insert, r.Args()...)
		if err != nil {
			return n, fmt.Errorf("copy the hub's token %s: %w", r.ID, err)
		}
		added, _ := res.RowsAffected()
		n += int(added)
	}
	return n, nil
}

// hubTokens are the tokens a hub on the database file r reads issued:
// none where no hub ran, or where r reads a team store.
func (r *ReadOnly) hubTokens(ctx context.Context) ([]tokens.Record, error) {
	reader, ok := r.eng.(*sqlite.Reader)
	if !ok {
		return nil, nil
	}
	db, err := reader.HubTokens(ctx)
	if db == nil || err != nil {
		return nil, err
	}
	toks, err := tokens.Open(ctx, tokens.Place{DB: db, Release: db.Close}, time.Now)
	if err != nil {
		return nil, err
	}
	defer toks.Close()
	return toks.Records(ctx)
}

// The hub's tokens (package tokens), kept where the store's engine keeps
// them beside the chat.
type (
	Tokens = tokens.Tokens
	Token  = tokens.Token
)

const (
	TokenPrefix = tokens.TokenPrefix
	MaxTokenTTL = tokens.MaxTokenTTL
)

var (
	ErrTokenUnknown = tokens.ErrTokenUnknown
	ErrTokenExpired = tokens.ErrTokenExpired
	ErrTokenRevoked = tokens.ErrTokenRevoked
)

// TokenID is the id a token's text names, verified or not ("" if the text
// is not a token's).
func TokenID(text string) string { return tokens.TokenID(text) }

// Tokens opens the store's tokens, making their table if needed: on a
// team store a table of the store, beside a database file the file
// <db>.hub.
func (d *DB) Tokens(ctx context.Context) (*Tokens, error) {
	ts, ok := d.eng.(engine.TokenStore)
	if !ok {
		return nil, fmt.Errorf("the store %s keeps no tokens", d.Path())
	}
	db, rewrite, release, err := ts.TokenDB(ctx)
	if err != nil {
		return nil, err
	}
	return tokens.Open(ctx, tokens.Place{DB: db, Rewrite: rewrite, Release: release, Describe: d.eng.Describe}, d.clock)
}
