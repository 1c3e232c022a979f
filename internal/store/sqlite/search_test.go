package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/store/sqlite"
)

// The search index's own rules, seen through the chat (package store)
// driving it: kept up to date it holds what a fresh build holds, it settles
// what was archived between its steps, a step reads a bounded batch, a
// build ends merged, and its keeper follows a peer's writes and lets go.

var (
	gw   = store.Identity{Name: "mesh-gw", Workspace: "/srv/mesh-gw"}
	dash = store.Identity{Name: "node-dash", Workspace: "/srv/node-dash"}
)

// world is a chat in a temporary folder with mesh-gw and node-dash in
// gw--dash, and its engine's handle for looking under it.
func world(t *testing.T) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, id := range []store.Identity{gw, dash} {
		must(t)(db.Register(ctx, id))
	}
	must(t)(db.ChannelNew(ctx, gw, "gw--dash", "", []string{"node-dash"}))
	return db
}

// openRO is the person's read-only handle on the chat at path, and the
// engine's reader under it.
func openRO(t *testing.T, path string) (*store.ReadOnly, *sqlite.Reader) {
	t.Helper()
	r, err := sqlite.OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ro := store.NewReadOnly(r)
	t.Cleanup(func() { ro.Close() })
	return ro, r
}

func must(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// index is an index a test opened, closed when the test ends.
func index(t *testing.T) func(*sqlite.Index, error) *sqlite.Index {
	return func(x *sqlite.Index, err error) *sqlite.Index {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(x.Close)
		return x
	}
}

func rows(t *testing.T, x *sqlite.Index) string {
	t.Helper()
	s, err := x.Rows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newest is the newest message of the chat at path.
func newest(t *testing.T, path string) int64 {
	t.Helper()
	_, r := openRO(t, path)
	var id int64
	if err := r.SQL().QueryRow(`SELECT coalesce(max(id), 0) FROM messages`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// bigChannel fills gw--dash with n messages of size bytes each, most
// words in every body, a few in one only.
func bigChannel(t *testing.T, db *store.DB, n, size int) {
	t.Helper()
	for i := range n {
		var b strings.Builder
		for b.Len() < size {
			fmt.Fprintf(&b, "word%d lorem%d ipsum dolor%d ", b.Len()%977, i, b.Len()%131)
		}
		must(t)(db.Say(context.Background(), gw, store.SayArgs{Text: b.String(), Channel: "gw--dash"}))
	}
}

// archive takes gw's item slug in gw--dash to the archive.
func archive(t *testing.T, db *store.DB, slug string) {
	t.Helper()
	ctx := context.Background()
	must(t)(db.Resolve(ctx, gw, slug, "", false, ""))
	must(t)(db.PruneOK(ctx, gw, slug, ""))
	must(t)(db.PruneOK(ctx, dash, slug, ""))
}

// A chat of random rounds — says, items, replies to any of them, items
// archived, every text with the word kestrel — whose index, kept up to
// date a round at a time, holds what an index built from nothing holds.
func TestSearchIndexCatchUpAgreesWithAFreshBuild(t *testing.T) {
	db := world(t)
	ctx := context.Background()
	ro, r := openRO(t, db.Path())
	rng := rand.New(rand.NewPCG(25, 2))
	var open, thread []string // items not archived; what a reply may answer
	n := 0
	for round := range 40 {
		for range 1 + rng.IntN(6) {
			n++
			switch op := rng.IntN(10); {
			case op < 3:
				res, err := db.Say(ctx, dash, store.SayArgs{Text: fmt.Sprintf("kestrel say %d", n), Channel: "gw--dash"})
				must(t)(res, err)
				thread = append(thread, fmt.Sprintf("#%d", res.Seq))
			case op < 5:
				slug := fmt.Sprintf("k-%d", n)
				must(t)(db.Ask(ctx, gw, store.AskArgs{Title: fmt.Sprintf("kestrel item %d", n), Body: "kestrel body", Slug: slug, Channel: "gw--dash"}))
				open, thread = append(open, slug), append(thread, slug)
			case op < 8 && len(thread) > 0:
				if res, err := db.Reply(ctx, dash, thread[rng.IntN(len(thread))], fmt.Sprintf("kestrel reply %d", n), "gw--dash"); err == nil {
					thread = append(thread, fmt.Sprintf("#%d", res.Seq))
				}
			case len(open) > 0:
				i := rng.IntN(len(open))
				archive(t, db, open[i])
				open = slices.Delete(open, i, i+1)
			}
		}
		must(t)(ro.Search(ctx, store.SearchArgs{Query: "kestrel"}))
		fresh := index(t)(sqlite.FreshIndex(ctx, r))
		if got, want := rows(t, sqlite.HeldIndex(r)), rows(t, fresh); got != want {
			t.Fatalf("round %d: the index kept up to date holds\n%s\na fresh one\n%s", round, got, want)
		}
	}
}

// Archiving between two steps of one catch-up, and an index an earlier
// release kept up to date (it listed no live asks), end as a fresh build.
func TestSearchIndexSettlesWhatWasArchivedMeanwhile(t *testing.T) {
	db := world(t)
	ctx := context.Background()
	_, r := openRO(t, db.Path())
	must(t)(db.Ask(ctx, gw, store.AskArgs{Title: "kestrel early", Body: "kestrel", Slug: "early", Channel: "gw--dash"}))
	must(t)(db.Ask(ctx, gw, store.AskArgs{Title: "kestrel other", Body: "kestrel", Slug: "other", Channel: "gw--dash"}))
	bigChannel(t, db, 80, 64<<10) // more than one step
	must(t)(db.Reply(ctx, dash, "early", "kestrel late reply", ""))
	idx := index(t)(sqlite.OpenIndex(ctx, db.Path()))
	if more, err := idx.Step(ctx, r, true); err != nil || !more {
		t.Fatalf("a first step indexed everything (%v): make the channel bigger", err)
	}
	archive(t, db, "early") // the item indexed, its reply not yet
	if err := idx.CatchUp(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, want := rows(t, idx), rows(t, index(t)(sqlite.FreshIndex(ctx, r))); got != want {
		t.Fatalf("archived between steps: the index holds\n%s\na fresh one\n%s", got, want)
	}

	// An earlier release's index: no list of live asks, and an item
	// archived since it last looked.
	if err := idx.ForgetLiveAsks(ctx); err != nil {
		t.Fatal(err)
	}
	archive(t, db, "other")
	if err := idx.CatchUp(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, want := rows(t, idx), rows(t, index(t)(sqlite.FreshIndex(ctx, r))); got != want {
		t.Fatalf("an earlier release's index: it holds\n%s\na fresh one\n%s", got, want)
	}
}

// One indexing step holds a bounded amount of text: it used to read up to
// 5,000 whole bodies (320 MB of 64 KiB ones) under one read snapshot.
func TestSearchIndexStepReadsABoundedBatch(t *testing.T) {
	db := world(t)
	ctx := context.Background()
	bigChannel(t, db, 200, 64<<10)
	_, r := openRO(t, db.Path())
	idx := index(t)(sqlite.OpenIndex(ctx, db.Path()))
	more, err := idx.Step(ctx, r, true)
	if err != nil {
		t.Fatal(err)
	}
	mark, err := idx.Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var read, last int64
	if err := r.SQL().QueryRow(`SELECT (SELECT coalesce(sum(length(body)), 0) FROM messages WHERE id <= ?), (SELECT max(id) FROM messages)`, mark).
		Scan(&read, &last); err != nil {
		t.Fatal(err)
	}
	if !more || mark >= last || read > sqlite.SearchBatchBytes+64<<10 {
		t.Fatalf("one step read %d bytes, up to message %d of %d (more: %v)", read, mark, last, more)
	}
	for more {
		if more, err = idx.Step(ctx, r, false); err != nil {
			t.Fatal(err)
		}
	}
	if mark, _ := idx.Mark(ctx); mark != last {
		t.Fatalf("the steps stopped at %d of %d", mark, last)
	}
}

// A build of several steps ends with FTS5's segments merged, and merges
// at 4 from then on. It writes at 16, and left up to 15 segments on each
// level, every one of which each search then read: at 1M messages a
// search read 0.6 ms where the merged index reads 0.15 (docs/performance.md).
func TestSearchIndexBuildEndsMerged(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: writes and indexes 24 MiB (seconds of disk); it runs in the full tier (make test)")
	}
	db := world(t)
	ctx := context.Background()
	// 24 MiB: six steps of at most SearchBatchBytes, six segments.
	bigChannel(t, db, 6*sqlite.SearchBatchBytes/(64<<10), 64<<10)
	_, r := openRO(t, db.Path())
	automerge, segments, err := index(t)(sqlite.FreshIndex(ctx, r)).Merging(ctx)
	if err != nil {
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
	x, err := sqlite.OpenIndex(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	mark, err := x.Mark(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return mark
}

// A handle that searched keeps its index up to date without a search: a
// peer's write is indexed within moments, so that the next search finds
// nothing new to index. Once the handle is closed, or has not searched
// for keepFor, nothing writes the index any more.
func TestSearchIndexKeptUpAfterAPeersWrite(t *testing.T) {
	defer sqlite.SetKeeper(20*time.Millisecond, time.Hour)()
	db := world(t)
	ctx := context.Background()
	others := keepers()
	ro, r := openRO(t, db.Path())
	must(t)(ro.Search(ctx, store.SearchArgs{Query: "kestrel"}))
	must(t)(db.Say(ctx, dash, store.SayArgs{Text: "a kestrel over the field", Channel: "gw--dash"}))
	last := newest(t, db.Path())
	deadline := time.Now().Add(20 * time.Second)
	for indexedUpTo(t, db.Path()) < last {
		if time.Now().After(deadline) {
			t.Fatalf("the index holds up to #%d 20 s after the peer's write of #%d, with no search", indexedUpTo(t, db.Path()), last)
		}
		time.Sleep(20 * time.Millisecond)
	}

	if !r.Keeping() || keepers() != others+1 {
		t.Fatalf("no keeper runs for the handle that searched (%d keepers, %d before it)", keepers(), others)
	}
	ro.Close()
	// Close waited for the keeper to end: none is left to write the index.
	if n := keepers(); n != others {
		t.Fatalf("%d keepers run after their handle was closed, %d before it searched", n, others)
	}
	must(t)(db.Say(ctx, dash, store.SayArgs{Text: "after the close", Channel: "gw--dash"}))
	if got := indexedUpTo(t, db.Path()); got != last {
		t.Fatalf("the index moved to #%d after its handle was closed", got)
	}

	sqlite.SetKeepFor(0) // every search is too long ago
	ro, r = openRO(t, db.Path())
	must(t)(ro.Search(ctx, store.SearchArgs{Query: "kestrel"}))
	held := indexedUpTo(t, db.Path())
	must(t)(db.Say(ctx, dash, store.SayArgs{Text: "long after the last search", Channel: "gw--dash"}))
	// The keeper ends at its first look, before it catches up; only it
	// says it stopped (the handle is still open).
	for deadline := time.Now().Add(20 * time.Second); r.Keeping(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the keeper runs on 20 s after a search that was too long ago")
		}
	}
	if got := indexedUpTo(t, db.Path()); got != held {
		t.Fatalf("the index moved from #%d to #%d with no search within keepFor", held, got)
	}
}

// keepers is how many keepers of a search index run in this process: the
// goroutines in keepUp.
func keepers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), ".(*searchHolder).keepUp(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// A keeper whose index file was deleted (or replaced) stops and closes
// it: it kept the deleted files open, and wrote them at every commit, for
// up to keepFor (10 minutes). The next search makes the index anew.
func TestSearchKeeperLetsGoOfADeletedIndex(t *testing.T) {
	defer sqlite.SetKeeper(20*time.Millisecond, time.Hour)()
	db := world(t)
	ctx := context.Background()
	ro, r := openRO(t, db.Path())
	must(t)(ro.Search(ctx, store.SearchArgs{Query: "kestrel"}))
	file := db.Path() + store.SearchIndexSuffix
	if held := openFilesNamed(t, file); held == 0 {
		t.Skip("cannot see this process's open files here")
	}
	sqlite.RemoveIndexFiles(file)
	must(t)(db.Say(ctx, dash, store.SayArgs{Text: "a kestrel over the field", Channel: "gw--dash"}))
	for deadline := time.Now().Add(20 * time.Second); openFilesNamed(t, file) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("20 s after its index file was deleted, the keeper holds %d of its files open", openFilesNamed(t, file))
		}
	}
	if r.Keeping() {
		t.Fatal("the keeper of a deleted index runs on")
	}
	if _, err := os.Lstat(file); err == nil {
		t.Fatal("the keeper made the index anew without a search")
	}
	res, err := ro.Search(ctx, store.SearchArgs{Query: "kestrel"})
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
