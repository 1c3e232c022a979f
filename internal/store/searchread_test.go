package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/postgres"
)

// bigBody is about size bytes of words, most in every body (ipsum, dolor…),
// a few in this one only (lorem<i>).
func bigBody(i, size int) string {
	var b strings.Builder
	for b.Len() < size {
		fmt.Fprintf(&b, "word%d lorem%d ipsum dolor%d ", b.Len()%977, i, b.Len()%131)
	}
	return b.String()
}

// bigChannel fills gw--dash with n messages of size bytes each.
func bigChannel(t *testing.T, db *DB, n, size int) {
	t.Helper()
	for i := range n {
		must(t)(db.Say(context.Background(), gw, SayArgs{Text: bigBody(i, size), Channel: "gw--dash"}))
	}
}

// A search runs on the read path: however long it takes — a first index
// of 26 MB of bodies on SQLite, 400 matches of 64 KiB to rank on
// PostgreSQL — every say beside it goes through, and is stored once. On
// PostgreSQL a search held the store's write lock throughout, and a say
// beside it failed as busy after its 5 s.
func TestSearchNeverMakesAWriterWait(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a first index of 26 MB beside a stream of says is seconds of load; it runs in the full tier (make test)")
	}
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		bigChannel(t, db, 400, 64<<10)
		r := openRO(t, db.Path())
		searches := make(chan error, 2)
		search := func(who string, run func() (SearchResult, error)) {
			start := time.Now()
			got, err := run()
			t.Logf("%s's search: %d hits in %v (%v)", who, got.Total, time.Since(start).Round(time.Millisecond), err)
			searches <- err
		}
		go search("an agent", func() (SearchResult, error) { return db.Search(ctx, dash, SearchArgs{Query: "ipsum"}) })
		go search("a person", func() (SearchResult, error) { return r.Search(ctx, SearchArgs{Query: "dolor*"}) })
		var said []string
		for running := 2; running > 0; {
			select {
			case err := <-searches:
				running--
				// A search may be told to narrow itself (PostgreSQL's
				// statement timeout); what is tested is the writer.
				if err != nil && !strings.Contains(err.Error(), "was stopped — narrow it") {
					t.Errorf("search: %v", err)
				}
				continue
			default:
			}
			text := fmt.Sprintf("said beside the search, %d", len(said))
			if _, err := db.Say(ctx, gw, SayArgs{Text: text, Channel: "gw--dash"}); err != nil {
				t.Fatalf("say %d beside the search (busy: %v): %v", len(said), errors.Is(err, ErrBusy), err)
			}
			said = append(said, text)
		}
		t.Logf("%d says beside the searches", len(said))
		stored := map[string]int{}
		rows, err := rawSQL(db).Query(`SELECT body FROM messages WHERE body LIKE 'said beside the search, %'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var body string
			if err := rows.Scan(&body); err != nil {
				t.Fatal(err)
			}
			stored[body]++
		}
		if len(stored) != len(said) {
			t.Fatalf("%d says stored, %d made", len(stored), len(said))
		}
		for _, text := range said {
			if stored[text] != 1 {
				t.Fatalf("%q stored %d times", text, stored[text])
			}
		}
	})
}

// A search that outlives its time on a team store is stopped, and the
// person told how to narrow it, in a sentence.
func TestPostgresSearchPastItsTimeSaysToNarrowIt(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		bigChannel(t, db, 50, 64<<10)
		defer func(was time.Duration) { postgres.SearchTimeout = was }(postgres.SearchTimeout)
		postgres.SearchTimeout = time.Millisecond // a phrase is checked in every body: far longer
		_, err := db.Search(ctx, dash, SearchArgs{Query: `"ipsum dolor3"`})
		refused(t, err, "the search took longer than 1ms and was stopped — narrow it")
	})
}

// The agent's search reads its scope without writing — but, like every
// call, makes the caller's party at first sight and notes it as seen once
// its last sighting is a minute old.
func TestAgentSearchMakesItsPartyAndNotesItSeen(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		db := worldWith(t, Options{Clock: func() time.Time { return now }})
		ctx := context.Background()
		newcomer := Identity{Name: "newcomer", Workspace: "/srv/newcomer"}
		if got := must2[SearchResult](t)(db.Search(ctx, newcomer, SearchArgs{Query: "anything"})); got.Total != 0 {
			t.Fatalf("a party in no channel found %+v", got)
		}
		seen := func(name string) string {
			var at string
			if err := rawSQL(db).QueryRow(`SELECT last_seen FROM parties WHERE name = '` + name + `'`).Scan(&at); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return at
		}
		if seen("newcomer") != Timestamp(now) {
			t.Fatalf("newcomer last seen %s", seen("newcomer"))
		}
		now = now.Add(30 * time.Second)
		must(t)(db.Search(ctx, gw, SearchArgs{Query: "anything"}))
		if seen("mesh-gw") == Timestamp(now) {
			t.Fatal("a sighting under a minute old was written again")
		}
		now = now.Add(time.Minute)
		must(t)(db.Search(ctx, gw, SearchArgs{Query: "anything"}))
		if seen("mesh-gw") != Timestamp(now) {
			t.Fatalf("mesh-gw last seen %s, now %s", seen("mesh-gw"), Timestamp(now))
		}
	})
}

// Searches hold a bounded share of a team store's connections, so that a
// write waits for no search: thirty searches by one party, each held
// inside its read with its connection in hand, take the party's share and
// queue for the rest; another party's say in another channel, and another
// party's search, go through while every one of them is held. The
// searches then all finish. Before, eight of them took all eight of the
// pool's connections, and the say waited for them (on a hub 10–11 s,
// with thirty 27 s, and past a few dozen it failed as busy).
func TestSearchesLeaveWritersTheirTurns(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelNew(ctx, fw, "fw--gw", "", []string{"mesh-gw"}))
		must(t)(db.Say(ctx, gw, SayArgs{Text: "the wire format changed", Channel: "gw--dash"}))
		var held, most atomic.Int64
		entered := make(chan string, 64)
		release := make(chan struct{})
		var releaseOnce sync.Once
		letGo := func() { releaseOnce.Do(func() { close(release) }) }
		postgres.SearchHeld = func(ctx context.Context) {
			n := held.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			entered <- fmt.Sprint(ctx.Value(searchWho{}))
			<-release
			held.Add(-1)
		}
		t.Cleanup(func() {
			letGo() // before the store closes, on a failure too
			postgres.SearchHeld = nil
		})

		const searches = 30
		done := make(chan error, searches+1)
		search := func(who Identity) {
			_, err := db.Search(context.WithValue(ctx, searchWho{}, who.Name), who, SearchArgs{Query: "wire"})
			done <- err
		}
		for range searches {
			go search(dash)
		}
		share := postgres.LongReadsPerParty
		for range share {
			select {
			case who := <-entered:
				if who != dash.Name {
					t.Fatalf("a search of %s was held, want node-dash's", who)
				}
			case <-time.After(time.Minute):
				t.Fatalf("no search of node-dash's was let in")
			}
		}
		go search(gw)
		select {
		case who := <-entered:
			if who != gw.Name {
				t.Fatalf("with node-dash's share held, a search of %s was let in too, want mesh-gw's alone", who)
			}
		case <-time.After(time.Minute):
			t.Fatalf("mesh-gw's search was not let in while node-dash's %d searches were held and queued", searches)
		}

		sayCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := db.Say(sayCtx, fw, SayArgs{Text: "beside the searches", Channel: "fw--gw"}); err != nil {
			t.Fatalf("a say beside %d held searches: %v", held.Load(), err)
		}
		if n := held.Load(); n != int64(share+1) {
			t.Fatalf("%d searches held once the say was in, want node-dash's %d and mesh-gw's", n, share)
		}
		letGo()
		for range searches + 1 {
			if err := <-done; err != nil {
				t.Fatalf("a search: %v", err)
			}
		}
		if n := most.Load(); n > int64(share+1) {
			t.Fatalf("%d searches were held at once, over node-dash's share of %d and mesh-gw's one", n, share)
		}
	})
}

// searchWho names the party whose search a context carries, for the test
// that holds searches.
type searchWho struct{}
