package tools

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL store's driver

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// partiesOn opens a fresh database whose time is clock's and returns it,
// with a Service for any party name on it (workspace /srv/NAME).
func partiesOn(t testing.TB, clock func() time.Time) (*store.DB, func(name string) *Service) {
	t.Helper()
	db, err := store.OpenWith(context.Background(), filepath.Join(t.TempDir(), "chat.db"), store.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	manifest, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	return db, func(name string) *Service {
		return &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: name, Workspace: "/srv/" + name}}
	}
}
