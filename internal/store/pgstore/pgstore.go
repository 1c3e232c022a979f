// Package pgstore is the store's PostgreSQL engine, for a team that
// shares one store across machines. It lives apart from the SQLite engine
// so that the hook, which reads SQLite on every prompt, never links the
// PostgreSQL driver.
package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	"github.com/mcpp/mcpp-chat/internal/store"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// pgMigrateKey is the advisory lock under which a PostgreSQL schema is
// brought up to date, so that two processes starting at once take turns
// instead of racing on CREATE TABLE. ("mcppchat" in ASCII, as one int64.)
const pgMigrateKey int64 = 0x6d63_7070_6368_6174

// openPostgres connects to the PostgreSQL database at rawURL and brings
// its schema up to date.
func openPostgres(ctx context.Context, rawURL string) (*sql.DB, error) {
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", redactURL(rawURL), err)
	}
	if err := migratePostgres(ctx, db, redactURL(rawURL)); err != nil {
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
	steps, err := store.PostgresSchema()
	if err != nil {
		return err
	}
	latest := len(steps)
	t, err := db.BeginTx(ctx, nil)
	if err != nil {
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
	if version == latest {
		return nil
	}
	for i, step := range steps[version:] {
		if _, err := t.ExecContext(ctx, step); err != nil {
			return fmt.Errorf("apply schema version %d to %s: %w", version+i+1, where, err)
		}
	}
	if _, err := t.ExecContext(ctx, `INSERT INTO schema_version (id, version, updated_at) VALUES (1, $1, $2)
		ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`,
		latest, store.Now()); err != nil {
		return fmt.Errorf("record schema version in %s: %w", where, err)
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("commit the schema of %s: %w", where, err)
	}
	return nil
}

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

// redactURL is a store URL fit for messages and logs: without its
// password.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the PostgreSQL store (its URL does not parse)"
	}
	if u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
