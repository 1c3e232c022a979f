package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// A store that goes out of reach under a running server: the sentence the
// agent reads, and the log, name the store without its passwords.
func TestUnreachableStoreErrorHidesPasswords(t *testing.T) {
	t.Parallel()
	const secret = "Zq7s3cret"
	ctx := context.Background()
	plain := pgtest.URL(t)
	url := strings.Replace(plain, "postgres:///", "postgres://postgres:"+secret+"A@/", 1) + "&password=" + secret + "B&sslpassword=" + secret + "C"
	db, err := store.OpenPostgres(ctx, url, store.Options{BusyTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	manifest, _ := LoadManifest()
	var log bytes.Buffer
	s := &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: "gw", Workspace: "/srv/gw"},
		Log: slog.New(slog.NewTextHandler(&log, nil))}
	if _, err := s.Call(ctx, "chat_whoami", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}

	// The database goes away: every connection to it is cut, and new
	// ones are refused.
	name := regexp.MustCompile(`^postgres:///([a-z0-9_]+)\?`).FindStringSubmatch(plain)[1]
	admin, err := pgx.Connect(ctx, strings.Replace(plain, "/"+name+"?", "/postgres?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}

	_, err = s.Call(ctx, "chat_say", json.RawMessage(`{"text": "hello"}`))
	if err == nil || !strings.HasPrefix(err.Error(), "the PostgreSQL server of postgres://postgres:xxxxx@/") || !strings.Contains(err.Error(), "has no database") {
		t.Fatalf("the agent was told %v", err)
	}
	if shown := err.Error() + log.String(); strings.Contains(shown, secret) {
		t.Errorf("a password is shown:\n%s", shown)
	}
}
