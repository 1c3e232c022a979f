package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// Each test's database is its own: what one creates, another does not see.
func TestEachURLIsAFreshDatabase(t *testing.T) {
	ctx := context.Background()
	a, b := URL(t), URL(t)
	if a == b {
		t.Fatalf("two calls gave one database: %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, `CREATE TABLE mine (x int)`); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	if err := cb.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name = 'mine'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the second database sees %d tables named mine (%v)", n, err)
	}
}

// A restart cuts every connection and serves the same data again.
func TestRestartKeepsTheData(t *testing.T) {
	s := Own(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `SELECT 1`); err == nil {
		t.Error("a connection from before the restart still works")
	}
	c2, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	var x int
	if err := c2.QueryRow(ctx, `SELECT x FROM kept`).Scan(&x); err != nil || x != 7 {
		t.Errorf("after the restart: x = %d, %v", x, err)
	}
}
