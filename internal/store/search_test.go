package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/store/fulltext"
)

func ptr[T any](v T) *T { return &v }

// archivedItem raises an item in gw--dash and takes it through to the
// archive.
func archivedItem(t *testing.T, db *DB, slug, title, body string) {
	t.Helper()
	ctx := context.Background()
	must(t)(db.Ask(ctx, gw, AskArgs{Title: title, Body: body, Slug: slug, Channel: "gw--dash"}))
	must(t)(db.Reply(ctx, dash, slug, "answered: "+body, ""))
	must(t)(db.Resolve(ctx, gw, slug, "", false, ""))
	must(t)(db.PruneOK(ctx, gw, slug, ""))
	must(t)(db.PruneOK(ctx, dash, slug, ""))
}

func hitSeqs(r SearchResult) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, fmt.Sprintf("%s#%d", h.Channel, h.Seq))
	}
	return out
}

func TestSearchFindsBodiesTitlesAndSlugsRanked(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Say(ctx, gw, SayArgs{Text: "the bench firmware mentions a baud rate once", Channel: "gw--dash"}))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "What baud does the bench UART use?", Body: "I see garbage at 115200.", Slug: "uart-baud", Channel: "gw--dash"}))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Is the chunk header enum closed?", Body: "I need FRAME_AUX.", Slug: "chunk-api", Channel: "gw--dash"}))
		r := openRO(t, db.Path())

		got := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: "baud"}))
		if got.Total != 2 || len(got.Hits) != 2 || got.Hits[0].Slug != "uart-baud" {
			t.Fatalf("baud: the item whose title says it ranks first: %+v", got)
		}
		if h := got.Hits[0]; h.Channel != "gw--dash" || h.Seq != 2 || h.Kind != "ask" || h.From != "mesh-gw" || h.Status != "open" {
			t.Fatalf("hit = %+v", h)
		}
		if s := got.Hits[1].Snippet; !strings.Contains(s, MarkStart+"baud"+MarkEnd) {
			t.Fatalf("snippet %q does not mark the word", s)
		}
		if got := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: "chunk-api"})); len(got.Hits) != 1 || got.Hits[0].Slug != "chunk-api" {
			t.Fatalf("by slug: %+v", got)
		}
		if got := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: `"header enum"`})); len(got.Hits) != 1 {
			t.Fatalf("phrase: %+v", got)
		}
		if got := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: "garb*"})); len(got.Hits) != 1 {
			t.Fatalf("prefix: %+v", got)
		}
		if got := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: "baud nothing-like-this"})); len(got.Hits) != 0 {
			t.Fatalf("every word must appear: %+v", got)
		}
		// FTS5's own syntax is plain words here, never an error.
		for _, q := range []string{`NEAR(a b)`, `body: x`, `- OR AND`, `"unclosed`, `a"b"c`, `^x`} {
			if _, err := r.Search(ctx, SearchArgs{Query: q}); err != nil {
				t.Errorf("%q: %v", q, err)
			}
		}
		_, err := r.Search(ctx, SearchArgs{Query: " *** - "})
		refused(t, err, "no word to look for")
	})
}

func TestSearchLiveAndArchived(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		archivedItem(t, db, "old-cache", "Where is the cache flushed?", "the zeppelin flush happens at shutdown")
		must(t)(db.Say(ctx, gw, SayArgs{Text: "zeppelin again, live this time", Channel: "gw--dash"}))
		r := openRO(t, db.Path())
		all := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: "zeppelin"}))
		if all.Total != 3 {
			t.Fatalf("both live and archived: %v", hitSeqs(all))
		}
		arch := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: "zeppelin", Archived: ptr(true)}))
		if arch.Total != 2 || !arch.Hits[0].Archived || !arch.Hits[1].Archived {
			t.Fatalf("archived only (the item and its reply): %+v", arch)
		}
		live := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: "zeppelin", Archived: ptr(false)}))
		if live.Total != 1 || live.Hits[0].Archived || live.Hits[0].Kind != "say" {
			t.Fatalf("live only: %+v", live)
		}
	})
}

// Archiving after the index was made is seen by the next search.
func TestSearchSeesArchivingAfterIndexing(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Quokka question", Body: "b", Slug: "quokka", Channel: "gw--dash"}))
		r := openRO(t, db.Path())
		if got := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: "quokka", Archived: ptr(true)})); got.Total != 0 {
			t.Fatalf("not archived yet: %+v", got)
		}
		must(t)(db.Resolve(ctx, gw, "quokka", "", false, ""))
		must(t)(db.PruneOK(ctx, gw, "quokka", ""))
		must(t)(db.PruneOK(ctx, dash, "quokka", ""))
		got := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: "quokka", Archived: ptr(true)}))
		if got.Total != 1 || !got.Hits[0].Archived || got.Hits[0].Status != "done" {
			t.Fatalf("archived since: %+v", got)
		}
	})
}

func TestAgentSearchSeesOnlyItsChannels(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelNew(ctx, fw, "fw-only", "", []string{"mesh-gw"}))
		must(t)(db.Say(ctx, fw, SayArgs{Text: "walrus in the firmware channel", Channel: "fw-only"}))
		must(t)(db.Say(ctx, gw, SayArgs{Text: "walrus in the dashboard channel", Channel: "gw--dash"}))

		mine := must2[SearchResult](t)(db.Search(ctx, dash, SearchArgs{Query: "walrus"}))
		if mine.Total != 1 || mine.Hits[0].Channel != "gw--dash" {
			t.Fatalf("node-dash sits in gw--dash only: %v", hitSeqs(mine))
		}
		both := must2[SearchResult](t)(db.Search(ctx, gw, SearchArgs{Query: "walrus"}))
		if both.Total != 2 {
			t.Fatalf("mesh-gw sits in both: %v", hitSeqs(both))
		}
		_, err := db.Search(ctx, dash, SearchArgs{Query: "walrus", Channel: "fw-only"})
		refused(t, err, "chat_channel_join")
		one := must2[SearchResult](t)(db.Search(ctx, gw, SearchArgs{Query: "walrus", Channel: "fw-only"}))
		if one.Total != 1 || one.Hits[0].Channel != "fw-only" {
			t.Fatalf("one channel: %v", hitSeqs(one))
		}
	})
}

func TestSearchPagesWithSkipAndLimit(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		for i := range 7 {
			must(t)(db.Say(ctx, gw, SayArgs{Text: fmt.Sprintf("ocelot number %d", i), Channel: "gw--dash"}))
		}
		r := openRO(t, db.Path())
		seen := map[string]bool{}
		for skip := 0; skip < 7; skip += 3 {
			page := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: "ocelot", Limit: 3, Skip: skip}))
			if page.Total != 7 || len(page.Hits) != min(3, 7-skip) {
				t.Fatalf("skip %d: %+v", skip, page)
			}
			for _, s := range hitSeqs(page) {
				if seen[s] {
					t.Fatalf("%s on two pages", s)
				}
				seen[s] = true
			}
		}
	})
}

// The index is a file of its own beside the database, owner-only; a
// corrupt one is made anew, and one of another database is rebuilt.
func TestSearchIndexIsRebuiltWhenBrokenOrForeign(t *testing.T) {
	t.Parallel()
	db := world(t)
	ctx := context.Background()
	must(t)(db.Say(ctx, gw, SayArgs{Text: "armadillo", Channel: "gw--dash"}))
	r := openRO(t, db.Path())
	must(t)(r.Search(ctx, SearchArgs{Query: "armadillo"}))
	index := db.Path() + SearchIndexSuffix
	info, err := os.Stat(index)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("index %s: %v %v", index, info, err)
	}
	r.Close()

	os.WriteFile(index, []byte(strings.Repeat("not an index ", 100)), 0o600)
	os.Remove(index + "-wal")
	os.Remove(index + "-shm")
	r2 := openRO(t, db.Path())
	if got := must2[SearchResult](t)(r2.Search(ctx, SearchArgs{Query: "armadillo"})); got.Total != 1 {
		t.Fatalf("after corruption: %+v", got)
	}
	r2.Close()

	// Another database under the same index: its messages, not the old ones.
	other := openTest(t)
	for _, id := range []Identity{gw, dash} {
		must(t)(other.Register(ctx, id))
	}
	must(t)(other.ChannelNew(ctx, gw, "elsewhere", "", []string{"node-dash"}))
	must(t)(other.Say(ctx, gw, SayArgs{Text: "badger", Channel: "elsewhere"}))
	data, _ := os.ReadFile(index)
	os.WriteFile(other.Path()+SearchIndexSuffix, data, 0o600)
	r3 := openRO(t, other.Path())
	if got := must2[SearchResult](t)(r3.Search(ctx, SearchArgs{Query: "armadillo"})); got.Total != 0 {
		t.Fatalf("a foreign index was trusted: %+v", got)
	}
	if got := must2[SearchResult](t)(r3.Search(ctx, SearchArgs{Query: "badger"})); got.Total != 1 {
		t.Fatalf("foreign index not rebuilt: %+v", got)
	}
}

// Several searchers at once, while a writer writes: every one finds every
// message written before it started, and the index holds each once.
func TestConcurrentSearchesWhileWriting(t *testing.T) {
	t.Parallel()
	db := world(t)
	ctx := context.Background()
	for i := range 300 {
		must(t)(db.Say(ctx, gw, SayArgs{Text: fmt.Sprintf("heron %d", i), Channel: "gw--dash"}))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := OpenReadOnly(ctx, db.Path())
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			got, err := r.Search(ctx, SearchArgs{Query: "heron"})
			if err == nil && got.Total < 300 {
				err = fmt.Errorf("found %d of at least 300", got.Total)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	for i := range 50 {
		must(t)(db.Say(ctx, gw, SayArgs{Text: fmt.Sprintf("heron late %d", i), Channel: "gw--dash"}))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := must2[SearchResult](t)(openRO(t, db.Path()).Search(ctx, SearchArgs{Query: "heron"}))
	if got.Total != 350 {
		t.Fatalf("total = %d, want each of 350 once", got.Total)
	}
}

// numbered is n words, prefix1 … prefixN, each followed by suffix.
func numbered(prefix string, n int, suffix string) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("%s%d%s", prefix, i+1, suffix)
	}
	return strings.Join(words, " ")
}

// A search looks for at most fulltext.MaxTerms terms in at most
// fulltext.MaxChars characters, the same on both engines, for an agent and a
// person alike: 5,000 prefixes failed inside PostgreSQL with "stack depth
// limit exceeded".
func TestSearchBoundsWhatItLooksFor(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		phrase := numbered("p", 221, "")
		if n := len(phrase) + 2; n > fulltext.MaxChars || n < fulltext.MaxChars-10 {
			t.Fatalf("the phrase is %d characters with its quotes; make it just fit", n)
		}
		must(t)(db.Say(ctx, gw, SayArgs{Text: numbered("w", 64, "") + " " + phrase, Channel: "gw--dash"}))
		r := openRO(t, db.Path())
		for q, want := range map[string]string{
			numbered("w", 5000, "*"):                   "characters long, and at most 1000 are looked for — search for the few words",
			numbered("w", 65, ""):                      "has 65 words, and at most 64 are looked for at once — search for the few",
			strings.Repeat("x", fulltext.MaxChars+1):   "at most 1000 are looked for",
			`"` + phrase + `" ` + numbered("w", 4, ""): "at most 1000 are looked for",
		} {
			_, err := db.Search(ctx, gw, SearchArgs{Query: q})
			refused(t, err, want)
			_, err = r.Search(ctx, SearchArgs{Query: q})
			refused(t, err, want)
		}
		for _, q := range []string{numbered("w", 64, "*"), `"` + phrase + `"`} {
			if got := must2[SearchResult](t)(r.Search(ctx, SearchArgs{Query: q})); got.Total != 1 {
				t.Fatalf("%.40q…: %+v", q, got)
			}
			if got := must2[SearchResult](t)(db.Search(ctx, gw, SearchArgs{Query: q})); got.Total != 1 {
				t.Fatalf("%.40q… as an agent: %+v", q, got)
			}
		}
	})
}
