package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A folder, an OS user or a token label that is not UTF-8 is refused on
// both engines alike, with a sentence that says what to do, and nothing
// is written. It used to work on SQLite and fail every call on
// PostgreSQL (which cannot store it) as a failure inside the server.
func TestTextThatIsNotUTF8IsRefusedOnBothEngines(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		ctx := context.Background()
		db := world(t)
		latin1 := Identity{Name: "caf", Workspace: "/srv/caf\xe9"}
		parties := func() int {
			var n int
			if err := rawSQL(db).QueryRow(`SELECT count(*) FROM parties`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := parties()
		calls := map[string]func(Identity) error{
			"whoami": func(id Identity) error { _, err := db.Whoami(ctx, id, ""); return err },
			"inbox":  func(id Identity) error { _, err := db.Inbox(ctx, id); return err },
			"say":    func(id Identity) error { _, err := db.Say(ctx, id, SayArgs{Text: "hello"}); return err },
			"search": func(id Identity) error { _, err := db.Search(ctx, id, SearchArgs{Query: "hello"}); return err },
			"register": func(id Identity) error {
				_, err := db.Register(ctx, id)
				return err
			},
		}
		for name, call := range calls {
			for _, id := range []Identity{latin1, {Name: "gw2", Workspace: "/srv/gw2", OSUser: "j\xf6rg"}} {
				var ue *UserError
				if err := call(id); !errors.As(err, &ue) || !strings.Contains(err.Error(), "is not UTF-8") {
					t.Errorf("%s as %+v: %v, want it refused as not UTF-8", name, id, err)
				}
			}
		}
		if _, err := openRO(t, db.Path()).Pending(ctx, latin1.Workspace, 3); !errors.As(err, new(*UserError)) {
			t.Errorf("the hook's read for a folder that is not UTF-8: %v, want the same refusal", err)
		}
		if _, err := db.MoveParty(ctx, "mesh-gw", "/srv/mesh-gw-\xff", false); err == nil {
			t.Error("a party was moved to a folder that is not UTF-8")
		} else {
			refused(t, err, "is not UTF-8")
		}
		if n := parties(); n != before {
			t.Fatalf("%d parties after the refusals, want %d", n, before)
		}

		toks, err := db.Tokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer toks.Close()
		_, _, err = toks.Issue(ctx, []string{"node-dash"}, "alice-\xe9", time.Hour)
		refused(t, err, "is not UTF-8")
		if list, err := toks.List(ctx); err != nil || len(list) != 0 {
			t.Fatalf("tokens after the refused issue: %v, %v", list, err)
		}
		if _, err := toks.Verify(ctx, "mcc_\xff\xfe0000000000_"+strings.Repeat("a", 43)); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("a made-up token that is not UTF-8: %v, want it unknown", err)
		}
	})
}
