package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

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
func (e *Engine) migrate(ctx context.Context) error {
	steps, err := engine.Patches("schema_patches", "")
	if err != nil {
		return err
	}
	latest := len(steps)
	version, err := inspect(ctx, e.sql, e.path)
	if err != nil {
		return err
	}
	if version > latest {
		return fmt.Errorf("%s has schema version %d but this mcpp-chat knows only up to %d — upgrade mcpp-chat (the file was not changed)", e.path, version, latest)
	}
	if err := e.switchToWAL(ctx); err != nil {
		if isBusy(err) && emptyFile(e.path) {
			return engine.StorageErrorf("%s is empty (0 bytes) while another process has it open — it was emptied under a running session; stop the sessions that use it, then copy the newest backup from .backups/ beside it over it (or move the empty file aside to start afresh)", e.path)
		}
		return e.Describe(err)
	}
	if version == latest {
		return nil
	}
	return e.Describe(e.applySteps(ctx, steps))
}

// switchToWAL puts the database in WAL mode (a no-op once it is). The
// switch needs the file to itself, and SQLite reports a clash with another
// connection at once instead of through the busy handler: several
// processes opening a new database together (the first calls of two
// sessions, a watch that waited for the file) met it as an immediate
// "busy". So a clash is retried until the busy timeout.
func (e *Engine) switchToWAL(ctx context.Context) error {
	deadline := time.Now().Add(e.busyTimeout)
	for {
		var mode string
		err := e.sql.QueryRowContext(ctx, `PRAGMA journal_mode = wal`).Scan(&mode)
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

func (e *Engine) applySteps(ctx context.Context, steps []engine.Patch) error {
	t, err := e.sql.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
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
		if s.Version <= version {
			continue
		}
		if _, err := t.ExecContext(ctx, s.SQL); err != nil {
			return fmt.Errorf("apply schema version %d: %w", s.Version, err)
		}
	}
	if _, err := t.ExecContext(ctx, `INSERT INTO schema_version (id, version, updated_at) VALUES (1, ?, ?)
		ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`,
		len(steps), engine.Now()); err != nil {
		return err
	}
	return t.Commit()
}
