package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"time"

	mcppchat "github.com/mcpp/mcpp-chat"
)

// patch is one step of the schema: schema.sql is version 1, patch-N.sql
// brings a database to version N.
type patch struct {
	version int
	sql     string
}

var patchName = regexp.MustCompile(`^patch-([0-9]+)\.sql$`)

// patches lists the embedded SQLite schema steps in order.
func patches() ([]patch, error) {
	return patchesIn("schema_patches", "")
}

// patchesIn lists the schema steps in order: dir/schema.sql is version 1
// and dir/patch-N.sql version N. With an override folder (PostgreSQL's
// pg/), a step found there replaces the shared one: only the steps whose
// SQL differs between the engines are written twice.
func patchesIn(dir, override string) ([]patch, error) {
	read := func(name string) ([]byte, error) {
		if override != "" {
			if body, err := fs.ReadFile(mcppchat.SchemaPatches, override+"/"+name); err == nil {
				return body, nil
			}
		}
		return fs.ReadFile(mcppchat.SchemaPatches, dir+"/"+name)
	}
	v1, err := read("schema.sql")
	if err != nil {
		return nil, fmt.Errorf("read embedded schema: %w", err)
	}
	out := []patch{{1, string(v1)}}
	entries, err := fs.ReadDir(mcppchat.SchemaPatches, dir)
	if err != nil {
		return nil, fmt.Errorf("read embedded patches: %w", err)
	}
	for _, e := range entries {
		m := patchName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		body, err := read(e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded %s: %w", e.Name(), err)
		}
		out = append(out, patch{n, string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, p := range out {
		if p.version != i+1 {
			return nil, fmt.Errorf("schema patches must be numbered 2, 3, ... without gaps; found patch-%d.sql", p.version)
		}
	}
	return out, nil
}

// PostgresSchema is the schema's steps for PostgreSQL in order: the SQL of
// version 1, 2, ... (pg/ holds the steps whose SQL differs).
func PostgresSchema() ([]string, error) {
	steps, err := patchesIn("schema_patches", "schema_patches/pg")
	if err != nil {
		return nil, err
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.sql
	}
	return out, nil
}

// SchemaVersion is the newest schema this binary knows.
func SchemaVersion() int {
	p, err := patches()
	if err != nil {
		return 0
	}
	return len(p)
}

// rowQuerier is a database or a transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// inspect reads the schema version without writing: 0 for an empty file.
func inspect(ctx context.Context, db rowQuerier, path string) (int, error) {
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&tables); err != nil {
		return 0, describe(path, err)
	}
	if tables == 0 {
		return 0, nil
	}
	var has int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`).Scan(&has); err != nil {
		return 0, describe(path, err)
	}
	if has == 0 {
		return 0, fmt.Errorf("%s is a SQLite database but not a chat database (no schema_version table) — point MCPP_CHAT_DB at another file", path)
	}
	var version int
	err := db.QueryRowContext(ctx, `SELECT version FROM schema_version WHERE id = 1`).Scan(&version)
	if err != nil {
		return 0, fmt.Errorf("%s has no readable schema version (%v) — point MCPP_CHAT_DB at another file", path, err)
	}
	return version, nil
}

// migrate refuses a newer database untouched, switches to WAL, and applies
// the missing schema steps in one transaction.
func (d *DB) migrate(ctx context.Context) error {
	steps, err := patches()
	if err != nil {
		return err
	}
	latest := len(steps)
	version, err := inspect(ctx, d.sql, d.path)
	if err != nil {
		return err
	}
	if version > latest {
		return fmt.Errorf("%s has schema version %d but this mcpp-chat knows only up to %d — upgrade mcpp-chat (the file was not changed)", d.path, version, latest)
	}
	if err := d.switchToWAL(ctx); err != nil {
		if isBusy(err) && emptyFile(d.path) {
			return storageErrorf("%s is empty (0 bytes) while another process has it open — it was emptied under a running session; stop the sessions that use it, then copy the newest backup from .backups/ beside it over it (or move the empty file aside to start afresh)", d.path)
		}
		return d.describe(err)
	}
	if version == latest {
		return nil
	}
	return d.describe(d.applySteps(ctx, steps))
}

// switchToWAL puts the database in WAL mode (a no-op once it is). The
// switch needs the file to itself, and SQLite reports a clash with another
// connection at once instead of through the busy handler: several
// processes opening a new database together (the first calls of two
// sessions, a watch that waited for the file) met it as an immediate
// "busy". So a clash is retried until the busy timeout.
func (d *DB) switchToWAL(ctx context.Context) error {
	deadline := time.Now().Add(d.busyTimeout)
	for {
		var mode string
		err := d.sql.QueryRowContext(ctx, `PRAGMA journal_mode = wal`).Scan(&mode)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(1+rand.IntN(5)) * time.Millisecond):
		}
	}
}

// emptyFile reports a file of 0 bytes. A database emptied under a running
// session keeps that session's -shm, and every other process then waits
// in vain to switch it to WAL: "busy" would send the user to wait.
func emptyFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Size() == 0
}

func (d *DB) applySteps(ctx context.Context, steps []patch) error {
	t, err := d.sql.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		return err
	}
	defer t.Rollback()
	// Another process may have migrated while we waited for the lock.
	var version int
	if err := t.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'schema_version'`).Scan(&version); err != nil {
		return err
	}
	if version > 0 {
		if err := t.QueryRowContext(ctx, `SELECT coalesce((SELECT version FROM schema_version WHERE id = 1), 0)`).Scan(&version); err != nil {
			return err
		}
	}
	if version >= len(steps) {
		return nil
	}
	for _, s := range steps {
		if s.version <= version {
			continue
		}
		if _, err := t.ExecContext(ctx, s.sql); err != nil {
			return fmt.Errorf("apply schema version %d: %w", s.version, err)
		}
	}
	if _, err := t.ExecContext(ctx, `INSERT INTO schema_version (id, version, updated_at) VALUES (1, ?, ?)
		ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`,
		len(steps), Now()); err != nil {
		return err
	}
	return t.Commit()
}

// Version reads the database's schema version.
func (d *DB) Version(ctx context.Context) (int, error) {
	return inspect(ctx, d.sql, d.path)
}
