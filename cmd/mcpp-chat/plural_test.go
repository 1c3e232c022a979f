package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// migrate into a store that holds a chat refuses it, counting what is
// there in words that agree with the counts: "1 party and 1 channel".
func TestMigrateRefusalCountsInWords(t *testing.T) {
	env := isolatedEnv(t)
	ctx := context.Background()
	db, err := store.Open(ctx, env["MCPP_CHAT_DB"])
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ChannelNew(ctx, store.Identity{Name: "mesh-gw", Workspace: "/srv/gw"}, "gw", "", nil)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.URL(t)
	if code, out, errs := cli(t, env, "migrate", "--to", url); code != exitOK {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := cli(t, env, "migrate", "--to", url)
	if code != exitError || !strings.Contains(errs, "already holds 1 party and 1 channel — ") {
		t.Errorf("a second migrate: exit %d\n%s%s", code, out, errs)
	}
}
