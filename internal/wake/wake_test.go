package wake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// generous bounds a wait that should end in milliseconds; it only fails a
// test when the thing never happens.
const generous = 10 * time.Second

func TestTickLineFormatAndMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, ".tick")
	if err := WriteTick(path, store.Change{Channel: "general", Seq: 42, Author: "mesh-gw"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteTick(path, store.Change{Channel: "ops", Seq: 7, Author: "node-dash"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line := string(data)
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("want exactly one line, got %q", line)
	}
	tick, ok := ParseTick(line)
	if !ok || tick.Channel != "ops" || tick.Seq != 7 || tick.Author != "node-dash" {
		t.Fatalf("tick %q parsed as %+v, %v", line, tick, ok)
	}
	at, err := time.Parse(time.RFC3339Nano, tick.At)
	if err != nil || time.Since(at) > time.Hour || !strings.HasSuffix(tick.At, "+00:00") {
		t.Fatalf("time %q: want a current UTC ISO-8601 time like store.Now(): %v", tick.At, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("tick file mode %v, want 0600", perm)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("want only the tick file left in the folder, got %v", entries)
	}
}

func TestTickMissingFolderIsAnError(t *testing.T) {
	t.Parallel()
	err := WriteTick(filepath.Join(t.TempDir(), "gone", ".tick"), store.Change{Channel: "c", Seq: 1, Author: "a"})
	if err == nil {
		t.Fatal("want an error for a folder that does not exist")
	}
}

// Many writers and a reader at once: the reader only ever sees whole lines.
func TestTickConcurrentWritersNeverLeavePartialLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".tick")
	if err := WriteTick(path, store.Change{Channel: "c", Seq: 0, Author: "start"}); err != nil {
		t.Fatal(err)
	}
	rounds := 200
	if testing.Short() {
		rounds = 50 // a torn write still shows; the full run tries four times as often
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				// Names of different lengths make a torn write visible.
				c := store.Change{Channel: "channel-" + strings.Repeat("x", w), Seq: int64(i * 1000), Author: fmt.Sprintf("writer-%d", w)}
				if err := WriteTick(path, c); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var reads int
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-done:
				return
			default:
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("read: %v", err)
				return
			}
			reads++
			if _, ok := ParseTick(string(data)); !ok || strings.Count(string(data), "\n") != 1 || !strings.HasSuffix(string(data), "\n") {
				t.Errorf("partial or mixed tick line: %q", data)
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	<-readerDone
	if reads == 0 {
		t.Fatal("the reader never read")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".tick.*")); len(leftovers) > 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

// files is one database folder for a watcher test.
type files struct {
	dir, db, tick string
}

func newFiles(t *testing.T, sub ...string) files {
	dir := filepath.Join(append([]string{t.TempDir()}, sub...)...)
	return files{dir: dir, db: filepath.Join(dir, "chat.db"), tick: filepath.Join(dir, ".tick")}
}

// newWatch makes a watcher for f that has not started yet: a test may
// change its fields first.
func newWatch(t *testing.T, f files, tick string) *Watcher {
	t.Helper()
	w, err := Watch(f.db, tick)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// startWatch makes a watcher for f and starts it.
func startWatch(t *testing.T, f files, tick string, notifications bool) *Watcher {
	t.Helper()
	w := newWatch(t, f, tick)
	w.notifications = notifications
	w.Next()
	return w
}

// fakeWatch is a started watcher whose notifications come from the test
// (events), without fsnotify: for tests in a synctest bubble, where time
// is fake and the watcher's timers run only when everything else waits.
func fakeWatch(t *testing.T, f files, tick string) (*Watcher, chan<- fsnotify.Event) {
	t.Helper()
	w, err := Watch(f.db, tick)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan fsnotify.Event)
	w.notifications, w.events = false, events
	w.Next()
	t.Cleanup(func() { w.Close() }) // inside the bubble: its loop must end there
	return w, events
}

// changed waits for next to close, with a generous bound.
func changed(t *testing.T, next <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-next:
	case <-time.After(generous):
		t.Fatalf("%s: no change reported", what)
	}
}

// quiet asserts that next stays open for d.
func quiet(t *testing.T, next <-chan struct{}, what string, d time.Duration) {
	t.Helper()
	select {
	case <-next:
		t.Fatalf("%s: a change was reported, want none", what)
	case <-time.After(d):
	}
}

// closedNow reports whether next is closed, for a synctest bubble where
// synctest.Wait has let everything that could close it run.
func closedNow(next <-chan struct{}) bool {
	select {
	case <-next:
		return true
	default:
		return false
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestWatcherWakesOnTickWalAndDB(t *testing.T) {
	t.Parallel()
	writes := map[string]func(f files){
		"tick": func(f files) { WriteTick(f.tick, store.Change{Channel: "c", Seq: 1, Author: "a"}) },
		"wal":  func(f files) { appendTo(t, f.db+"-wal", "frame") },
		"db":   func(f files) { appendTo(t, f.db, "page") },
	}
	for name, write := range writes {
		f := newFiles(t)
		os.MkdirAll(f.dir, 0o700)
		w := startWatch(t, f, f.tick, true)
		next := w.Next()
		quiet(t, next, name+": before any write", 200*time.Millisecond)
		write(f)
		changed(t, next, name+" written")
	}
}

// A commit's frames reach the -wal before the commit is visible; the
// watcher looks again a little later, on its schedule, so a reader that
// checked too early is woken once more; and then it stops looking.
func TestWatcherLooksAgainAfterWalWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFiles(t)
		os.MkdirAll(f.dir, 0o700)
		w, events := fakeWatch(t, f, f.tick)
		next := w.Next()
		events <- fsnotify.Event{Name: f.db + "-wal", Op: fsnotify.Write}
		synctest.Wait()
		if !closedNow(next) {
			t.Fatal("a -wal write was not reported")
		}
		start := time.Now()
		for i, at := range w.lookAgain {
			next = w.Next()
			time.Sleep(time.Until(start.Add(at)) - time.Nanosecond)
			synctest.Wait()
			if closedNow(next) {
				t.Fatalf("look %d came before %v", i+1, at)
			}
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			if !closedNow(next) {
				t.Fatalf("no look %d at %v after the write", i+1, at)
			}
		}
		next = w.Next()
		time.Sleep(time.Hour)
		synctest.Wait()
		if closedNow(next) {
			t.Fatal("still looking again after the schedule: the looks never end")
		}
	})
}

// The tick file is written after its commit: it needs no second look.
func TestWatcherTickNeedsNoSecondLook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFiles(t)
		os.MkdirAll(f.dir, 0o700)
		w, events := fakeWatch(t, f, f.tick)
		next := w.Next()
		events <- fsnotify.Event{Name: f.tick, Op: fsnotify.Create}
		synctest.Wait()
		if !closedNow(next) {
			t.Fatal("a tick write was not reported")
		}
		next = w.Next()
		time.Sleep(w.pollEvery - time.Nanosecond) // the poll would see the tick file as it was
		synctest.Wait()
		if closedNow(next) {
			t.Fatal("a tick write was reported again")
		}
	})
}

func TestWatcherIgnoresOtherFiles(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	os.MkdirAll(f.dir, 0o700)
	w := newWatch(t, f, f.tick)
	w.pollEvery = 50 * time.Millisecond // the poll must ignore them too
	next := w.Next()
	appendTo(t, f.db+"-shm", "readers touch this")
	appendTo(t, filepath.Join(f.dir, "notes.txt"), "unrelated")
	quiet(t, next, "-shm and an unrelated file", 500*time.Millisecond)
}

// A change between taking Next and waiting on it (while the caller looks
// at the database) is not lost: the channel the caller holds is closed.
func TestWatcherKeepsChangesWhileTheCallerLooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFiles(t)
		os.MkdirAll(f.dir, 0o700)
		w, events := fakeWatch(t, f, f.tick)
		next := w.Next()
		events <- fsnotify.Event{Name: f.tick, Op: fsnotify.Write} // the caller is busy elsewhere
		synctest.Wait()
		select {
		case <-next:
		default:
			t.Fatal("a change made before the caller waited was lost")
		}
	})
}

// A burst of changes closes a held channel once; the changes before a
// waiter took its channel cost it nothing.
func TestBroadcastCoalescesBursts(t *testing.T) {
	var b Broadcast
	for range 100 {
		b.Notify() // nobody waits
	}
	next := b.Next()
	if closedNow(next) {
		t.Fatal("changes before Next closed its channel")
	}
	for range 100 {
		b.Notify()
	}
	if !closedNow(next) {
		t.Fatal("the burst was not reported")
	}
	if again := b.Next(); closedNow(again) {
		t.Fatal("the same burst was reported twice")
	}
}

// The same through the watcher: a burst of writes costs the waiter one
// report and then the second looks after the last write, not one per
// write.
func TestWatcherCoalescesBurstsOfWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFiles(t)
		os.MkdirAll(f.dir, 0o700)
		w, events := fakeWatch(t, f, f.tick)
		next := w.Next()
		const writes = 100
		for i := range writes {
			events <- fsnotify.Event{Name: f.db + "-wal", Op: fsnotify.Write}
			events <- fsnotify.Event{Name: f.tick, Op: fsnotify.Write}
			if i == 0 {
				synctest.Wait()
				if !closedNow(next) {
					t.Fatal("the first write was not reported")
				}
			}
		}
		synctest.Wait() // the burst's last event is handled
		reports := 0
		for {
			next := w.Next()
			select {
			case <-next:
				reports++
				continue
			case <-time.After(time.Hour):
			}
			break
		}
		if reports != len(w.lookAgain) {
			t.Fatalf("%d writes reported %d more times, want %d: the looks after the last write", 2*writes, reports, len(w.lookAgain))
		}
	})
}

func TestWatcherWaitsForFolderToExist(t *testing.T) {
	t.Parallel()
	f := newFiles(t, "not", "yet", "there")
	w := startWatch(t, f, f.tick, true)
	next := w.Next()
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	changed(t, next, "folder created") // the folder may already hold news
	next = w.Next()
	WriteTick(f.tick, store.Change{Channel: "c", Seq: 1, Author: "a"})
	changed(t, next, "tick written in the new folder")
	// The parents are no longer needed once the folder is watched: they are
	// let go of when it is added, before the waiter is woken. The bound is
	// well under PollEvery, so the poll cannot tidy up in its place.
	for deadline := time.Now().Add(PollEvery / 5); ; time.Sleep(10 * time.Millisecond) {
		got := w.fsw.WatchList()
		if len(got) == 1 && got[0] == f.dir {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("watching %v, want only %s", got, f.dir)
		}
	}
}

func TestWatcherFollowsFolderRecreated(t *testing.T) {
	t.Parallel()
	f := newFiles(t, "data")
	os.MkdirAll(f.dir, 0o700)
	w := startWatch(t, f, f.tick, true)
	next := w.Next()
	if err := os.RemoveAll(f.dir); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(f.dir, 0o700)
	changed(t, next, "folder recreated")
	next = w.Next()
	appendTo(t, f.db+"-wal", "frame")
	changed(t, next, "write in the recreated folder")
	// Not only the poll: the recreated folder is watched again.
	for deadline := time.Now().Add(generous); ; time.Sleep(20 * time.Millisecond) {
		if list := w.fsw.WatchList(); len(list) == 1 && list[0] == f.dir {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("watching %v, want %s again", w.fsw.WatchList(), f.dir)
		}
	}
}

// Without notifications (a network file system) the poll still notices,
// also with the tick file disabled.
func TestWatcherPollsWithoutNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// polled waits one poll interval and reports whether next closed.
		polled := func(w *Watcher, next <-chan struct{}) bool {
			time.Sleep(w.pollEvery)
			synctest.Wait()
			return closedNow(next)
		}
		for name, write := range map[string]func(f files){
			"wal": func(f files) { appendTo(t, f.db+"-wal", "frame") },
			"db":  func(f files) { appendTo(t, f.db, "page") },
		} {
			f := newFiles(t)
			os.MkdirAll(f.dir, 0o700)
			w := startWatch(t, f, "", false)
			if w.fsw != nil {
				t.Fatal("notifications should be off")
			}
			next := w.Next()
			write(f)
			if !polled(w, next) {
				t.Fatalf("%s written, polling: no change reported", name)
			}
			w.Close()
		}

		f := newFiles(t)
		os.MkdirAll(f.dir, 0o700)
		w := startWatch(t, f, f.tick, false)
		next := w.Next()
		WriteTick(f.tick, store.Change{Channel: "c", Seq: 1, Author: "a"})
		if !polled(w, next) {
			t.Fatal("tick written, polling: no change reported")
		}
		next = w.Next()
		for range 3 {
			if polled(w, next) {
				t.Fatal("tick unchanged, polling: a change was reported")
			}
		}
		// The same size and maybe the same mtime: the poll compares the line.
		WriteTick(f.tick, store.Change{Channel: "c", Seq: 2, Author: "a"})
		if !polled(w, next) {
			t.Fatal("tick rewritten, polling: no change reported")
		}
		w.Close()
	})
}

func TestWatcherTickDisabledStillWakesOnWal(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	os.MkdirAll(f.dir, 0o700)
	w := startWatch(t, f, "", true)
	next := w.Next()
	appendTo(t, f.db+"-wal", "frame")
	changed(t, next, "-wal appended, tick disabled")
}

func TestWatcherTickInAnotherFolder(t *testing.T) {
	t.Parallel()
	f := newFiles(t, "db")
	os.MkdirAll(f.dir, 0o700)
	other := filepath.Join(t.TempDir(), "ticks", "chat.tick")
	w := startWatch(t, f, other, true)
	next := w.Next()
	os.MkdirAll(filepath.Dir(other), 0o700)
	changed(t, next, "tick folder created")
	next = w.Next()
	WriteTick(other, store.Change{Channel: "c", Seq: 1, Author: "a"})
	changed(t, next, "tick written in its own folder")
}

// Close stops the watcher, started or not; a waiter then ends by its own
// context, as nothing more is reported.
func TestWatcherClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFiles(t)
		os.MkdirAll(f.dir, 0o700)
		never := newWatch(t, f, f.tick)
		never.Close() // returns: there is no loop to wait for

		w := startWatch(t, f, f.tick, false)
		next := w.Next()
		w.Close()
		WriteTick(f.tick, store.Change{Channel: "c", Seq: 1, Author: "a"})
		time.Sleep(10 * w.pollEvery)
		synctest.Wait()
		if closedNow(next) || closedNow(w.Next()) {
			t.Fatal("a closed watcher reported a change")
		}
	})
}

// Every waiter gets every change: they share one channel, and nothing is
// kept for a waiter that went away.
func TestWaitersShareEveryChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFiles(t)
		os.MkdirAll(f.dir, 0o700)
		w, events := fakeWatch(t, f, f.tick)
		a, b := w.Next(), w.Next()
		events <- fsnotify.Event{Name: f.tick, Op: fsnotify.Write}
		synctest.Wait()
		if !closedNow(a) || !closedNow(b) {
			t.Fatal("a waiter missed the change")
		}
	})
}

// A tick written after its commit still says when the write happened.
func TestTickLineCarriesTheCommitTime(t *testing.T) {
	t.Parallel()
	const at = "2026-11-29T23:30:00.123456+00:00"
	line := TickLine(store.Change{Channel: "ops", Seq: 7, Author: "node-dash", CommittedAt: at})
	if tick, ok := ParseTick(line); !ok || tick.At != at {
		t.Fatalf("tick %q: want the commit time %s", line, at)
	}
}

// A tick never goes back to an earlier write, unless the line ahead is so
// far ahead that the clock must have been set back.
func TestTickNeverGoesBack(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".tick")
	base := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return base.Add(d).Format("2006-01-02T15:04:05.000000") + "+00:00" }
	write := func(seq int64, d time.Duration) {
		t.Helper()
		if err := WriteTick(path, store.Change{Channel: "c", Seq: seq, Author: "a", CommittedAt: at(d)}); err != nil {
			t.Fatal(err)
		}
	}
	seqNow := func() int64 {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tick, ok := ParseTick(string(data))
		if !ok {
			t.Fatalf("tick %q", data)
		}
		return tick.Seq
	}
	write(3, 6*time.Millisecond)
	write(2, 4*time.Millisecond) // another process's older write, delivered later
	if got := seqNow(); got != 3 {
		t.Fatalf("an older write replaced the tick: seq %d, want 3", got)
	}
	write(4, 7*time.Millisecond)
	if got := seqNow(); got != 4 {
		t.Fatalf("a newer write did not replace the tick: seq %d, want 4", got)
	}
	write(1, -2*time.Second) // the clock was set back: ticks go on
	if got := seqNow(); got != 1 {
		t.Fatalf("after the clock went back the tick stayed at seq %d, want 1", got)
	}
	if err := os.WriteFile(path, []byte("not a tick\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write(5, 0)
	if got := seqNow(); got != 5 {
		t.Fatalf("a foreign line kept the tick: seq %d, want 5", got)
	}
}

// Two processes (two handles) whose ticks cross: A commits, B commits, A
// commits again before either tick is out, so A's tick (the newest write)
// is written before B's. The file must still end naming the newest write.
// B's delivery is held until A's newest is written, so the ticks cross
// whatever the machine's pace.
func TestTickNamesTheNewestWriteWhenProcessesCross(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	dbPath, tick := filepath.Join(dir, "chat.db"), filepath.Join(dir, ".tick")
	open := func(deliver func(store.Change)) *store.DB {
		d, err := store.Open(ctx, dbPath)
		if err != nil {
			t.Fatal(err)
		}
		d.OnCommit = deliver
		return d
	}
	aWrote := make(chan store.Change, 100)
	bMay := make(chan struct{})
	a := open(func(c store.Change) { WriteTick(tick, c); aWrote <- c })
	b := open(func(c store.Change) { <-bMay; WriteTick(tick, c) })
	gw := store.Identity{Name: "mesh-gw", Workspace: "/srv/mesh-gw"}
	dash := store.Identity{Name: "node-dash", Workspace: "/srv/node-dash"}
	for _, id := range []store.Identity{gw, dash} {
		if _, err := a.Register(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.ChannelNew(ctx, gw, "ops", "", []string{"node-dash"}); err != nil {
		t.Fatal(err)
	}
	say := func(d *store.DB, who store.Identity) int64 {
		r, err := d.Say(ctx, who, store.SayArgs{Channel: "ops", Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Seq
	}
	say(a, gw)
	say(b, dash)
	newest := say(a, gw)
	for written := false; !written; {
		select {
		case c := <-aWrote:
			written = c.Channel == "ops" && c.Seq == newest
		case <-time.After(time.Minute):
			t.Fatal("A's newest tick was never written")
		}
	}
	close(bMay)
	b.Close() // delivers B's older tick
	a.Close()
	data, err := os.ReadFile(tick)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := ParseTick(string(data)); !ok || got.Seq != newest {
		t.Fatalf("tick %q, want it to name the newest write (seq %d)", data, newest)
	}
}

// Writers that look at the tick file and replace it at the same moment
// must not let the older write's line replace the newer's: the look and
// the replacement are one step. (Before, two sessions' ticks delivered a
// millisecond apart left the older line about one time in six.)
func TestTickRaceLeavesTheNewest(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".tick")
	base := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	for round := range 50 {
		var wg sync.WaitGroup
		newest := int64(0)
		for w := range 8 {
			seq := int64(round*8 + w + 1)
			newest = max(newest, seq)
			at := base.Add(time.Duration(seq)*time.Microsecond).Format("2006-01-02T15:04:05.000000") + "+00:00"
			wg.Add(1)
			go func() {
				defer wg.Done()
				WriteTick(path, store.Change{Channel: "c", Seq: seq, Author: "a", CommittedAt: at})
			}()
		}
		wg.Wait()
		data, _ := os.ReadFile(path)
		if tick, ok := ParseTick(string(data)); !ok || tick.Seq != newest {
			t.Fatalf("round %d: the tick names %q, want seq %d", round, data, newest)
		}
	}
}
