package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func seedParties(n int) []Identity {
	out := make([]Identity, n)
	for i := range out {
		name := fmt.Sprintf("party-%02d", i)
		out[i] = Identity{Name: name, Workspace: "/srv/" + name}
	}
	return out
}

var smallSeed = SeedSpec{Parties: seedParties(5), Channels: 4, Seats: 3, History: 200, LiveItems: 40, Unread: 30}

func seeded(t *testing.T, spec SeedSpec) (*DB, SeedReport) {
	t.Helper()
	db := openTest(t)
	report, err := db.Seed(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return db, report
}

func count(t *testing.T, db *DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := rawSQL(db).QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The seed must be a conversation the tools could have written: the tools'
// own answers on it agree with the spec, and nothing in it is left for a
// sweep to tidy up.
func TestSeedIsAConversationTheToolsAgreeWith(t *testing.T) {
	t.Parallel()
	db, report := seeded(t, smallSeed)
	ctx := context.Background()
	live := smallSeed.LiveItems
	if got := count(t, db, `SELECT count(*) FROM messages`); got != report.Messages || got < smallSeed.History+live+smallSeed.Unread {
		t.Fatalf("messages = %d, report says %d", got, report.Messages)
	}
	if got := count(t, db, `SELECT count(*) FROM messages WHERE kind = 'ask' AND is_archived = 0`); got != live {
		t.Fatalf("live items = %d, want %d", got, live)
	}
	if got := count(t, db, `SELECT count(*) FROM messages WHERE is_archived = 1`); got != report.Archived || got == 0 {
		t.Fatalf("archived rows = %d, report says %d", got, report.Archived)
	}
	if gaps := count(t, db, `SELECT count(*) FROM (SELECT channel_id FROM messages GROUP BY channel_id HAVING count(*) <> max(seq) OR min(seq) <> 1)`); gaps != 0 {
		t.Fatalf("%d channels have gaps in their seqs", gaps)
	}
	if bad := count(t, db, `SELECT count(*) FROM pragma_foreign_key_check`); bad != 0 {
		t.Fatalf("%d rows break a foreign key", bad)
	}
	var ok string
	if err := rawSQL(db).QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity: %s %v", ok, err)
	}

	before := report.Messages
	reader := smallSeed.Parties[0]
	in, err := db.Inbox(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	if got := count(t, db, `SELECT count(*) FROM messages`); got != before {
		t.Fatalf("the inbox's sweep archived something: %d rows became %d", before, got)
	}
	if in.UnreadTotal != smallSeed.Unread || report.Unread != smallSeed.Unread {
		t.Fatalf("reader's unread = %d (report %d), want %d", in.UnreadTotal, report.Unread, smallSeed.Unread)
	}
	var names []string
	for _, c := range in.Channels {
		names = append(names, c.Channel)
		if len(c.Parties) != smallSeed.Seats {
			t.Fatalf("%s seats %v, want %d parties", c.Channel, c.Parties, smallSeed.Seats)
		}
	}
	if strings.Join(names, ",") != strings.Join(report.ReaderChannels, ",") {
		t.Fatalf("inbox channels %v, report %v", names, report.ReaderChannels)
	}
	items := count(t, db, `SELECT count(*) FROM messages m JOIN channel_parties cp ON cp.channel_id = m.channel_id
		WHERE m.kind = 'ask' AND m.is_archived = 0 AND cp.party_id = (SELECT id FROM parties WHERE name = ?)`, reader.Name)
	if got := len(in.WaitingOnMe) + len(in.WaitingOnPeer); got != items || items == 0 {
		t.Fatalf("inbox lists %d items, the reader's channels hold %d", got, items)
	}
	needs := map[Need]int{}
	for _, w := range in.WaitingOnMe {
		needs[w.Needs]++
	}
	if needs[NeedAck] == 0 || needs[NeedResolve] == 0 || needs[NeedPruneOK] == 0 {
		t.Fatalf("want items waiting on each of the reader's ack, resolve and prune-ok; got %v", needs)
	}
	for _, p := range smallSeed.Parties[1:] {
		in, err := db.Inbox(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if in.UnreadTotal != 0 {
			t.Fatalf("%s has %d unread; only the reader should", p.Name, in.UnreadTotal)
		}
	}

	// The reader can act on what waits on it, and an archived page holds
	// the settled items with their replies.
	for _, w := range in.WaitingOnMe {
		if w.Needs == NeedAck {
			st, err := db.Ack(ctx, reader, w.Channel+":"+w.Item, "", "")
			if err != nil || st.Status != "ack" {
				t.Fatalf("ack %s: %v %+v", w.Item, err, st)
			}
			break
		}
	}
	zero := int64(0)
	r, err := db.Read(ctx, reader, ReadArgs{Channel: report.ReaderChannels[0], Limit: 500, Since: &zero, Archived: true})
	if err != nil {
		t.Fatal(err)
	}
	var asks, replies int
	for _, m := range r.Messages {
		switch m.Kind {
		case "ask":
			asks++
			if m.Status != "done" || len(m.Consumers) != smallSeed.Seats {
				t.Fatalf("archived item %+v", m)
			}
		case "reply":
			replies++
		}
	}
	if asks == 0 || replies != asks {
		t.Fatalf("archived page: %d items, %d replies", asks, replies)
	}
}

func TestSeedRefusesAUsedDatabase(t *testing.T) {
	t.Parallel()
	db, _ := seeded(t, smallSeed)
	if _, err := db.Seed(context.Background(), smallSeed); err == nil || !strings.Contains(err.Error(), "empty database") {
		t.Fatalf("a second seed: %v", err)
	}
	if _, err := openTest(t).Seed(context.Background(), SeedSpec{Parties: seedParties(1), Channels: 1, Seats: 2}); err == nil {
		t.Fatal("a seed with one party was accepted")
	}
}
