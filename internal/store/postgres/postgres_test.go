package postgres

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/mcpp/mcpp-chat/internal/pgtest"

	"reflect"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func openPG(t *testing.T) (*sql.DB, string) {
	t.Helper()
	u := pgtest.URL(t)
	db, err := openPostgres(context.Background(), u, DefaultMaxConns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, u
}

// A hub uses the store from many requests at once: the connections a
// burst opened stay open for the next one, instead of being closed and
// opened again, each a new server process.
func TestPostgresKeepsTheConnectionsOfABurst(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	db, err := Open(ctx, u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ro, err := OpenReadOnly(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for name, pool := range map[string]*sql.DB{"read-write": db.sql, "read-only": ro.sql} {
		var held []*sql.Conn
		for range 6 {
			c, err := pool.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
		if s := pool.Stats(); s.Idle != 6 || s.MaxIdleClosed != 0 {
			t.Errorf("%s: after a burst of 6 connections %d stay open, %d were closed", name, s.Idle, s.MaxIdleClosed)
		}
	}
}

// Processes that start at once on a new store take turns on the schema:
// every one succeeds and the schema is made once.
func TestPostgresMigratesOnceUnderConcurrentStarts(t *testing.T) {
	u := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			db, err := openPostgres(context.Background(), u, DefaultMaxConns)
			if err == nil {
				db.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// A store written by a newer mcpp-chat, or a database that belongs to
// something else, is refused and left as it was.
func TestPostgresRefusesUnwritten(t *testing.T) {
	ctx := context.Background()
	t.Run("newer schema", func(t *testing.T) {
		db, u := openPG(t)
		if _, err := db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
			t.Fatal(err)
		}
		before := columns(t, db)
		_, err := openPostgres(ctx, u, DefaultMaxConns)
		if err == nil || !strings.Contains(err.Error(), "schema version 99") || !strings.Contains(err.Error(), "upgrade mcpp-chat") {
			t.Fatalf("open = %v, want a refusal naming version 99 and the upgrade", err)
		}
		var version int
		db.QueryRow(`SELECT version FROM schema_version`).Scan(&version)
		if version != 99 || columns(t, db) != before {
			t.Errorf("the refused store changed: version %d", version)
		}
	})
	t.Run("not a chat store", func(t *testing.T) {
		u := pgtest.URL(t)
		other, err := sql.Open("pgx", u)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if _, err := other.Exec(`CREATE TABLE invoices (id int)`); err != nil {
			t.Fatal(err)
		}
		_, err = openPostgres(ctx, u, DefaultMaxConns)
		if err == nil || !strings.Contains(err.Error(), "not a chat store") {
			t.Fatalf("open = %v, want a refusal saying it is not a chat store", err)
		}
		if got := names(t, other, `SELECT string_agg(table_name, ' ') FROM information_schema.tables WHERE table_schema = current_schema()`); got != "invoices" {
			t.Errorf("tables after the refusal: %s, want invoices alone", got)
		}
	})
}

func TestToPostgres(t *testing.T) {
	for sqlite, want := range map[string]string{
		`SELECT a FROM t WHERE b = ? AND c = ?`:                      `SELECT a FROM t WHERE b = $1 AND c = $2`,
		`UPDATE t SET a = ?2 WHERE id = ?1 AND b = ?2`:               `UPDATE t SET a = $2 WHERE id = $1 AND b = $2`,
		`SELECT 'what?' || ? FROM t`:                                 `SELECT 'what?' || $1 FROM t`,
		`SELECT coalesce(max(seq), 0) + 1 FROM m WHERE c = ?`:        `SELECT coalesce(max(seq), 0) + 1 FROM m WHERE c = $1`,
		`SET x = max(cursors.x, excluded.x), y = min(y, (SELECT 1))`: `SET x = GREATEST(cursors.x, excluded.x), y = LEAST(y, (SELECT 1))`,
		`SELECT datemax(a, b), max(a) FROM t`:                        `SELECT datemax(a, b), max(a) FROM t`,
		`WHERE id IN (SELECT value FROM json_each(?))`:               `WHERE id = ANY(ARRAY(SELECT json_array_elements_text($1::json)::bigint))`,
	} {
		if got, _ := toPostgres(sqlite); got != want {
			t.Errorf("toPostgres(%s)\n got %s\nwant %s", sqlite, got, want)
		}
	}
}

// SQLite lets a statement use ?2 without ?1; PostgreSQL cannot type a
// parameter no statement uses, so the numbers become dense and the
// arguments follow them.
func TestSkippedParametersBecomeDense(t *testing.T) {
	for _, c := range []struct {
		sqlite, want string
		args, gets   []any
	}{
		{`UPDATE t SET a = ?2 WHERE b = ?2`, `UPDATE t SET a = $1 WHERE b = $1`, []any{"x", "y"}, []any{"y"}},
		{`DELETE FROM t WHERE a = ?3 OR b = ?1`, `DELETE FROM t WHERE a = $2 OR b = $1`, []any{"x", "y", "z"}, []any{"x", "z"}},
		{`SELECT ?1, ?2, ?1`, `SELECT $1, $2, $1`, []any{"x", "y"}, []any{"x", "y"}},
		{`SELECT ?2, ?`, `SELECT $1, $2`, []any{"x", "y", "z"}, []any{"y", "z"}}, // a bare ? is one past the highest, as in SQLite
	} {
		text, order := toPostgres(c.sqlite)
		got := statement{text, order}.args(c.args)
		if text != c.want || !reflect.DeepEqual(got, c.gets) {
			t.Errorf("%s\n got %s %v\nwant %s %v", c.sqlite, text, got, c.want, c.gets)
		}
	}
}

// columns lists every column of the database's tables, with its type and
// default: what a refused store must keep as it was.
func columns(t *testing.T, db *sql.DB) string {
	return names(t, db, `SELECT string_agg(table_name || '.' || column_name || ' ' || data_type || ' ' || coalesce(column_default, ''), ' | '
		ORDER BY table_name, ordinal_position) FROM information_schema.columns WHERE table_schema = current_schema()`)
}

// names is the one text a query answers.
func names(t *testing.T, db *sql.DB, query string) string {
	t.Helper()
	var out sql.NullString
	if err := db.QueryRow(query).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out.String
}
