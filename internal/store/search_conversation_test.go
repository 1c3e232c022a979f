package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"
)

// conversation plays a random conversation in gw--dash, a round at a time:
// says, items, replies (to items, says and replies) and items taken to the
// archive, every text holding the word kestrel.
type conversation struct {
	t      *testing.T
	db     *DB
	rng    *rand.Rand
	n      int
	open   []string // items not archived, by slug
	thread []string // what a reply may answer: slugs and #seqs
}

func (c *conversation) round() {
	ctx := context.Background()
	for range 1 + c.rng.IntN(6) {
		c.n++
		switch op := c.rng.IntN(10); {
		case op < 3:
			r := must2[SayResult](c.t)(c.db.Say(ctx, dash, SayArgs{Text: fmt.Sprintf("kestrel say %d", c.n), Channel: "gw--dash"}))
			c.thread = append(c.thread, fmt.Sprintf("#%d", r.Seq))
		case op < 5:
			slug := fmt.Sprintf("k-%d", c.n)
			must(c.t)(c.db.Ask(ctx, gw, AskArgs{Title: fmt.Sprintf("kestrel item %d", c.n), Body: "kestrel body", Slug: slug, Channel: "gw--dash"}))
			c.open = append(c.open, slug)
			c.thread = append(c.thread, slug)
		case op < 8 && len(c.thread) > 0:
			to := c.thread[c.rng.IntN(len(c.thread))]
			r, err := c.db.Reply(ctx, dash, to, fmt.Sprintf("kestrel reply %d", c.n), "gw--dash")
			if err == nil {
				c.thread = append(c.thread, fmt.Sprintf("#%d", r.Seq))
			}
		case len(c.open) > 0:
			i := c.rng.IntN(len(c.open))
			slug := c.open[i]
			c.open = slices.Delete(c.open, i, i+1)
			archive(c.t, c.db, slug)
		}
	}
}

// archive takes gw's item slug in gw--dash to the archive.
func archive(t *testing.T, db *DB, slug string) {
	t.Helper()
	ctx := context.Background()
	must(t)(db.Resolve(ctx, gw, slug, "", false, ""))
	must(t)(db.PruneOK(ctx, gw, slug, ""))
	must(t)(db.PruneOK(ctx, dash, slug, ""))
}

// chatCounts counts the searchable rows (every text holds kestrel; events
// are not searched): all, archived, live.
func chatCounts(t *testing.T, db *DB) [3]int {
	t.Helper()
	var archived, live int
	if err := rawSQL(db).QueryRow(`SELECT count(*) FILTER (WHERE is_archived = 1), count(*) FILTER (WHERE is_archived = 0)
		FROM messages WHERE kind <> 'event'`).Scan(&archived, &live); err != nil {
		t.Fatal(err)
	}
	return [3]int{archived + live, archived, live}
}

func searchCounts(t *testing.T, r *ReadOnly) [3]int {
	t.Helper()
	var out [3]int
	for i, archived := range []*bool{nil, ptr(true), ptr(false)} {
		out[i] = must2[SearchResult](t)(r.Search(context.Background(), SearchArgs{Query: "kestrel", Archived: archived})).Total
	}
	return out
}

// A search after each round of a conversation in which items are archived
// finds what the chat holds, live and archived. (On SQLite its index, kept
// up to date a round at a time, also holds what an index built from
// nothing holds: sqlite's TestSearchIndexCatchUpAgreesWithAFreshBuild.)
func TestSearchFindsWhatTheChatHoldsThroughAConversation(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		r := openRO(t, db.Path())
		c := &conversation{t: t, db: db, rng: rand.New(rand.NewPCG(25, 2))}
		for round := range 40 {
			c.round()
			if got, want := searchCounts(t, r), chatCounts(t, db); got != want {
				t.Fatalf("round %d: search found %v (all, archived, live), the chat holds %v", round, got, want)
			}
		}
		if arch := chatCounts(t, db)[1]; arch == 0 {
			t.Fatal("the conversation archived nothing")
		}
	})
}

// A build is told its progress after each step once it has run for
// ProgressAfter — zero here, so every step — ending at every message; one
// that has not run that long tells nothing; a team store has no index to
// build.
func TestSearchTellsTheProgressOfALongBuild(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		bigChannel(t, db, 80, 64<<10)
		var never, told []IndexProgress
		r := openRO(t, db.Path())
		must(t)(r.Search(ctx, SearchArgs{Query: "nothing", ProgressAfter: time.Hour, Progress: func(p IndexProgress) { never = append(never, p) }}))
		if len(never) != 0 {
			t.Fatalf("a build shorter than an hour told %v", never)
		}
		r.Close()
		for _, f := range []string{"", "-wal", "-shm", "-journal"} {
			os.Remove(db.Path() + SearchIndexSuffix + f)
		}
		must(t)(openRO(t, db.Path()).Search(ctx, SearchArgs{Query: "nothing", Progress: func(p IndexProgress) { told = append(told, p) }}))
		if onPostgres(t) {
			if len(told) != 0 {
				t.Fatalf("a team store's search told %v", told)
			}
			return
		}
		var newest int64
		if err := rawSQL(db).QueryRow(`SELECT max(id) FROM messages`).Scan(&newest); err != nil {
			t.Fatal(err)
		}
		if len(told) < 2 || told[len(told)-1] != (IndexProgress{Done: newest, Total: newest}) {
			t.Fatalf("a build of %d messages in several steps told %v", newest, told)
		}
		for i := 1; i < len(told); i++ {
			if told[i].Done <= told[i-1].Done {
				t.Fatalf("progress went back: %v", told)
			}
		}
	})
}
