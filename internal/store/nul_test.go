package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// A search holding a NUL character is refused in a sentence on both
// engines, the agent's and the person's: FTS5 read it as the end of an
// unterminated query and PostgreSQL refused it, each a driver's error.
func TestSearchRefusesNUL(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Say(ctx, gw, SayArgs{Text: "the bench firmware", Channel: "gw--dash"}))
		_, err := db.Search(ctx, gw, SearchArgs{Query: "bench\x00firmware"})
		refused(t, err, `the search contains a NUL character (\u0000) — remove it and search again`)
		_, err = openRO(t, db.Path()).Search(ctx, SearchArgs{Query: "\x00"})
		refused(t, err, `the search contains a NUL character (\u0000)`)
	})
}

// A SQLite database may hold NUL characters (the Python edition and older
// versions stored them) and bytes that are not UTF-8; PostgreSQL takes
// neither. The copy replaces each with U+FFFD, counts the fields it
// changed, and copies everything else as it was.
func TestCopyMakesNULStorable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.db")
	lite, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	must(t)(lite.Register(ctx, dash))
	must(t)(lite.Whoami(ctx, gw, "the gate\x00way"))
	must(t)(lite.ChannelNew(ctx, gw, "gw--dash", "about\x00", []string{"node-dash"}))
	must(t)(lite.Say(ctx, gw, SayArgs{Text: "one\x00two\x00three", Channel: "gw--dash"}))
	must(t)(lite.Ask(ctx, gw, AskArgs{Title: "t\x00", Body: "plain", Channel: "gw--dash", Slug: "nul"}))
	lite.Close()
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE messages SET ref = CAST(X'61FF62' AS TEXT) WHERE slug = 'nul'`); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	to, _ := openPGStore(t)
	copied, err := CopyTo(ctx, openRO(t, path), to)
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	if copied.Replaced != 5 || copied.Rows["messages"] != 2 {
		t.Errorf("copied %v, replaced %d fields; want 2 messages and 5 fields", copied, copied.Replaced)
	}
	for query, want := range map[string]string{
		`SELECT about FROM parties WHERE name = 'mesh-gw'`:                           "the gate\uFFFDway",
		`SELECT about FROM channels WHERE name = 'gw--dash'`:                         "about\uFFFD",
		`SELECT body FROM messages WHERE kind = 'say'`:                               "one\uFFFDtwo\uFFFDthree",
		`SELECT title || '|' || body || '|' || ref FROM messages WHERE slug = 'nul'`: "t\uFFFD|plain|a\uFFFDb",
	} {
		var got string
		if err := rawSQL(to).QueryRow(query).Scan(&got); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", query, got, err, want)
		}
	}
}
