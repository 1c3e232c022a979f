package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// indexRows is what an index holds, row by row: each message's id,
// channel and archived flag, and the live asks it lists.
func indexRows(t *testing.T, x *searchIndex) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	rows, err := x.db.QueryContext(ctx, `SELECT id, channel_id, archived FROM docs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, channel, archived int64
		if err := rows.Scan(&id, &channel, &archived); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d:%d:%d ", id, channel, archived)
	}
	var hits int
	if err := x.db.QueryRowContext(ctx, `SELECT count(*) FROM hits WHERE hits MATCH 'kestrel'`).Scan(&hits); err != nil {
		t.Fatal(err)
	}
	itx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer itx.Rollback()
	live, err := x.liveAsks(ctx, itx)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fmt.Fprintf(&b, "| %d hits | live asks %v", hits, ids)
	return b.String()
}

// freshIndex builds an index of the chat at path from nothing, in memory.
func freshIndex(t *testing.T, src reader, path string) *searchIndex {
	t.Helper()
	x, err := openIndexMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.close() })
	if err := x.catchUp(context.Background(), src, path, nil); err != nil {
		t.Fatal(err)
	}
	return x
}

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
	if err := db.sql.QueryRow(`SELECT count(*) FILTER (WHERE is_archived = 1), count(*) FILTER (WHERE is_archived = 0)
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
// finds what the chat holds, live and archived; on SQLite its index, kept
// up to date a round at a time, holds what an index built from nothing
// holds.
func TestSearchIndexCatchUpAgreesWithAFreshBuild(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		r := openRO(t, db.Path())
		c := &conversation{t: t, db: db, rng: rand.New(rand.NewPCG(25, 2))}
		for round := range 40 {
			c.round()
			if got, want := searchCounts(t, r), chatCounts(t, db); got != want {
				t.Fatalf("round %d: search found %v (all, archived, live), the chat holds %v", round, got, want)
			}
			if onPostgres(t) {
				continue
			}
			if got, want := indexRows(t, r.search.idx), indexRows(t, freshIndex(t, r, db.Path())); got != want {
				t.Fatalf("round %d: the index kept up to date holds\n%s\na fresh one\n%s", round, got, want)
			}
		}
		if arch := chatCounts(t, db)[1]; arch == 0 {
			t.Fatal("the conversation archived nothing")
		}
	})
}

// Archiving between two steps of one catch-up, and an index an earlier
// release kept up to date (it listed no live asks), end as a fresh build.
func TestSearchIndexSettlesWhatWasArchivedMeanwhile(t *testing.T) {
	db := world(t)
	ctx := context.Background()
	r := openRO(t, db.Path())
	must(t)(db.Ask(ctx, gw, AskArgs{Title: "kestrel early", Body: "kestrel", Slug: "early", Channel: "gw--dash"}))
	must(t)(db.Ask(ctx, gw, AskArgs{Title: "kestrel other", Body: "kestrel", Slug: "other", Channel: "gw--dash"}))
	bigChannel(t, db, 80, 64<<10) // more than one step
	must(t)(db.Reply(ctx, dash, "early", "kestrel late reply", ""))
	idx, err := openSearchIndex(ctx, db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer idx.close()
	s, err := idx.step(ctx, r, true, nil, "")
	if err != nil || !s.more {
		t.Fatalf("a first step indexed everything (%v): make the channel bigger", err)
	}
	archive(t, db, "early") // the item indexed, its reply not yet
	if err := idx.catchUp(ctx, r, db.Path(), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := indexRows(t, idx), indexRows(t, freshIndex(t, r, db.Path())); got != want {
		t.Fatalf("archived between steps: the index holds\n%s\na fresh one\n%s", got, want)
	}

	// An earlier release's index: no list of live asks, and an item
	// archived since it last looked.
	if _, err := idx.db.ExecContext(ctx, `DELETE FROM meta WHERE key = 'asks_hwm' OR key > ? AND key < ?`, liveAskKey, liveAskEnd); err != nil {
		t.Fatal(err)
	}
	archive(t, db, "other")
	if err := idx.catchUp(ctx, r, db.Path(), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := indexRows(t, idx), indexRows(t, freshIndex(t, r, db.Path())); got != want {
		t.Fatalf("an earlier release's index: it holds\n%s\na fresh one\n%s", got, want)
	}
}

// A build is told its progress after each step once it has run for
// ProgressAfter — zero here, so every step — ending at every message; one
// that has not run that long tells nothing; a team store has no index to
// build.
func TestSearchTellsTheProgressOfALongBuild(t *testing.T) {
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
		removeIndexFiles(db.Path() + SearchIndexSuffix)
		must(t)(openRO(t, db.Path()).Search(ctx, SearchArgs{Query: "nothing", Progress: func(p IndexProgress) { told = append(told, p) }}))
		if onPostgres(t) {
			if len(told) != 0 {
				t.Fatalf("a team store's search told %v", told)
			}
			return
		}
		var newest int64
		if err := db.sql.QueryRow(`SELECT max(id) FROM messages`).Scan(&newest); err != nil {
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

// A build of several steps ends with FTS5's segments merged, and merges
// at 4 from then on. It writes at 16, and left up to 15 segments on each
// level, every one of which each search then read: at 1M messages a
// search read 0.6 ms where the merged index reads 0.15 (docs/performance.md).
func TestSearchIndexBuildEndsMerged(t *testing.T) {
	db := world(t)
	ctx := context.Background()
	// 24 MiB: six steps of at most searchBatchBytes, six segments.
	bigChannel(t, db, 6*searchBatchBytes/(64<<10), 64<<10)
	x := freshIndex(t, openRO(t, db.Path()), db.Path())
	var automerge string
	if err := x.db.QueryRowContext(ctx, `SELECT v FROM hits_config WHERE k = 'automerge'`).Scan(&automerge); err != nil {
		t.Fatal(err)
	}
	var segments int
	if err := x.db.QueryRowContext(ctx, `SELECT count(DISTINCT segid) FROM hits_idx`).Scan(&segments); err != nil {
		t.Fatal(err)
	}
	if automerge != "4" || segments >= 4 {
		t.Fatalf("after a build the index merges at %s and holds %d segments, want 4 and fewer than 4", automerge, segments)
	}
}

// indexedUpTo is the newest message the index of the chat at path holds,
// read from its file as another process would.
func indexedUpTo(t *testing.T, path string) int64 {
	t.Helper()
	x, err := openIndexFile(context.Background(), path+SearchIndexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	defer x.close()
	m, err := x.readMark(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return m.id
}

// A handle that searched keeps its index up to date without a search: a
// peer's write is indexed within moments, so that the next search finds
// nothing new to index. Once the handle is closed, or has not searched
// for keepFor, nothing writes the index any more.
func TestSearchIndexKeptUpAfterAPeersWrite(t *testing.T) {
	defer func(every, keep time.Duration) { keepEvery, keepFor = every, keep }(keepEvery, keepFor)
	keepEvery, keepFor = 20*time.Millisecond, time.Hour
	db := world(t)
	ctx := context.Background()
	r := openRO(t, db.Path())
	must(t)(r.Search(ctx, SearchArgs{Query: "kestrel"}))
	must(t)(db.Say(ctx, dash, SayArgs{Text: "a kestrel over the field", Channel: "gw--dash"}))
	var newest int64
	if err := db.sql.QueryRow(`SELECT max(id) FROM messages`).Scan(&newest); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for indexedUpTo(t, db.Path()) < newest {
		if time.Now().After(deadline) {
			t.Fatalf("the index holds up to #%d 20 s after the peer's write of #%d, with no search", indexedUpTo(t, db.Path()), newest)
		}
		time.Sleep(20 * time.Millisecond)
	}

	r.Close()
	must(t)(db.Say(ctx, dash, SayArgs{Text: "after the close", Channel: "gw--dash"}))
	time.Sleep(300 * time.Millisecond) // fifteen of the keeper's looks
	if got := indexedUpTo(t, db.Path()); got != newest {
		t.Fatalf("the index moved to #%d after its handle was closed", got)
	}

	keepFor = 0 // every search is too long ago
	r = openRO(t, db.Path())
	must(t)(r.Search(ctx, SearchArgs{Query: "kestrel"}))
	held := indexedUpTo(t, db.Path())
	must(t)(db.Say(ctx, dash, SayArgs{Text: "long after the last search", Channel: "gw--dash"}))
	time.Sleep(300 * time.Millisecond)
	if got := indexedUpTo(t, db.Path()); got != held {
		t.Fatalf("the index moved from #%d to #%d with no search within keepFor", held, got)
	}
}

// A keeper whose index file was deleted (or replaced) stops and closes
// it: it kept the deleted files open, and wrote them at every commit, for
// up to keepFor (10 minutes). The next search makes the index anew.
func TestSearchKeeperLetsGoOfADeletedIndex(t *testing.T) {
	defer func(every, keep time.Duration) { keepEvery, keepFor = every, keep }(keepEvery, keepFor)
	keepEvery, keepFor = 20*time.Millisecond, time.Hour
	db := world(t)
	ctx := context.Background()
	r := openRO(t, db.Path())
	must(t)(r.Search(ctx, SearchArgs{Query: "kestrel"}))
	index := db.Path() + SearchIndexSuffix
	if held := openFilesNamed(t, index); held == 0 {
		t.Skip("cannot see this process's open files here")
	}
	removeIndexFiles(index)
	must(t)(db.Say(ctx, dash, SayArgs{Text: "a kestrel over the field", Channel: "gw--dash"}))
	for deadline := time.Now().Add(20 * time.Second); openFilesNamed(t, index) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("20 s after its index file was deleted, the keeper holds %d of its files open", openFilesNamed(t, index))
		}
	}
	r.search.mu.Lock()
	kept := r.search.stop != nil
	r.search.mu.Unlock()
	if kept {
		t.Fatal("the keeper of a deleted index runs on")
	}
	if _, err := os.Lstat(index); err == nil {
		t.Fatal("the keeper made the index anew without a search")
	}
	res, err := r.Search(ctx, SearchArgs{Query: "kestrel"})
	if err != nil || res.Total != 1 {
		t.Fatalf("the next search: %d hits, %v", res.Total, err)
	}
}

// openFilesNamed counts this process's descriptors open on path or on
// the files beside it (-wal, -shm), deleted or not; 0 where /proc is not.
func openFilesNamed(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, path) {
			n++
		}
	}
	return n
}
