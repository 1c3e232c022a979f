package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// pgTools are the calls timed on a team store beside the same calls on
// the database file.
var pgTools = map[string]bool{"chat_say": true, "chat_read": true, "chat_inbox": true, "chat_whoami": true}

// benchPostgres times calls over MCP stdio on a team store: a throwaway
// PostgreSQL on a unix socket (fsync off, as in the tests, so the figure
// is the engine and the protocol, not the disk), holding a copy of each
// history's template made by the same copy as `mcpp-chat migrate`.
func benchPostgres(w *world, o options, r *report) error {
	dir, err := os.MkdirTemp("", "pgtest.")
	if err != nil {
		return err
	}
	srv, err := pgtest.Start(dir)
	if errors.Is(err, pgtest.ErrNotInstalled) {
		os.RemoveAll(dir)
		progress("postgres: skipped (%v)", err)
		return nil
	}
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	defer srv.Stop()
	for _, size := range sizes {
		t, err := w.history(size.label, size.history)
		if err != nil {
			return err
		}
		if t.store, err = copyToPostgres(srv, "bench_"+size.label, t.path); err != nil {
			return fmt.Errorf("copy the %s template: %w", size.label, err)
		}
		for _, tc := range toolCases {
			if !pgTools[tc.tool] || !o.wantTool(tc.tool) {
				continue
			}
			progress("postgres: %s on %s history", tc.tool, size.label)
			lat, err := w.measureTool(t, tc, o.samples)
			if err != nil {
				return fmt.Errorf("%s on %s history: %w", tc.tool, size.label, err)
			}
			r.add(figure{what: "`" + tc.tool + "` round trip on PostgreSQL (unix socket, fsync off)", setup: size.label + " history",
				lat: lat, command: "go run ./tests/bench -only postgres"})
		}
	}
	return nil
}

// copyToPostgres makes database name on srv and copies the template into
// it; it returns the store's URL.
func copyToPostgres(srv *pgtest.Server, name, template string) (string, error) {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, srv.URL("postgres"))
	if err != nil {
		return "", err
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	admin.Close(ctx)
	if err != nil {
		return "", err
	}
	url := srv.URL(name)
	from, err := store.OpenReadOnly(ctx, template)
	if err != nil {
		return "", err
	}
	defer from.Close()
	to, err := store.OpenPostgres(ctx, url, store.Options{})
	if err != nil {
		return "", err
	}
	defer to.Close()
	progress("postgres: copying %s", template)
	_, err = store.CopyTo(ctx, from, to)
	return url, err
}
