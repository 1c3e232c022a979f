package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"

	mcppchat "github.com/mcpp/mcpp-chat"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// fullScan matches a query-plan line that walks a whole table or index of
// the tables that grow with the history. Channels, parties and seats are
// small and may be scanned.
var fullScan = regexp.MustCompile(`\bSCAN (m|par|messages|ic|item_consumers|cursors|tl|told|idempotency_keys)\b`)

// Every statement a call runs — each is kept in the statement cache — must
// reach the history through an index: a SCAN of messages, item_consumers or
// cursors would make the call grow with months of history.
func TestEveryCallQueryUsesAnIndex(t *testing.T) {
	t.Parallel()
	db, report := seeded(t, smallSeed)
	queries := exerciseEveryCall(t, db, report)
	for _, q := range queries {
		plan := explain(t, db, q)
		if fullScan.MatchString(plan) {
			t.Errorf("a call scans a growing table:\n%s\nplan:\n%s", strings.TrimSpace(q), plan)
		}
	}
}

// A cached statement is prepared once: running it again with other values
// must not make SQLite re-prepare it (it would, for any statement whose
// parameter it compares with a partial index's constants, unless the
// connection has the query planner stability guarantee).
func TestCachedStatementsAreNotReprepared(t *testing.T) {
	t.Parallel()
	db, report := seeded(t, smallSeed)
	queries := exerciseEveryCall(t, db, report)
	conn, err := rawSQL(db).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(c any) error {
		raw := c.(driver.Conn).Raw()
		for _, q := range queries {
			st, _, err := raw.Prepare(q)
			if err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
			for round := 1; round <= 3; round++ {
				for i := 1; i <= st.BindCount(); i++ {
					st.BindInt(i, round)
				}
				for st.Step() {
				}
				st.Reset()
				st.ClearBindings()
			}
			if n := st.Status(sqlite3.STMTSTATUS_REPREPARE, false); n > 0 {
				t.Errorf("re-prepared %d times in 3 runs: %s", n, strings.TrimSpace(q))
			}
			st.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// exerciseEveryCall makes every kind of call on a seeded database and
// returns the statements they ran (the statement cache's keys).
func exerciseEveryCall(t *testing.T, db *DB, report SeedReport) []string {
	t.Helper()
	ctx := context.Background()
	reader, peer := smallSeed.Parties[0], smallSeed.Parties[1]
	ch := report.ReaderChannels[0]
	in, err := db.Inbox(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	var ack, resolve, prune string
	for _, w := range in.WaitingOnMe {
		switch {
		case w.Needs == NeedAck && ack == "":
			ack = w.Item // a bare slug: the lookup across channels
		case w.Needs == NeedResolve && resolve == "":
			resolve = w.Channel + ":" + w.Item
		case w.Needs == NeedPruneOK && prune == "":
			prune = w.Channel + ":" + w.Item
		}
	}
	zero := int64(0)
	search := func() error { _, err := db.Search(ctx, reader, SearchArgs{Query: "hello"}); return err }
	steps := []func() error{
		search, // the first: indexes the history
		func() error { _, err := db.Whoami(ctx, reader, ""); return err },
		func() error { _, err := db.Whoami(ctx, reader, "benchmarks"); return err },
		func() error { _, err := db.ChannelList(ctx, reader, false); return err },
		func() error { _, err := db.ChannelList(ctx, reader, true); return err },
		func() error { _, err := db.Say(ctx, reader, SayArgs{Channel: ch, Text: "hello"}); return err },
		func() error { _, err := db.Say(ctx, reader, SayArgs{ReplyTo: ch + ":1", Text: "re"}); return err },
		func() error {
			_, err := db.Ask(ctx, reader, AskArgs{Channel: ch, Title: "A question", Body: "Why?"})
			return err
		},
		func() error {
			// A repeat of an ask within the window: the lookup that finds it.
			_, err := db.Ask(ctx, reader, AskArgs{Channel: ch, Title: "A question", Body: "Why?", SameWithin: time.Minute})
			return err
		},
		func() error {
			_, err := db.RecordTold(ctx, peer, []Telling{{Channel: ch, Seq: 1, At: Now(), Via: ViaWake}, {Channel: ch, Seq: 2, At: Now(), Via: ViaStop}})
			return err
		},
		func() error {
			keyed := Keyed{Me: reader, Tool: "chat_say", Key: "k", ArgsHash: "h"}
			for range 2 { // the call, then its retry
				_, _, err := db.Once(ctx, keyed, func(ctx context.Context) (KeyedAnswer, error) {
					_, err := db.Say(ctx, reader, SayArgs{Channel: ch, Text: "once"})
					return KeyedAnswer{JSON: "{}"}, err
				})
				if err != nil {
					return err
				}
			}
			return nil
		},
		func() error { _, err := db.Reply(ctx, peer, "a-question", "because", ""); return err },
		func() error { _, err := db.Ack(ctx, reader, ack, "on it", ""); return err },
		func() error { _, err := db.Resolve(ctx, reader, resolve, "thanks", false, ""); return err },
		func() error { _, err := db.PruneOK(ctx, reader, prune, ""); return err },
		func() error { _, err := db.Read(ctx, reader, ReadArgs{Channel: ch, Limit: 50}); return err },
		func() error {
			_, err := db.Read(ctx, reader, ReadArgs{Channel: ch, Limit: 50, Since: &zero, Peek: true})
			return err
		},
		func() error {
			_, err := db.Read(ctx, reader, ReadArgs{Channel: ch, Limit: 50, Archived: true})
			return err
		},
		func() error { _, err := db.ChannelNew(ctx, reader, "fresh", "", []string{peer.Name}); return err },
		func() error { _, err := db.ChannelLeave(ctx, reader, "fresh"); return err },
		func() error { _, err := db.ChannelJoin(ctx, reader, "fresh"); return err },
		search, // after writes and an archived item: settles and adds them
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	// Statements are prepared between calls: one more call prepares the
	// last call's.
	if _, err := db.Inbox(ctx, reader); err != nil {
		t.Fatal(err)
	}
	queries := db.cachedQueries()
	if len(queries) < 30 {
		t.Fatalf("only %d statements were cached — is the statement cache in use?", len(queries))
	}
	return queries
}

// Each index patch 3 adds is used by the query it was made for (found in
// the statements the calls ran, by a piece of its text).
func TestPatch3IndexesServeTheirQueries(t *testing.T) {
	t.Parallel()
	db, report := seeded(t, smallSeed)
	queries := exerciseEveryCall(t, db, report)
	for _, c := range []struct{ text, index string }{
		{"m.kind = 'ask' AND m.is_archived = 0)", "idx_messages_channel_items"}, // chat_channel_list's live items
		{"WHERE m.slug = ?1", "idx_messages_slug"},                              // an item by its bare slug
		{"ic.prune_ok_at IS NULL)", "idx_consumers_pending"},                    // the archive sweep
	} {
		found := false
		for _, q := range queries {
			if !strings.Contains(q, c.text) {
				continue
			}
			found = true
			if plan := explain(t, db, q); !strings.Contains(plan, c.index) {
				t.Errorf("does not use %s:\n%s\nplan:\n%s", c.index, strings.TrimSpace(q), plan)
			}
		}
		if !found {
			t.Errorf("no call ran a query containing %q", c.text)
		}
	}
}

// cachedQueries are the statements the handle's calls ran: on SQLite
// those its statement cache keeps, on PostgreSQL as PostgreSQL got them.
func (d *DB) cachedQueries() []string {
	return d.eng.(interface{ Statements() []string }).Statements()
}

// explain returns the query plan's lines; parameters stay unbound.
func explain(t *testing.T, db *DB, query string) string {
	t.Helper()
	conn, err := rawSQL(db).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var lines []string
	err = conn.Raw(func(c any) error {
		st, _, err := c.(driver.Conn).Raw().Prepare("EXPLAIN QUERY PLAN " + query)
		if err != nil {
			return err
		}
		defer st.Close()
		for st.Step() {
			lines = append(lines, st.ColumnText(3))
		}
		return st.Err()
	})
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	return strings.Join(lines, "\n")
}

// A database at any older version is brought to the newest in one go: every
// patch's indexes exist afterwards, the rows are untouched, and the version
// says so.
func TestMigrationAppliesEveryPatch(t *testing.T) {
	t.Parallel()
	steps, err := engine.Patches("schema_patches", "")
	if err != nil {
		t.Fatal(err)
	}
	latest := len(steps)
	for from := 1; from < latest; from++ {
		t.Run(fmt.Sprintf("from v%d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chat.db")
			old, err := sql.Open("sqlite3", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range steps[:from] {
				if _, err := old.Exec(s.SQL); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := old.Exec(`INSERT INTO schema_version VALUES (1, ?, '2026-01-01T00:00:00.000000+00:00')`, from); err != nil {
				t.Fatal(err)
			}
			if _, err := old.Exec(`INSERT INTO parties (name, workspace_path, first_seen, last_seen) VALUES ('a', '/a', 'x', 'x');
				INSERT INTO channels (name, created_at) VALUES ('c', 'x');
				INSERT INTO messages (channel_id, seq, kind, body, author_id, status, slug, title, created_at, updated_at)
				VALUES (1, 1, 'ask', 'b', 1, 'open', 's', 't', 'x', 'x')`); err != nil {
				t.Fatal(err)
			}
			old.Close()

			db, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if v, err := db.Version(context.Background()); err != nil || v != latest {
				t.Fatalf("version %d (%v), want %d", v, err, latest)
			}
			for _, name := range patchIndexNames(t) {
				if n := count(t, db, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, name); n != 1 {
					t.Errorf("index %s missing after the migration", name)
				}
			}
			if n := count(t, db, `SELECT count(*) FROM messages m WHERE m.channel_id = 1 AND m.kind = 'ask' AND m.is_archived = 0`); n != 1 {
				t.Fatalf("the row did not survive the migration: %d", n)
			}
		})
	}
}

var createIndex = regexp.MustCompile(`CREATE INDEX IF NOT EXISTS (\w+)`)

// patchIndexNames lists the indexes the patch files create.
func patchIndexNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("../../schema_patches")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "patch-") {
			continue
		}
		body, err := mcppchat.SchemaPatches.ReadFile("schema_patches/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range createIndex.FindAllStringSubmatch(string(body), -1) {
			out = append(out, m[1])
		}
	}
	if len(out) == 0 {
		t.Fatal("no index found in the patches")
	}
	return out
}
