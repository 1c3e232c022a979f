package tools

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// SQLite stores a NUL character and PostgreSQL refuses one, so a call
// holding one would work on one engine and fail inside the server on the
// other. Both refuse it in every text argument, before the store is
// touched, with a sentence that says what to do.
func TestNULIsRefusedInEveryTextArgument(t *testing.T) {
	t.Parallel()
	manifest, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range []struct {
		name string
		open func(t *testing.T) *store.DB
	}{
		{"sqlite", func(t *testing.T) *store.DB {
			db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"))
			if err != nil {
				t.Fatal(err)
			}
			return db
		}},
		{"postgres", func(t *testing.T) *store.DB {
			db, err := store.OpenPostgres(context.Background(), pgtest.URL(t), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return db
		}},
	} {
		t.Run(engine.name, func(t *testing.T) {
			ctx := context.Background()
			db := engine.open(t)
			defer db.Close()
			s := &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: "gw", Workspace: "/srv/gw"}}
			if _, err := s.Call(ctx, "chat_channel_new", json.RawMessage(`{"name": "c1"}`)); err != nil {
				t.Fatal(err)
			}
			before := settledState(t, db)
			checked := 0
			for _, tool := range manifest.Tools {
				for name, prop := range tool.InputSchema.Properties {
					var value any
					switch prop.Type {
					case "string":
						value = "a\x00b"
					case "array":
						value = []string{"a\x00b"}
					default:
						continue
					}
					args, _ := json.Marshal(map[string]any{name: value})
					_, err := s.Call(ctx, tool.Name, args)
					var ae *ArgError
					if !errors.As(err, &ae) || !strings.Contains(err.Error(), "`"+name+"`") ||
						!strings.Contains(err.Error(), `contains a NUL character (\u0000), which the chat cannot store on every engine — remove it and call again`) {
						t.Errorf("%s %s: %v", tool.Name, args, err)
					}
					checked++
				}
			}
			if checked < 20 {
				t.Errorf("only %d text arguments checked", checked)
			}
			if after := settledState(t, db); after != before {
				t.Errorf("the refused calls changed the store: %s → %s", before, after)
			}
		})
	}
}

// settledState is db's state once the store can vouch for it: a SQLite
// file's times are not trusted for a moment after a write, and an
// untrusted state is "", which the next look, trusted, never equals.
func settledState(t *testing.T, db *store.DB) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if s, ok := db.State(); ok {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatal("the store's state was not settled within a minute")
		}
	}
}
