package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openRO(t *testing.T, path string) *ReadOnly {
	t.Helper()
	open := OpenReadOnly
	if strings.HasPrefix(path, "postgres") { // a test store's URL has no password to redact
		open = OpenReadOnlyPostgres
	}
	r, err := open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func pending(t *testing.T, r *ReadOnly, id Identity, n int) Pending {
	t.Helper()
	p, err := r.Pending(context.Background(), id.Workspace, n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func total(p Pending) int {
	n, _ := p.Unread()
	return n
}

func unreadOf(t *testing.T, db *DB, id Identity) int {
	t.Helper()
	in, err := db.Inbox(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return in.UnreadTotal
}

func TestPendingReportsCountsNewestAndItems(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		for _, text := range []string{"one", "two", "three", "four"} {
			must(t)(db.Say(ctx, gw, SayArgs{Text: text, Channel: "gw--dash"}))
		}
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Is the enum closed?", Body: "I need FRAME_AUX.", Slug: "chunk-api"}))
		r := openRO(t, db.Path())

		p := pending(t, r, dash, 3)
		if p.Party != "node-dash" || total(p) != 5 || len(p.Channels) != 1 {
			t.Fatalf("pending = %+v", p)
		}
		c := p.Channels[0]
		if c.Channel != "gw--dash" || c.Unread != 5 || c.NewestTalk != 5 || len(c.Newest) != 3 {
			t.Fatalf("channel = %+v", c)
		}
		if c.Newest[0].Body != "three" || c.Newest[2].Kind != "ask" || c.Newest[2].Slug != "chunk-api" || c.Newest[2].From != "mesh-gw" {
			t.Fatalf("newest three, oldest first: %+v", c.Newest)
		}
		if len(p.WaitingOnMe) != 1 || p.WaitingOnMe[0].Needs != NeedAck || p.WaitingOnMe[0].Item != "chunk-api" {
			t.Fatalf("waiting on me = %+v", p.WaitingOnMe)
		}

		// The author sees no unread and is not asked to ack its own item.
		mine := pending(t, r, gw, 3)
		if total(mine) != 0 || len(mine.WaitingOnMe) != 0 || len(mine.WaitingOnPeer) != 1 {
			t.Fatalf("author's pending = %+v", mine)
		}
	})
}

func TestPendingNewestTalkIgnoresEvents(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, dash, AskArgs{Title: "Q", Body: "b", Slug: "q"}))
		must(t)(db.Ack(ctx, gw, "q", "", ""))
		r := openRO(t, db.Path())
		c := pending(t, r, dash, 3).Channels[0]
		if c.Unread != 1 || c.NewestTalk != 0 || len(c.Newest) != 1 || c.Newest[0].Kind != "event" {
			t.Fatalf("an unread ack event must count but not be talk: %+v", c)
		}
	})
}

// Counting stops at the cap, so the cost stays flat; the newest messages
// are still the newest.
func TestPendingCountsUpToTheCap(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		seedUnread(t, db, UnreadCountCap+500)
		c := pending(t, openRO(t, db.Path()), dash, 2).Channels[0]
		if c.Unread != UnreadCountCap || !c.Over || len(c.Newest) != 2 || c.Newest[1].Seq != UnreadCountCap+500 {
			t.Fatalf("channel = unread %d over %v newest %+v", c.Unread, c.Over, c.Newest)
		}
		db2 := world(t)
		seedUnread(t, db2, 7)
		if c := pending(t, openRO(t, db2.Path()), dash, 2).Channels[0]; c.Unread != 7 || c.Over {
			t.Fatalf("small channel = %d over %v", c.Unread, c.Over)
		}
	})
}

func TestPendingNeverConsumesNorCreates(t *testing.T) {
	t.Parallel()
	db := world(t)
	ctx := context.Background()
	must(t)(db.Say(ctx, gw, SayArgs{Text: "hello", Channel: "gw--dash"}))
	before := unreadOf(t, db, dash)
	var parties int
	count := func() int {
		var n int
		if err := rawSQL(db).QueryRow(`SELECT count(*) FROM parties`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	parties = count()
	r := openRO(t, db.Path())
	pending(t, r, dash, 3)
	if after := unreadOf(t, db, dash); after != before || before != 1 {
		t.Fatalf("unread %d → %d: reading pending consumed", before, after)
	}
	_, err := r.Pending(ctx, "/srv/stranger", 3)
	if !errors.Is(err, ErrUnknownParty) {
		t.Fatalf("unknown folder: %v", err)
	}
	if count() != parties {
		t.Fatal("Pending created a party")
	}
}

// A writer that checkpoints into the main file during an immutable read
// makes the read start over on the current state.
func TestImmutableReadRetriesWhenTheFileMoves(t *testing.T) {
	t.Parallel()
	db := world(t)
	ctx := context.Background()
	must(t)(db.Say(ctx, gw, SayArgs{Text: "first", Channel: "gw--dash"}))
	path := db.Path()
	db.Close()
	r := openRO(t, path)
	runs := 0
	var seen int
	err := r.view(ctx, func(t2 *tx) error {
		runs++
		if runs == 1 {
			w, err := Open(ctx, path)
			if err != nil {
				return err
			}
			if _, err := w.Say(ctx, gw, SayArgs{Text: "second", Channel: "gw--dash"}); err != nil {
				return err
			}
			w.Close() // the last connection checkpoints into chat.db
		}
		return t2.row(`SELECT count(*) FROM messages`).Scan(&seen)
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs < 2 || seen != 2 {
		t.Fatalf("runs = %d, seen %d messages; want a second run that sees both", runs, seen)
	}
}

func TestReadOnlyRefusesMissingAndForeignFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.db")
	if _, err := OpenReadOnly(context.Background(), missing); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("OpenReadOnly created the database")
	}
	// An empty file is a database being made this moment (SQLite takes it
	// for an empty one): no chat yet, not a foreign file.
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o600)
	if _, err := OpenReadOnly(context.Background(), empty); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("empty: %v", err)
	}
	for name, body := range map[string]string{"text.db": "hello, not a database at all" + strings.Repeat(".", 100)} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(body), 0o600)
		if _, err := OpenReadOnly(context.Background(), path); err == nil || !strings.Contains(err.Error(), "not an SQLite database") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// A valid header over garbage pages: opening works, reading fails.
	db := world(t)
	must(t)(db.Say(context.Background(), gw, SayArgs{Text: "x", Channel: "gw--dash"}))
	db.Close()
	data, _ := os.ReadFile(db.Path())
	for i := 100; i < len(data); i++ {
		data[i] = 0xA5
	}
	bad := filepath.Join(dir, "corrupt.db")
	os.WriteFile(bad, data, 0o600)
	r := openRO(t, bad)
	if _, err := r.Pending(context.Background(), dash.Workspace, 3); err == nil {
		t.Fatal("a corrupt database read without error")
	}
}

// A writer holding the write lock does not stop a WAL reader; a connection
// in exclusive locking mode does, and the reader gives up quickly.
func TestReadOnlyUnderLocks(t *testing.T) {
	db := world(t)
	ctx := context.Background()
	must(t)(db.Say(ctx, gw, SayArgs{Text: "hello", Channel: "gw--dash"}))
	path := db.Path()

	lock, err := sql.Open("sqlite3", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	held, err := lock.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(`UPDATE parties SET about = 'locked' WHERE name = 'fw-core'`); err != nil {
		t.Fatal(err)
	}
	first := openRO(t, path)
	if p := pending(t, first, dash, 3); total(p) != 1 {
		t.Fatalf("under a held write lock: %+v", p)
	}
	first.Close()
	held.Rollback()
	lock.Close()
	db.Close()

	excl, err := sql.Open("sqlite3", "file:"+path+"?_pragma=locking_mode(exclusive)")
	if err != nil {
		t.Fatal(err)
	}
	defer excl.Close()
	excl.SetMaxOpenConns(1)
	if _, err := excl.Exec(`UPDATE parties SET about = 'mine' WHERE name = 'fw-core'`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := openRO(t, path)
	_, err = r.Pending(ctx, dash.Workspace, 3)
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("under an exclusive lock: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("gave up after %v; the busy timeout is %v", d, ReadOnlyBusyTimeout)
	}
}

// seedUnread appends n says from mesh-gw to gw--dash in one statement, so
// that node-dash has n more unread messages.
func seedUnread(tb testing.TB, db *DB, n int) {
	tb.Helper()
	_, err := execRaw(tb, db, `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1),
		c AS (SELECT id FROM channels WHERE name = 'gw--dash'),
		a AS (SELECT id FROM parties WHERE name = 'mesh-gw'),
		s AS (SELECT coalesce(max(seq), 0) AS top FROM messages WHERE channel_id = (SELECT id FROM c))
		INSERT INTO messages (channel_id, seq, kind, body, author_id, status, created_at, updated_at)
		SELECT (SELECT id FROM c), (SELECT top FROM s) + i, 'say', 'seeded message number ' || i, (SELECT id FROM a), 'none', ?2, ?2 FROM k`, n, Now())
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkPending reads what waits on node-dash with 10,000 and with
// 100,000 unread messages: go test ./internal/store -run '^$' -bench Pending
func BenchmarkPending(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("%d_unread", n), func(b *testing.B) {
			db, err := Open(context.Background(), filepath.Join(b.TempDir(), "chat.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			for _, id := range []Identity{gw, dash} {
				if _, err := db.Register(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := db.ChannelNew(ctx, gw, "gw--dash", "", []string{"node-dash"}); err != nil {
				b.Fatal(err)
			}
			seedUnread(b, db, n)
			b.ResetTimer()
			for b.Loop() {
				r, err := OpenReadOnly(ctx, db.Path())
				if err != nil {
					b.Fatal(err)
				}
				p, err := r.Pending(ctx, dash.Workspace, 3)
				r.Close()
				if err != nil || total(p) != min(n, UnreadCountCap) {
					b.Fatalf("pending: %v, %d unread", err, total(p))
				}
			}
		})
	}
}

// A handle opened while every writer had closed the database (no -wal:
// read as immutable) must see what a writer commits later into a new
// -wal, where an immutable read never looks: watch keeps one handle for
// hours.
func TestReadOnlyHandleSeesCommitsAfterAWalAppears(t *testing.T) {
	t.Parallel()
	db := world(t)
	ctx := context.Background()
	path := db.Path()
	db.Close() // the last connection checkpoints and removes the -wal
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Skip("the -wal outlived its last connection here")
	}
	r := openRO(t, path)
	_, before, err := r.Arrivals(ctx, "", -1)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	must(t)(again.Say(ctx, gw, SayArgs{Text: "after the handle opened", Channel: "gw--dash"}))
	found, newest, err := r.Arrivals(ctx, "", before)
	if err != nil || newest <= before || len(found) != 1 || found[0].Body != "after the handle opened" {
		t.Fatalf("after a commit into a new -wal: %+v, newest %d (was %d), %v", found, newest, before, err)
	}
}
