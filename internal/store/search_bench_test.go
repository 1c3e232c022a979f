package store

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3/driver"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

// BenchmarkSearch is a person's search (the read-only handle, every
// channel) on the benchmark conversation with 100,000 settled messages,
// the index up to date:
//
//	go test ./internal/store -run '^$' -bench 'Search$' -benchtime 200x
//
// for a word in one message, in about one in ten (the settled questions)
// and in four in ten (the chatter). Each reports its p50. What bringing the
// index up to date costs is BenchmarkSearchIndex's.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	template := seedTemplate(b, b.TempDir(), 100_000)
	db := seededCopy(b, template)
	r, err := OpenReadOnly(ctx, db.Path())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Search(ctx, SearchArgs{Query: "warm"}); err != nil {
		b.Fatal(err)
	}
	for _, q := range []struct{ name, query string }{
		{"one-hit", `"status 50000"`},
		{"tenth", "wire format"},
		{"four-tenths", "migration"},
	} {
		b.Run(fmt.Sprintf("%s/100k", q.name), func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := r.Search(ctx, SearchArgs{Query: q.query})
				took = append(took, time.Since(start))
				if err != nil || res.Total == 0 {
					b.Fatalf("%s: %v, %d hits", q.query, err, res.Total)
				}
			}
			reportP50(b, took)
		})
	}
}

// reportP50 adds the median of the runs to the benchmark's line.
func reportP50(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkSearchIndex is what bringing the index up to date costs at
// 10k, 100k and (with MCPP_CHAT_BENCH_1M=1: seeding it takes minutes and
// 300 MB) 1M messages of history, the benchmark conversation:
//
//	MCPP_CHAT_BENCH_1M=1 go test ./internal/store -run '^$' -bench 'SearchIndex/build' -benchtime 3x -timeout 60m
//	MCPP_CHAT_BENCH_1M=1 go test ./internal/store -run '^$' -bench 'SearchIndex/(nothing-new|after-a-write)' -benchtime 200x -timeout 60m
//	MCPP_CHAT_BENCH_1M=1 go test ./internal/store -run '^$' -bench 'SearchIndex/(nothing-new-after-a-pause|a-moment-after-a-write)' -benchtime 60x -timeout 60m
//
// (three commands: each build run builds the whole index, seconds apiece,
// and the last two pause between searches).
// build: the first search, which indexes the whole history (a copy of the
// database without an index each time); nothing-new: a search when
// nothing was written since the last, back to back; after-a-write: a
// search right after a peer's say, which indexes it and settles what was
// archived; nothing-new-after-a-pause and a-moment-after-a-write: the
// same two with searchPause before each search, in which the handle's
// keeper indexes the peer's say. Each searches for a phrase in one
// message and reports its p50.
func BenchmarkSearchIndex(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	sizes := []int{10_000, 100_000}
	if os.Getenv("MCPP_CHAT_BENCH_1M") == "1" {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		name := fmt.Sprintf("%dk", n/1000)
		if n >= 1_000_000 {
			name = fmt.Sprintf("%dM", n/1_000_000)
		}
		var template string
		seed := func(b *testing.B) string {
			if template == "" {
				template = seedTemplate(b, dir, n)
			}
			return template
		}
		b.Run("build/"+name, func(b *testing.B) {
			tmpl := seed(b)
			var took []time.Duration
			for b.Loop() {
				b.StopTimer()
				db := seededCopy(b, tmpl)
				r, err := OpenReadOnly(ctx, db.Path())
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				if _, err := r.Search(ctx, SearchArgs{Query: "wire"}); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				b.StopTimer()
				r.Close()
				db.Close()
				os.Remove(db.Path() + SearchIndexSuffix)
				b.StartTimer()
			}
			reportP50(b, took)
		})
		var db *DB
		var r *ReadOnly
		parent := b
		indexed := func(b *testing.B) (*DB, *ReadOnly) {
			if r == nil {
				db = seededCopy(parent, seed(b))
				var err error
				if r, err = OpenReadOnly(ctx, db.Path()); err != nil {
					b.Fatal(err)
				}
				if _, err := db.Say(ctx, seedParties(10)[0], SayArgs{Channel: "ch-00", Text: "pelican 0"}); err != nil {
					b.Fatal(err)
				}
				if _, err := r.Search(ctx, SearchArgs{Query: "warm"}); err != nil {
					b.Fatal(err)
				}
			}
			return db, r
		}
		b.Run("nothing-new/"+name, func(b *testing.B) {
			_, r := indexed(b)
			searchNothingNew(b, r, 0)
		})
		b.Run("after-a-write/"+name, func(b *testing.B) {
			db, r := indexed(b)
			searchAfterWrites(b, db, r, "pelican", 0)
		})
		b.Run("nothing-new-after-a-pause/"+name, func(b *testing.B) {
			_, r := indexed(b)
			searchNothingNew(b, r, searchPause)
		})
		b.Run("a-moment-after-a-write/"+name, func(b *testing.B) {
			db, r := indexed(b)
			searchAfterWrites(b, db, r, "heron", searchPause)
		})
		if r != nil {
			r.Close()
		}
	}
}

// searchNothingNew times r's searches for the phrase a peer said before
// the index was made, each after pause.
func searchNothingNew(b *testing.B, r *ReadOnly, pause time.Duration) {
	ctx := context.Background()
	var took []time.Duration
	for b.Loop() {
		b.StopTimer()
		time.Sleep(pause)
		b.StartTimer()
		start := time.Now()
		res, err := r.Search(ctx, SearchArgs{Query: `"pelican 0"`})
		took = append(took, time.Since(start))
		if err != nil || res.Total != 1 {
			b.Fatalf("pelican 0: %v, %d hits", err, res.Total)
		}
	}
	reportP50(b, took)
}

// searchAfterWrites times r's search for what a peer just said on db,
// "word N": at once, or, given a pause, once the keeper of r's index has
// indexed it and pause has passed since the say.
func searchAfterWrites(b *testing.B, db *DB, r *ReadOnly, word string, pause time.Duration) {
	ctx := context.Background()
	peer := seedParties(10)[0]
	var took []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		said := time.Now()
		if _, err := db.Say(ctx, peer, SayArgs{Channel: "ch-00", Text: fmt.Sprintf("%s %d", word, i)}); err != nil {
			b.Fatal(err)
		}
		if pause > 0 {
			waitIndexed(b, db)
			time.Sleep(pause - time.Since(said))
		}
		b.StartTimer()
		start := time.Now()
		res, err := r.Search(ctx, SearchArgs{Query: fmt.Sprintf(`"%s %d"`, word, i)})
		took = append(took, time.Since(start))
		if err != nil || res.Total != 1 {
			b.Fatalf("%s %d: %v, %d hits", word, i, err, res.Total)
		}
	}
	reportP50(b, took)
}

// searchPause is the time between a peer's write and the search in
// a-moment-after-a-write, and between two searches in
// nothing-new-after-a-pause: a session woken by a peer takes far longer
// to search, but a pause of any length leaves the processor's caches
// cold, which a loop of searches back to back never sees.
const searchPause = 300 * time.Millisecond

// waitIndexed waits until the keeper of db's index holds db's newest
// message, as it does a moment after a peer's write in a process that
// searched lately (searchHolder.keepUp). It reads the index's mark on a
// read-only connection of its own, which changes nothing in the file.
func waitIndexed(b *testing.B, db *DB) {
	b.Helper()
	var newest int64
	if err := rawSQL(db).QueryRow(`SELECT max(id) FROM messages`).Scan(&newest); err != nil {
		b.Fatal(err)
	}
	ix, err := driver.Open("file:" + db.Path() + SearchIndexSuffix + "?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		var hwm int64
		if err := ix.QueryRow(`SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'hwm'`).Scan(&hwm); err != nil {
			b.Fatal(err)
		}
		if hwm >= newest {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the index holds up to #%d a minute after #%d was written", hwm, newest)
		}
	}
}

// BenchmarkSearchPostgres is the same two searches on a team store, which
// keeps no index of its own beside the database (PostgreSQL's GIN index is
// kept by every write):
//
//	MCPP_CHAT_PG_REQUIRE=1 go test ./internal/store -run '^$' -bench 'SearchPostgres' -benchtime 200x -timeout 60m
//
// nothing-new: a search when nothing was written since the last;
// after-a-write: right after a peer's say.
func BenchmarkSearchPostgres(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	for _, n := range []int{10_000, 100_000} {
		name := fmt.Sprintf("%dk", n/1000)
		template := seedTemplate(b, dir, n)
		src, err := OpenReadOnly(ctx, template)
		if err != nil {
			b.Fatal(err)
		}
		db, err := OpenPostgres(ctx, pgtest.URL(b), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := CopyTo(ctx, src, db); err != nil {
			b.Fatal(err)
		}
		src.Close()
		r, err := OpenReadOnlyPostgres(ctx, db.Path())
		if err != nil {
			b.Fatal(err)
		}
		b.Run("nothing-new/"+name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := r.Search(ctx, SearchArgs{Query: `"pelican 0"`}); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			reportP50(b, took)
		})
		b.Run("after-a-write/"+name, func(b *testing.B) {
			searchAfterWrites(b, db, r, "pelican", 0)
		})
		r.Close()
		db.Close()
	}
}

// BenchmarkSayBesideSearches is one party's say in a channel of its own
// while another party runs 30 searches at once, each starting again as it
// ends, on a team store holding the benchmark conversation at 100k:
//
//	MCPP_CHAT_PG_REQUIRE=1 go test ./internal/store -run '^$' -bench SayBesideSearches -benchtime 40x
//
// It reports the say's p50, p95 and slowest, and the searches finished
// per second beside them. The searches look for a word in four messages
// of ten in the searcher's channels, a slow search on purpose.
func BenchmarkSayBesideSearches(b *testing.B) {
	ctx := context.Background()
	template := seedTemplate(b, b.TempDir(), 100_000)
	src, err := OpenReadOnly(ctx, template)
	if err != nil {
		b.Fatal(err)
	}
	db, err := OpenPostgres(ctx, pgtest.URL(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := CopyTo(ctx, src, db); err != nil {
		b.Fatal(err)
	}
	src.Close()
	parties := seedParties(10)
	searcher, sayer := parties[0], parties[5]
	if _, err := db.ChannelNew(ctx, sayer, "aside", "", []string{parties[6].Name}); err != nil {
		b.Fatal(err)
	}
	const searchers = 30
	stop := make(chan struct{})
	var searched atomic.Int64
	var wg sync.WaitGroup
	for range searchers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := db.Search(ctx, searcher, SearchArgs{Query: "migration"}); err != nil {
					b.Error(err)
					return
				}
				searched.Add(1)
			}
		})
	}
	for searched.Load() == 0 { // the searches are under way
		time.Sleep(10 * time.Millisecond)
	}
	var took []time.Duration
	start, before := time.Now(), searched.Load()
	for b.Loop() {
		t0 := time.Now()
		if _, err := db.Say(ctx, sayer, SayArgs{Text: "beside the searches", Channel: "aside"}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(t0))
	}
	rate := float64(searched.Load()-before) / time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "say-p50-ms")
	b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "say-p95-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "say-max-ms")
	b.ReportMetric(rate, "searches/s")
}
