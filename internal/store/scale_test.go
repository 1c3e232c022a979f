package store

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A store serving a whole team at once, as a hub's does: 64 writers over
// 8 channels, readers and searches beside them, on a machine whose cores
// are taken by two busy loops. Every write that was answered is stored
// exactly once where its answer says, each channel's seqs are 1..n, and
// nobody is told the store is busy within the default busy timeout: a
// team's calls on different channels must not queue behind one another,
// and reads must not queue behind writes.
func TestTeamLoadStoresEveryWriteOnceWithoutBusy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the team load takes seconds of two busy cores; it runs in the full tier (make test)")
	}
	bothEngines(t, func(t *testing.T) {
		db := openTest(t)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		load := newTeamLoad(t, ctx, db)
		hogCPU(t, 2)
		load.run(ctx)
		load.check(ctx)
	})
}

// The load's shape.
const (
	loadChannels    = 8
	writersPerChan  = 8
	writesPerWriter = 6
	loadSearchers   = 2
	// readPause is a reader's pause between calls: an agent thinks
	// between its reads, and a loop that never pauses measures only how
	// fast the CPU answers from the memo.
	readPause = 5 * time.Millisecond
)

// teamLoad is the team and what it did.
type teamLoad struct {
	t       *testing.T
	db      *DB
	writers []Identity // writer i sits in channel i/writersPerChan
	readers []Identity // reader c sits in channel c
	search  []Identity // searchers sit in every channel
	// asks holds each channel's answered asks, for the replies.
	mu   sync.Mutex
	asks map[string][]string
	// wrote holds each answered write: its text, and where its answer
	// says it is.
	wrote  []written
	failed []written
	errs   errorTally
	reads  atomic.Int64
	// lat holds every call's time, by kind, for the log.
	lat latencies
}

type written struct {
	text    string
	channel string
	seq     int64
	err     error
}

func loadChannel(c int) string { return fmt.Sprintf("load-%d", c) }

func newTeamLoad(t *testing.T, ctx context.Context, db *DB) *teamLoad {
	t.Helper()
	l := &teamLoad{t: t, db: db, asks: map[string][]string{}}
	for i := range loadChannels * writersPerChan {
		l.writers = append(l.writers, Identity{Name: fmt.Sprintf("wr-%02d", i), Workspace: fmt.Sprintf("/srv/wr-%02d", i)})
	}
	for c := range loadChannels {
		l.readers = append(l.readers, Identity{Name: fmt.Sprintf("rd-%d", c), Workspace: fmt.Sprintf("/srv/rd-%d", c)})
	}
	for s := range loadSearchers {
		l.search = append(l.search, Identity{Name: fmt.Sprintf("sr-%d", s), Workspace: fmt.Sprintf("/srv/sr-%d", s)})
	}
	for _, id := range append(append(append([]Identity{}, l.writers...), l.readers...), l.search...) {
		if _, err := db.Register(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for c := range loadChannels {
		seats := []string{l.readers[c].Name}
		for _, w := range l.writers[c*writersPerChan+1 : (c+1)*writersPerChan] {
			seats = append(seats, w.Name)
		}
		for _, s := range l.search {
			seats = append(seats, s.Name)
		}
		if _, err := db.ChannelNew(ctx, l.writers[c*writersPerChan], loadChannel(c), "", seats); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// run starts every writer, reader and searcher at once and returns when
// the writers are done (the readers and searchers stop then).
func (l *teamLoad) run(ctx context.Context) {
	start := make(chan struct{})
	writing := make(chan struct{})
	var writers, others sync.WaitGroup
	for i, me := range l.writers {
		writers.Go(func() {
			<-start
			l.write(ctx, i, me)
		})
	}
	for c, me := range l.readers {
		others.Go(func() {
			<-start
			l.read(ctx, writing, loadChannel(c), me)
		})
	}
	for _, me := range l.search {
		others.Go(func() {
			<-start
			l.searchLoop(ctx, writing, me)
		})
	}
	begin := time.Now()
	close(start)
	writers.Wait()
	close(writing)
	others.Wait()
	l.t.Logf("%d writes, %d reads and searches in %s; %s", len(l.wrote)+len(l.failed), l.reads.Load(), time.Since(begin).Round(time.Millisecond), l.lat.summary())
}

// write makes writer i's writes into its channel: a say, an ask, a reply
// to a peer's ask, in turn; each text is unique, to find it stored.
func (l *teamLoad) write(ctx context.Context, i int, me Identity) {
	channel := loadChannel(i / writersPerChan)
	for k := range writesPerWriter {
		text := fmt.Sprintf("writer %s, write %d: the gateway answers on port %d", me.Name, k, 8000+i*100+k)
		w := written{text: text}
		begin := time.Now()
		switch k % 3 {
		case 0:
			var r SayResult
			r, w.err = l.db.Say(ctx, me, SayArgs{Channel: channel, Text: text})
			w.channel, w.seq = r.Channel, r.Seq
		case 1:
			var r AskResult
			r, w.err = l.db.Ask(ctx, me, AskArgs{Channel: channel, Title: fmt.Sprintf("Question %d of %s", k, me.Name), Body: text})
			w.channel, w.seq = r.Channel, r.Seq
			if w.err == nil {
				l.mu.Lock()
				l.asks[channel] = append(l.asks[channel], fmt.Sprintf("%s:%d", r.Channel, r.Seq))
				l.mu.Unlock()
			}
		default:
			item := l.peerAsk(channel, i)
			if item == "" { // no ask yet: a say instead
				var r SayResult
				r, w.err = l.db.Say(ctx, me, SayArgs{Channel: channel, Text: text})
				w.channel, w.seq = r.Channel, r.Seq
				break
			}
			var r ReplyResult
			r, w.err = l.db.Reply(ctx, me, item, text, "")
			w.channel, w.seq = r.Channel, r.Seq
		}
		l.lat.add("write", time.Since(begin))
		l.mu.Lock()
		if w.err != nil {
			l.failed = append(l.failed, w)
		} else {
			l.wrote = append(l.wrote, w)
		}
		l.mu.Unlock()
		l.errs.add("write", w.err)
	}
}

// peerAsk is the newest answered ask in channel, whoever raised it.
func (l *teamLoad) peerAsk(channel string, i int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	asks := l.asks[channel]
	if len(asks) == 0 {
		return ""
	}
	return asks[(i+len(asks))%len(asks)]
}

// read reads the channel (moving the cursor) and the inbox in turn until
// the writers are done.
func (l *teamLoad) read(ctx context.Context, writing <-chan struct{}, channel string, me Identity) {
	for k := 0; ; k++ {
		select {
		case <-writing:
			return
		default:
		}
		var err error
		begin := time.Now()
		if k%2 == 0 {
			_, err = l.db.Read(ctx, me, ReadArgs{Channel: channel, Limit: 50})
		} else {
			_, err = l.db.Inbox(ctx, me)
		}
		l.lat.add("read", time.Since(begin))
		l.reads.Add(1)
		l.errs.add("read", err)
		time.Sleep(readPause)
	}
}

// searchLoop searches every channel until the writers are done.
func (l *teamLoad) searchLoop(ctx context.Context, writing <-chan struct{}, me Identity) {
	queries := []string{"gateway port", "question", "answers"}
	for k := 0; ; k++ {
		select {
		case <-writing:
			return
		default:
		}
		begin := time.Now()
		_, err := l.db.Search(ctx, me, SearchArgs{Query: queries[k%len(queries)]})
		l.lat.add("search", time.Since(begin))
		l.reads.Add(1)
		l.errs.add("search", err)
		time.Sleep(readPause)
	}
}

// check holds the store to what the calls were answered.
func (l *teamLoad) check(ctx context.Context) {
	t := l.t
	if n := l.errs.total(); n > 0 {
		t.Errorf("%d calls failed under the load (busy: %d); the first of each:\n%s", n, l.errs.busy, strings.Join(l.errs.first(), "\n"))
	}
	// Each text once, where its answer said.
	type row struct {
		channel string
		seq     int64
	}
	stored := map[string][]row{}
	seqs := map[string][]int64{}
	rows, err := rawSQL(l.db).QueryContext(ctx, `SELECT c.name, m.seq, m.body FROM messages m JOIN channels c ON c.id = m.channel_id ORDER BY c.name, m.seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r row
		var body string
		if err := rows.Scan(&r.channel, &r.seq, &body); err != nil {
			t.Fatal(err)
		}
		stored[body] = append(stored[body], r)
		seqs[r.channel] = append(seqs[r.channel], r.seq)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range l.wrote {
		got := stored[w.text]
		if len(got) != 1 || got[0] != (row{w.channel, w.seq}) {
			t.Errorf("%q was answered as %s:%d but is stored %d times: %v", w.text, w.channel, w.seq, len(got), got)
		}
	}
	// A call that failed says nothing was written: nothing was.
	for _, w := range l.failed {
		if got := stored[w.text]; len(got) != 0 && errors.Is(w.err, ErrBusy) {
			t.Errorf("%q failed busy (\"nothing was written\") but is stored: %v", w.text, got)
		}
	}
	for c := range loadChannels {
		name := loadChannel(c)
		got := seqs[name]
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		for i, s := range got {
			if s != int64(i+1) {
				t.Errorf("#%s's seqs are not 1..%d without a gap: #%d is %d", name, len(got), i+1, s)
				break
			}
		}
	}
	if want := loadChannels * writersPerChan * writesPerWriter; len(l.wrote)+len(l.failed) != want {
		t.Errorf("%d writes made, want %d", len(l.wrote)+len(l.failed), want)
	}
}

// errorTally counts the load's errors, keeping the first of each text.
type errorTally struct {
	mu    sync.Mutex
	n     int
	busy  int
	count map[string]int
	order []string
}

func (e *errorTally) add(what string, err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.count == nil {
		e.count = map[string]int{}
	}
	e.n++
	if errors.Is(err, ErrBusy) {
		e.busy++
	}
	key := what + ": " + err.Error()
	if e.count[key] == 0 {
		e.order = append(e.order, key)
	}
	e.count[key]++
}

func (e *errorTally) total() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

func (e *errorTally) first() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, k := range e.order {
		out = append(out, fmt.Sprintf("%d× %s", e.count[k], k))
	}
	return out
}

// latencies are the calls' times by kind.
type latencies struct {
	mu sync.Mutex
	by map[string][]time.Duration
}

func (l *latencies) add(kind string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string][]time.Duration{}
	}
	l.by[kind] = append(l.by[kind], d)
}

// summary is each kind's p50, p99 and longest.
func (l *latencies) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, kind := range []string{"write", "read", "search"} {
		d := slices.Sorted(slices.Values(l.by[kind]))
		if len(d) == 0 {
			continue
		}
		at := func(p int) time.Duration { return d[min(len(d)-1, len(d)*p/100)].Round(time.Millisecond) }
		parts = append(parts, fmt.Sprintf("%s p50 %s p99 %s max %s (n=%d)", kind, at(50), at(99), d[len(d)-1].Round(time.Millisecond), len(d)))
	}
	return strings.Join(parts, "; ")
}

// hogCPU starts n busy loops, each a shell of its own, as other work on
// the machine would be; they are killed when the test ends.
func hogCPU(t *testing.T, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a busy loop: %v", err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
}
