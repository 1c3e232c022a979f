package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// dumpTables renders every row of every table: a refused command must
// leave it as it was.
func dumpTables(t *testing.T, db *DB) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"parties", "channels", "channel_parties", "messages", "item_consumers", "cursors"} {
		rows, err := rawSQL(db).Query(`SELECT * FROM ` + table + ` ORDER BY 1, 2`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %v\n", table, vals)
		}
		rows.Close()
	}
	return b.String()
}

// unchanged runs a refused command and checks it wrote nothing.
func unchanged(t *testing.T, db *DB, want string, run func() error) {
	t.Helper()
	before := dumpTables(t, db)
	refused(t, run(), want)
	if after := dumpTables(t, db); after != before {
		t.Fatalf("a refused command wrote:\n%s\n---\n%s", before, after)
	}
}

func TestPartiesListsFolderActivityAndObligations(t *testing.T) {
	t.Parallel()
	db := world(t)
	ctx := context.Background()
	must(t)(db.Ask(ctx, gw, AskArgs{Title: "Is the enum closed?", Body: "?", Slug: "enum"}))
	list, err := db.Parties(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("parties = %+v", list)
	}
	fw, gwRec, dashRec := list[0], list[1], list[2]
	if fw.Name != "fw-core" || fw.Workspace != "/srv/fw-core" || len(fw.Channels) != 0 || fw.LastSeen == "" {
		t.Errorf("fw-core = %+v", fw)
	}
	if gwRec.Wrote != 1 || !reflect.DeepEqual(gwRec.Channels, []string{"gw--dash"}) || len(gwRec.Owes) != 0 {
		t.Errorf("mesh-gw = %+v", gwRec)
	}
	if !reflect.DeepEqual(dashRec.Owes, []string{"an ack on #gw--dash [enum]"}) {
		t.Errorf("node-dash owes %q", dashRec.Owes)
	}
}

// A repository moved: its session became node-dash~2 and its old items
// waited on node-dash forever. Moving node-dash to the new folder, folding
// node-dash~2 in, brings them back to that session.
func TestMovePartyFoldsTheNewNameIn(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Is the enum closed?", Body: "?", Slug: "enum"}))
		moved := Identity{Name: "node-dash", Workspace: "/home/me/node-dash"}
		must(t)(db.ChannelNew(ctx, moved, "dash-notes", "", nil))
		must(t)(db.Say(ctx, moved, SayArgs{Text: "hello from the new folder", Channel: "dash-notes"}))
		if name, _, _ := db.PartyName(ctx, moved); name != "node-dash~2" {
			t.Fatalf("the moved repository is %q", name)
		}

		unchanged(t, db, "(its messages, seats and items become node-dash's)", func() error { _, err := db.MoveParty(ctx, "node-dash", moved.Workspace, false); return err })
		unchanged(t, db, "no party named nobody —", func() error { _, err := db.MoveParty(ctx, "nobody", "/x", false); return err })
		unchanged(t, db, "already lives at", func() error { _, err := db.MoveParty(ctx, "node-dash", "/srv/node-dash", false); return err })

		res, err := db.MoveParty(ctx, "node-dash", moved.Workspace, true)
		if err != nil || res.Merged != "node-dash~2" || res.From != "/srv/node-dash" {
			t.Fatalf("move: %+v %v", res, err)
		}
		if name, known, _ := db.PartyName(ctx, moved); name != "node-dash" || !known {
			t.Fatalf("the new folder is %q (known %v)", name, known)
		}
		inbox, err := db.Inbox(ctx, moved)
		if err != nil {
			t.Fatal(err)
		}
		if len(inbox.WaitingOnMe) != 1 || inbox.WaitingOnMe[0].Item != "enum" {
			t.Errorf("the session in the new folder is not asked for its ack: %+v", inbox.WaitingOnMe)
		}
		notes := readAll(t, db, moved, "dash-notes")
		if len(notes.Messages) != 1 || notes.Messages[0].From != "node-dash" {
			t.Errorf("node-dash~2's message is not node-dash's: %+v", notes.Messages)
		}
		list, _ := db.Parties(ctx)
		for _, p := range list {
			if p.Name == "node-dash~2" {
				t.Error("node-dash~2 is still a party")
			}
			if p.Name == "node-dash" && !reflect.DeepEqual(p.Channels, []string{"dash-notes", "gw--dash"}) {
				t.Errorf("node-dash sits in %q", p.Channels)
			}
		}

		// A folder nobody uses yet: a plain move.
		if res, err := db.MoveParty(ctx, "fw-core", "/new/fw-core", false); err != nil || res.Merged != "" {
			t.Errorf("plain move: %+v %v", res, err)
		}
	})
}

// Merging combines rows both parties hold: an ack given under the new name
// counts for the item, and a seat and a cursor are not lost.
func TestMergeCombinesSharedRows(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		moved := Identity{Name: "node-dash", Workspace: "/home/me/node-dash"}
		must(t)(db.Register(ctx, moved))
		must(t)(db.ChannelJoin(ctx, moved, "gw--dash"))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Both of you?", Body: "?", Slug: "both"}))
		must(t)(db.Ack(ctx, moved, "both", "", ""))
		must(t)(db.MoveParty(ctx, "node-dash", moved.Workspace, true))
		inbox, _ := db.Inbox(ctx, moved)
		if len(inbox.WaitingOnMe) != 0 {
			t.Errorf("the ack given as node-dash~2 does not count: %+v", inbox.WaitingOnMe)
		}
		var consumers int
		rawSQL(db).QueryRow(`SELECT count(*) FROM item_consumers`).Scan(&consumers)
		if consumers != 2 {
			t.Errorf("%d consumer rows, want mesh-gw's and node-dash's", consumers)
		}
	})
}

func TestForgetParty(t *testing.T) {
	t.Parallel()
	db := world(t)
	ctx := context.Background()
	must(t)(db.Ask(ctx, gw, AskArgs{Title: "Is the enum closed?", Body: "?", Slug: "enum"}))

	unchanged(t, db, "cannot be forgotten", func() error { _, err := db.ForgetParty(ctx, "mesh-gw", true); return err })
	unchanged(t, db, "--force", func() error { _, err := db.ForgetParty(ctx, "node-dash", false); return err })
	unchanged(t, db, "no party named", func() error { _, err := db.ForgetParty(ctx, "ghost", true); return err })

	res, err := db.ForgetParty(ctx, "fw-core", false)
	if err != nil || res.Workspace != "/srv/fw-core" {
		t.Fatalf("forget fw-core: %+v %v", res, err)
	}
	res, err = db.ForgetParty(ctx, "node-dash", true)
	if err != nil || res.Seats != 1 || !reflect.DeepEqual(res.Released, []string{"an ack on #gw--dash [enum]"}) {
		t.Fatalf("forget node-dash: %+v %v", res, err)
	}
	list, _ := db.Parties(ctx)
	if len(list) != 1 || list[0].Name != "mesh-gw" {
		t.Errorf("parties left: %+v", list)
	}
	inbox, _ := db.Inbox(ctx, gw)
	for _, w := range inbox.WaitingOnPeer {
		if strings.Contains(fmt.Sprint(w.WaitingOn), "node-dash") {
			t.Errorf("an item still waits on the forgotten party: %+v", w)
		}
	}
}

func TestSetCursor(t *testing.T) {
	t.Parallel()
	db := world(t)
	ctx := context.Background()
	for i := range 3 {
		must(t)(db.Say(ctx, gw, SayArgs{Text: fmt.Sprint("news ", i)}))
	}
	must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 500}))

	res, err := db.SetCursor(ctx, "node-dash", "gw--dash", 0)
	if err != nil || res.From != 3 || res.To != 0 || res.Unread != 3 || res.Newest != 3 {
		t.Fatalf("reset: %+v %v", res, err)
	}
	inbox, _ := db.Inbox(ctx, dash)
	if len(inbox.Channels) != 1 || inbox.Channels[0].Unread != 3 {
		t.Errorf("after the reset: %+v", inbox.Channels)
	}
	unchanged(t, db, "from 0 (everything unread) to 3", func() error { _, err := db.SetCursor(ctx, "node-dash", "gw--dash", 4); return err })
	unchanged(t, db, "no channel named nope —", func() error { _, err := db.SetCursor(ctx, "node-dash", "nope", 0); return err })
	unchanged(t, db, "no party named ghost —", func() error { _, err := db.SetCursor(ctx, "ghost", "gw--dash", 0); return err })
}
