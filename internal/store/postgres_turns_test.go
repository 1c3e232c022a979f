package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/postgres"
)

// holdChannel plays a call that is writing in channel name of db's team
// store and has not committed yet: it holds the channel's lock until
// release is called.
func holdChannel(t *testing.T, db *DB, name string) (release func()) {
	t.Helper()
	ctx := context.Background()
	var id int64
	if err := rawSQL(db).QueryRowContext(ctx, `SELECT id FROM channels WHERE name = $1`, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	tx, err := rawSQL(db).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, postgres.ChannelLock, int32(id)); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { tx.Rollback() }) }
	t.Cleanup(release)
	return release
}

// On a team store a call writing in one channel holds up the writes of
// that channel alone: another channel's writes, and every read, search
// included, go on beside it; a write in the held channel waits its busy
// timeout and says what it waited for.
func TestTeamStoreWritesTakeTurnsPerChannel(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		ctx := context.Background()
		db := worldWith(t, Options{BusyTimeout: 400 * time.Millisecond})
		must(t)(db.ChannelNew(ctx, gw, "gw--fw", "", []string{"fw-core"}))
		must(t)(db.Say(ctx, dash, SayArgs{Text: "first words in gw--dash", Channel: "gw--dash"}))
		release := holdChannel(t, db, "gw--dash")

		if _, err := db.Say(ctx, gw, SayArgs{Text: "beside it", Channel: "gw--fw"}); err != nil {
			t.Fatalf("a say in another channel: %v, want it to go on beside the held one", err)
		}
		if _, err := db.Read(ctx, gw, ReadArgs{Channel: "gw--dash", Limit: 10}); err != nil {
			t.Fatalf("a read of the held channel, moving its cursor: %v", err)
		}
		if _, err := db.Inbox(ctx, dash); err != nil {
			t.Fatalf("an inbox: %v", err)
		}
		if _, err := db.Search(ctx, dash, SearchArgs{Query: "words", Limit: 5}); err != nil {
			t.Fatalf("a search: %v", err)
		}
		if _, err := db.Ask(ctx, fw, AskArgs{Title: "a new party's first ask", Channel: "gw--fw"}); err != nil {
			t.Fatalf("an ask in another channel: %v", err)
		}

		_, err := db.Say(ctx, dash, SayArgs{Text: "waits", Channel: "gw--dash"})
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "this channel's write lock") {
			t.Fatalf("a say in the held channel = %v, want ErrBusy naming the channel's lock", err)
		}
		release()
		r, err := db.Say(ctx, dash, SayArgs{Text: "now it goes", Channel: "gw--dash"})
		if err != nil || r.Seq != 2 {
			t.Fatalf("the say after the release = %+v, %v, want seq 2", r, err)
		}
	})
}

// Prune-oks of one item given at once archive it exactly once, and says
// in many channels at once keep every channel's seqs gapless.
func TestTeamStoreConcurrentInvariants(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		ctx := context.Background()
		db := worldWith(t, Options{BusyTimeout: 20 * time.Second})
		everyone := []Identity{gw, dash, fw} // the raiser gives prune-ok too
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		const items = 6
		for i := range items {
			_, err := db.Ask(ctx, gw, AskArgs{Title: "item " + string(rune('a'+i)), Channel: "gw--dash", Consumers: []string{"node-dash", "fw-core"}})
			if err != nil {
				t.Fatal(err)
			}
			must(t)(db.Resolve(ctx, gw, "gw--dash:item-"+string(rune('a'+i)), "", false, ""))
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range items {
			for _, p := range everyone {
				wg.Go(func() {
					_, err := db.PruneOK(ctx, p, "gw--dash:item-"+string(rune('a'+i)), "")
					if err != nil && !strings.Contains(err.Error(), "archived") {
						errs <- err
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		var events, archived int
		if err := rawSQL(db).QueryRow(`SELECT (SELECT count(*) FROM messages WHERE kind = 'event' AND body LIKE '%archived (done%'),
			(SELECT count(*) FROM messages WHERE kind = 'ask' AND is_archived = 1)`).Scan(&events, &archived); err != nil {
			t.Fatal(err)
		}
		if events != items || archived != items {
			t.Errorf("%d archive events and %d archived items of %d, want one each", events, archived, items)
		}
	})
}

// A burst of writes in one process longer than the busy timeout is a
// queue that moves: every call has its turn, none fails "busy" (on SQLite
// the process's own queue; on a team store the channel's).
func TestAMovingQueueIsNeverBusy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a burst of 2,500 writes is seconds of load; it runs in the full tier (make test)")
	}
	bothEngines(t, func(t *testing.T) {
		ctx := context.Background()
		// A second is far longer than one write, even on a loaded machine,
		// and far shorter than the burst.
		db := worldWith(t, Options{BusyTimeout: time.Second})
		const writes = 2500
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, writes)
		for i := range writes {
			wg.Go(func() {
				id := gw
				if i%2 == 1 {
					id = dash
				}
				if _, err := db.Say(ctx, id, SayArgs{Text: "burst", Channel: "gw--dash"}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		t.Logf("%d writes in %v with a busy timeout of 1s", writes, time.Since(start))
		var n int
		if err := rawSQL(db).QueryRow(`SELECT count(*) FROM messages WHERE body = 'burst'`).Scan(&n); err != nil || n != writes {
			t.Errorf("%d messages (%v), want %d", n, err, writes)
		}
	})
}

// On a team store a read that writes nothing holds no lock at all: it
// goes on while the person's own command holds the store alone. A read
// that writes (chat_read moves the cursor) waits for the command as any
// write does, and says so when its busy timeout runs out.
func TestTeamReadsGoOnBesideThePersonsCommands(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		ctx := context.Background()
		db := worldWith(t, Options{BusyTimeout: 400 * time.Millisecond})
		must(t)(db.Inbox(ctx, gw)) // gw's last_seen is fresh: its next inbox writes nothing
		must(t)(db.Say(ctx, dash, SayArgs{Text: "for gw", Channel: "gw--dash"}))
		command, err := rawSQL(db).BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer command.Rollback()
		if _, err := command.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, postgres.WriteLock); err != nil {
			t.Fatal(err)
		}
		in, err := db.Inbox(ctx, gw)
		if err != nil {
			t.Fatalf("an inbox waited for the person's command: %v", err)
		}
		if in.UnreadTotal != 1 {
			t.Fatalf("the inbox beside the command shows %d unread, want the say's 1", in.UnreadTotal)
		}
		if _, err := db.Read(ctx, gw, ReadArgs{Channel: "gw--dash", Limit: 20}); !errors.Is(err, ErrBusy) {
			t.Fatalf("a read that moves its cursor beside the person's command: %v, want busy", err)
		}
		command.Rollback()
		res, err := db.Read(ctx, gw, ReadArgs{Channel: "gw--dash", Limit: 20})
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("the read once the command ended: %d messages, %v", len(res.Messages), err)
		}
	})
}
