package wake

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// PollEvery is the safety-net poll: notifications do not cross network file
// systems, and a notification can be lost (queue overflow, a folder that
// was replaced), so the watcher also compares the files this often. Without
// notifications (no inotify, a limit reached) the poll alone does the work.
const PollEvery = time.Second

// Watcher reports changes to the chat database's files: the database, its
// -wal (every commit appends to it, whatever edition wrote it) and the tick
// file. It watches the folders that hold them with fsnotify (waiting for a
// folder that does not exist yet by watching its nearest existing parent)
// and polls once a second as well.
//
// A waiter takes Next before it looks at the database and waits on what it
// got after looking: a change that lands while it looks then closes the
// channel it holds, so the loop never misses one, and any number of
// waiters share one watcher.
type Watcher struct {
	files []string // db, -wal, tick: the names that matter
	tick  string   // "" when disabled
	dirs  []string // the folders that hold them

	// notifications off leaves the poll alone (tests use it to stand in
	// for a network file system); pollEvery and lookAgain are the poll's
	// interval and the looks after a -wal write.
	notifications bool
	pollEvery     time.Duration
	lookAgain     []time.Duration

	changed Broadcast

	startOnce sync.Once
	fsw       *fsnotify.Watcher
	events    <-chan fsnotify.Event // fsw's, or a test's
	errs      <-chan error
	last      snapshot // touched only by start and then by run

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// Watch returns a watcher of the database at dbPath and the tick file at
// tickPath ("" when disabled). Neither file nor their folders need to exist
// yet. It starts watching at the first Next, so a process that never waits
// holds no inotify instance. Watch fails only on an empty dbPath.
func Watch(dbPath, tickPath string) (*Watcher, error) {
	if dbPath == "" {
		return nil, errors.New("watch: no database path")
	}
	db, err := filepath.Abs(dbPath)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dbPath, err)
	}
	w := &Watcher{files: []string{db, db + "-wal"}, dirs: []string{filepath.Dir(db)},
		notifications: true, pollEvery: PollEvery, lookAgain: lookAgain,
		stop: make(chan struct{}), done: make(chan struct{})}
	if tickPath != "" {
		if w.tick, err = filepath.Abs(tickPath); err != nil {
			return nil, fmt.Errorf("watch %s: %w", tickPath, err)
		}
		w.files = append(w.files, w.tick)
		if d := filepath.Dir(w.tick); d != w.dirs[0] {
			w.dirs = append(w.dirs, d)
		}
	}
	return w, nil
}

// Next returns a channel that is closed at the next change after this
// call. A burst of changes while nobody holds a channel costs nothing, and
// closes a held channel once. After Close it returns a channel that never
// closes: a waiter then ends by its own context.
func (w *Watcher) Next() <-chan struct{} {
	w.startOnce.Do(w.start)
	return w.changed.Next()
}

// start sets up the notifications, notes the files as they are and starts
// the loop that reports their changes.
func (w *Watcher) start() {
	select {
	case <-w.stop: // closed before it started
		close(w.done)
		return
	default:
	}
	if w.notifications {
		if fsw, err := fsnotify.NewWatcher(); err == nil {
			w.fsw, w.events, w.errs = fsw, fsw.Events, fsw.Errors
			w.ensure()
		}
	}
	w.last = w.snapshot()
	go w.run()
}

// Close stops watching.
func (w *Watcher) Close() error {
	w.stopOnce.Do(func() { close(w.stop) })
	w.startOnce.Do(func() { close(w.done) }) // never started: nothing to wait for
	<-w.done
	if w.fsw != nil {
		return w.fsw.Close()
	}
	return nil
}

// notify tells every waiter that something may have changed.
func (w *Watcher) notify() {
	w.changed.Notify()
}

// Broadcast is "something changed" for any number of waiters: a channel
// that is closed at the next change and replaced by a new one. The zero
// value is ready. The file watcher and a team store's listener both wake
// their waiters through one.
type Broadcast struct {
	mu sync.Mutex
	ch chan struct{} // nil until someone waits
}

// Next is a channel closed at the next Notify.
func (b *Broadcast) Next() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// Notify closes the channel Next gave, if anyone holds one.
func (b *Broadcast) Notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}

// lookAgain is when to report again after a write to the database or its
// -wal: a commit writes its frames first and becomes visible a moment later
// (after the fsync and the wal-index update, which make no event), so a
// waiter's first look may come too early. The tick file, written after the
// commit, needs no second look.
var lookAgain = []time.Duration{2 * ms, 5 * ms, 10 * ms, 20 * ms, 50 * ms, 100 * ms, 250 * ms, 500 * ms}

const ms = time.Millisecond

func (w *Watcher) run() {
	defer close(w.done)
	poll := time.NewTicker(w.pollEvery)
	defer poll.Stop()
	again := time.NewTimer(time.Hour)
	again.Stop()
	lookAgain := w.lookAgain
	step := len(lookAgain)
	events, errs := w.events, w.errs
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if w.matters(ev) {
				w.last = w.snapshot()
				w.notify()
				if ev.Name != w.tick {
					step = 0
					again.Reset(lookAgain[0])
				}
			}
		case <-again.C:
			w.notify()
			if step++; step < len(lookAgain) {
				again.Reset(lookAgain[step] - lookAgain[step-1])
			}
		case _, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			w.notify() // an overflow may have eaten an event that mattered
		case <-poll.C:
			if w.ensure() {
				w.notify()
			}
			if s := w.snapshot(); !s.equal(w.last) {
				if !s.sameFiles(w.last) {
					step = 0
					again.Reset(lookAgain[0])
				}
				w.last = s
				w.notify()
			}
		}
	}
}

// matters reports whether ev may mean a change: a write to one of our
// files, or a folder on the way to ours appearing or going away.
func (w *Watcher) matters(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	for _, f := range w.files {
		if ev.Name == f {
			return true
		}
	}
	for _, d := range w.dirs {
		if ev.Name == d || strings.HasPrefix(d, ev.Name+string(filepath.Separator)) {
			return w.ensure()
		}
	}
	return false
}

// ensure watches every folder of ours that exists, and the nearest existing
// parent of each that does not. It reports whether one of our folders has
// just become watched (its files may already hold news).
func (w *Watcher) ensure() (added bool) {
	if w.fsw == nil {
		return false
	}
	watched := map[string]bool{}
	for _, p := range w.fsw.WatchList() {
		watched[p] = true
	}
	want := map[string]bool{}
	for _, d := range w.dirs {
		want[d] = true
		if watched[d] {
			continue
		}
		at, ok := w.watchNearest(d)
		if !ok {
			continue
		}
		want[at] = true
		added = added || at == d
	}
	// From the list as it is now: watchNearest may have passed through a
	// parent that was created while it looked.
	for _, p := range w.fsw.WatchList() {
		if !want[p] {
			w.fsw.Remove(p)
		}
	}
	return added
}

// watchNearest watches dir or, while it does not exist, its nearest
// existing parent. A folder created between the check and the watch is
// caught by looking again once the parent is watched.
func (w *Watcher) watchNearest(dir string) (string, bool) {
	for range 16 {
		at := dir
		for {
			if info, err := os.Stat(at); err == nil && info.IsDir() {
				break
			}
			up := filepath.Dir(at)
			if up == at {
				return "", false
			}
			at = up
		}
		if err := w.fsw.Add(at); err != nil {
			continue // removed meanwhile, or a limit: look again
		}
		if at == dir || !exists(childToward(at, dir)) {
			return at, true
		}
	}
	return "", false
}

// childToward is the folder directly below parent on the way to dir.
func childToward(parent, dir string) string {
	rel, err := filepath.Rel(parent, dir)
	if err != nil {
		return dir
	}
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	return filepath.Join(parent, first)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// snapshot is what the poll compares: size and time of the database and
// its -wal, and the tick file's line (its size rarely changes).
type snapshot struct {
	stats []fileStat
	tick  []byte
}

type fileStat struct {
	size  int64
	mtime time.Time
	ok    bool
}

func (w *Watcher) snapshot() snapshot {
	var s snapshot
	for _, f := range w.files[:2] {
		var st fileStat
		if info, err := os.Stat(f); err == nil {
			st = fileStat{size: info.Size(), mtime: info.ModTime(), ok: true}
		}
		s.stats = append(s.stats, st)
	}
	if w.tick != "" {
		s.tick, _ = os.ReadFile(w.tick)
	}
	return s
}

func (s snapshot) equal(o snapshot) bool {
	return bytes.Equal(s.tick, o.tick) && s.sameFiles(o)
}

// sameFiles compares the database and its -wal.
func (s snapshot) sameFiles(o snapshot) bool {
	if len(s.stats) != len(o.stats) {
		return false
	}
	for i := range s.stats {
		a, b := s.stats[i], o.stats[i]
		if a.ok != b.ok || a.size != b.size || !a.mtime.Equal(b.mtime) {
			return false
		}
	}
	return true
}
