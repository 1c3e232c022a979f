package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// A chat on SQLite may hold NUL characters, which PostgreSQL cannot store:
// migrate copies it whole, with U+FFFD in their place, and says so in one
// line — never a driver's error.
func TestMigrateCopesWithNUL(t *testing.T) {
	env := isolatedEnv(t)
	ctx := context.Background()
	db, err := store.Open(ctx, env["MCPP_CHAT_DB"])
	if err != nil {
		t.Fatal(err)
	}
	gw, dash := store.Identity{Name: "mesh-gw", Workspace: "/srv/gw"}, store.Identity{Name: "node-dash", Workspace: "/srv/dash"}
	_, err = db.Register(ctx, dash)
	if err == nil {
		_, err = db.ChannelNew(ctx, gw, "gw--dash", "", []string{"node-dash"})
	}
	if err == nil {
		_, err = db.Say(ctx, gw, store.SayArgs{Channel: "gw--dash", Text: "before\x00after"})
	}
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, env, "migrate", "--to", pgtest.URL(t))
	if code != exitOK || errs != "" {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// In words, singular for one: not the tables' names.
	if !strings.HasPrefix(lines[0], "copied 2 parties, 1 channel, 2 seats in channels, 1 message, 0 consumers of items, 1 read position, 1 read time from ") ||
		lines[1] != "replaced NUL characters (U+0000) and bytes that are not UTF-8, which PostgreSQL cannot store, with U+FFFD (�) in 1 text field" {
		t.Errorf("migrate said:\n%s", out)
	}
}

// migrate --help says what it does, not only its flags.
func TestMigrateHelpSaysWhatItDoes(t *testing.T) {
	code, out, _ := cli(t, isolatedEnv(t), "migrate", "--help")
	if code != exitOK || !strings.Contains(out, "Copies this install's chat database") || !strings.Contains(out, "A store that already holds a chat is refused") {
		t.Errorf("migrate --help: exit %d\n%s", code, out)
	}
}

// A host that ran a SQLite hub moves to a team store with its tokens:
// migrate says how many came along, and a member's token opens the team
// store's tokens as it opened the hub's.
func TestMigrateBringsTheHubsTokens(t *testing.T) {
	env := isolatedEnv(t)
	ctx := context.Background()
	db, err := store.Open(ctx, env["MCPP_CHAT_DB"])
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Register(ctx, store.Identity{Name: "mesh-gw", Workspace: "/srv/gw"})
	var secret string
	if err == nil {
		var toks *store.Tokens
		if toks, err = db.Tokens(ctx); err == nil {
			secret, _, err = toks.Issue(ctx, []string{"mesh-gw"}, "gw-laptop", time.Hour)
			toks.Close()
		}
	}
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.URL(t)
	code, out, errs := cli(t, env, "migrate", "--to", url)
	if code != exitOK || !strings.Contains(out, ", 1 hub token from ") {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	team, err := store.OpenPostgres(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer team.Close()
	toks, err := team.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer toks.Close()
	if tok, err := toks.Verify(ctx, secret); err != nil || tok.Label != "gw-laptop" {
		t.Errorf("the member's token on the team store: %+v, %v", tok, err)
	}
}
