package web

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL store's driver

	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A search holding a NUL character is a bad query like any other: the
// search page with its sentence, on both engines — never a 500 with a
// driver's text.
func TestNULSearchIsABadQuery(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			var r *store.ReadOnly
			if engine == "sqlite" {
				var err error
				if r, err = store.OpenReadOnly(ctx, chat(t).Path()); err != nil {
					t.Fatal(err)
				}
			} else {
				u := pgtest.URL(t)
				db, err := store.OpenPostgres(ctx, u, store.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				fill(t, db)
				if r, err = store.OpenReadOnlyPostgres(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { r.Close() })
			ts, _ := serveWith(t, r, Options{})
			code, page := get(t, ts.URL+"/search?q="+url.QueryEscape("chunk\x00header"))
			if code != http.StatusBadRequest || !strings.Contains(page, `<p class="problem">the search contains a NUL character (\u0000) — remove it and search again</p>`) {
				t.Fatalf("a NUL in the search: %d\n%s", code, page)
			}
			if code, page := get(t, ts.URL+"/search?q=chunk"); code != http.StatusOK || !strings.Contains(page, "chunk") {
				t.Fatalf("a plain search: %d\n%s", code, page)
			}
		})
	}
}

// A failure the person cannot act on shows as one sentence; the driver's
// text, which may hold SQL or the store's address, goes to the log only.
func TestPageShowsNoDriverText(t *testing.T) {
	t.Parallel()
	r, err := store.OpenReadOnly(context.Background(), chat(t).Path())
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	ts, _ := serveWith(t, r, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	r.Close() // every read now fails with database/sql's own error
	code, page := get(t, ts.URL+"/c/gw--dash")
	if code != http.StatusInternalServerError || !strings.Contains(page, "the page could not read the chat") {
		t.Fatalf("GET /c/gw--dash on a closed store = %d\n%s", code, page)
	}
	if strings.Contains(page, "sql:") || strings.Contains(page, "database is closed") {
		t.Errorf("the page shows the driver's text:\n%s", page)
	}
	if !strings.Contains(log.String(), "database is closed") {
		t.Errorf("the log lacks the failure:\n%s", log.String())
	}
}
