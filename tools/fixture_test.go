package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// fixtureDir holds the database the Python edition wrote and its answers
// (a copy of the shared reference fixtures; see its README).
const fixtureDir = "testdata/python-edition"

type fixtureCase struct {
	Workspace string          `json:"workspace"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Success   bool            `json:"success"`
	Result    any             `json:"result"`
	Error     *string         `json:"error"`
}

// On a copy of the Python edition's database, every answer it gave must be
// ours too: each expected key present and equal, lists in the same order —
// on SQLite, and on PostgreSQL after `mcpp-chat migrate` copied it there.
func TestPythonFixtureAnswers(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) { fixtureAnswers(t, openFixtureCopy(t)) })
	t.Run("postgres", func(t *testing.T) { fixtureAnswers(t, openFixtureOnPostgres(t)) })
}

func fixtureAnswers(t *testing.T, db *store.DB) {
	data, err := os.ReadFile(filepath.Join(fixtureDir, "reference-v1.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []fixtureCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) != 48 {
		t.Fatalf("want the 48 reference answers, found %d", len(cases))
	}
	manifest, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		party, err := config.Identify(c.Workspace, true)
		if err != nil {
			t.Fatal(err)
		}
		s := &Service{DB: db, Config: config.Defaults(), Manifest: manifest,
			Me: store.Identity{Name: party.Name, Workspace: party.Root}}
		res, err := s.Call(context.Background(), c.Tool, c.Args)
		if !c.Success {
			if err == nil {
				t.Errorf("#%d %s %s %s: succeeded, want an error like %q", i, c.Workspace, c.Tool, c.Args, *c.Error)
			}
			continue
		}
		if err != nil {
			t.Errorf("#%d %s %s %s: %v", i, c.Workspace, c.Tool, c.Args, err)
			continue
		}
		var got any
		raw, _ := json.Marshal(res.Value)
		json.Unmarshal(raw, &got)
		if path, ok := subset(c.Result, got, "result"); !ok {
			t.Errorf("#%d %s %s %s: differs at %s\n got: %s", i, c.Workspace, c.Tool, c.Args, path, raw)
		}
	}
}

func openFixtureCopy(t *testing.T) *store.DB {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(fixtureDir, "reference-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "chat.db")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openFixtureOnPostgres copies the Python edition's database into a fresh
// PostgreSQL store, as `mcpp-chat migrate` does.
func openFixtureOnPostgres(t *testing.T) *store.DB {
	t.Helper()
	ctx := context.Background()
	to, err := store.OpenPostgres(ctx, pgtest.URL(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { to.Close() })
	from, err := store.OpenReadOnly(ctx, filepath.Join(fixtureDir, "reference-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	if _, err := store.CopyTo(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	return to
}

// subset reports whether every key of want is in got with an equal value
// (recursively; lists must match element by element).
func subset(want, got any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return path + "." + k + " (missing)", false
			}
			if p, ok := subset(wv, gv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path + " (length)", false
		}
		for i := range w {
			if p, ok := subset(w[i], g[i], path+"["+strconv.Itoa(i)+"]"); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(want, got)
}
