package codexwake

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// bench is a doorbell on a record in a temporary folder, with a clock,
// the terminals and the ring in the test's hands.
type bench struct {
	t     *testing.T
	d     *Doorbell
	now   time.Time
	shown int // Codex terminals that could show a thread of the party
	alive map[Process]bool
	rang  []string // thread ids, in order
	fail  error    // what the ring answers
	log   bytes.Buffer
}

const party = "/src/node-dash"

func newBench(t *testing.T) *bench {
	b := &bench{t: t, now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), shown: 1, alive: map[Process]bool{}}
	b.d = &Doorbell{
		Dir:    t.TempDir(),
		Client: Client{Process: Process{PID: 100, Start: 7}, Exe: "/opt/codex", Kind: KindServer, CodexHome: "/home/you/.codex"},
		Party:  party,
		Self:   Process{PID: 200, Start: 9},
		Log:    slog.New(slog.NewTextHandler(&b.log, nil)),
		Ring: func(_ context.Context, th Thread, text string) error {
			if b.fail == nil {
				b.rang = append(b.rang, th.ID)
			}
			return b.fail
		},
		Interfaces: func() int { return b.shown },
		Alive:      func(p Process) bool { return b.alive[p] },
		Now:        func() time.Time { return b.now },
	}
	if err := b.d.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

// start records a thread as Codex's SessionStart hook does.
func (b *bench) start(id, version string) {
	b.t.Helper()
	b.now = b.now.Add(time.Second)
	err := Start(context.Background(), b.d.Dir, b.d.Client, party, Thread{ID: id, Version: version, Started: b.now})
	if err != nil {
		b.t.Fatal(err)
	}
}

// look is a look of the serve at what waits (keys).
func (b *bench) look(keys ...string) time.Duration {
	return b.d.Look(context.Background(), Waiting{Keys: keys, Line: "mcpp-chat: mesh-gw is waiting on this session."})
}

func (b *bench) record() Record {
	b.t.Helper()
	r, err := Read(RecordPath(b.d.Dir, b.d.Client.Process, party))
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

func (b *bench) wantRang(ids ...string) {
	b.t.Helper()
	if strings.Join(b.rang, " ") != strings.Join(ids, " ") {
		b.t.Fatalf("rang %q, want %q (last look: %s)", b.rang, ids, b.record().Last)
	}
}

// Many posts in a row make one ring; the thread is rung again only once
// its session has read (a read call from it, or nothing left waiting).
func TestOneRingPerThreadUntilTheSessionReads(t *testing.T) {
	b := newBench(t)
	b.start("t1", Tested)
	b.look("talk/gw--dash/1")
	b.wantRang("t1")
	for seq := 2; seq <= 5; seq++ {
		b.look("talk/gw--dash/" + string(rune('0'+seq)))
	}
	b.wantRang("t1")

	// The session reads (its model calls chat_read): the next post rings.
	b.d.Read(context.Background(), "t1")
	b.look("talk/gw--dash/5")
	b.wantRang("t1") // what it was rung for, read or not, is not rung again
	b.look("talk/gw--dash/6")
	b.wantRang("t1", "t1")

	// Nothing left waiting counts as read too.
	b.look()
	b.look("ack/gw--dash/7")
	b.wantRang("t1", "t1", "t1")
	if r := b.record(); r.Threads[0].Bell.Rings != 3 || !r.Threads[0].Bell.Outstanding {
		t.Errorf("the record says %+v", r.Threads[0].Bell)
	}
}

// A ring Codex refuses is tried again after 1, 2, 4 and 8 s, then given
// up on for what it was for and reported once; what comes next is tried
// again, and not reported a second time.
func TestARefusedRingIsRetriedWithinBoundsThenReportedOnce(t *testing.T) {
	b := newBench(t)
	b.start("t1", Tested)
	b.fail = errors.New("codex queue: thread is in plan mode")
	var waits []time.Duration
	for range MaxAttempts {
		waits = append(waits, b.look("talk/gw--dash/1"))
		b.now = b.now.Add(waits[len(waits)-1])
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 0}; !equal(waits, want) {
		t.Errorf("retried after %v, want %v", waits, want)
	}
	if n := strings.Count(b.log.String(), "could not ring thread t1"); n != 1 {
		t.Fatalf("reported %d times, want once:\n%s", n, b.log.String())
	}
	if !strings.Contains(b.log.String(), "plan mode") {
		t.Errorf("the report does not say why: %s", b.log.String())
	}
	// Given up: the same keys are not tried again.
	tries := b.record().Threads[0].Bell
	if again := b.look("talk/gw--dash/1"); again != 0 || b.record().Threads[0].Bell.Refused != tries.Refused {
		t.Errorf("given up on, it was tried again (again %v)", again)
	}
	// A new post is; a second give-up is not reported again.
	for range MaxAttempts {
		b.now = b.now.Add(b.look("talk/gw--dash/2"))
	}
	if n := strings.Count(b.log.String(), "could not ring thread t1"); n != 1 {
		t.Errorf("reported %d times, want once", n)
	}
	// Once Codex takes rings again, it rings.
	b.fail = nil
	b.look("talk/gw--dash/3")
	b.wantRang("t1")
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Below the Codex version the tests pin, and when the version is not
// known, the doorbell says so once and rings nothing.
func TestAnOlderCodexIsNotRungAndToldOnce(t *testing.T) {
	for _, version := range []string{"0.170.9", ""} {
		b := newBench(t)
		b.start("t1", version)
		b.look("talk/gw--dash/1")
		b.look("talk/gw--dash/2")
		b.wantRang()
		said := b.log.String()
		if n := strings.Count(said, "does not ring thread t1"); n != 1 {
			t.Errorf("version %q: said %d times, want once:\n%s", version, n, said)
		}
		if !strings.Contains(said, Tested) {
			t.Errorf("version %q: it does not name the version needed: %s", version, said)
		}
		if last := b.record().Last; last != LastGate {
			t.Errorf("version %q: the record's last look says %q", version, last)
		}
	}
}

// A thread Codex let go (SessionEnd) is not rung: a message queued for
// it would start a turn at its next resume, maybe days later. Resumed
// in a terminal, it is rung again.
func TestAnEndedThreadIsNotRung(t *testing.T) {
	b := newBench(t)
	b.start("t1", Tested)
	if err := End(context.Background(), b.d.Dir, b.d.Client, party, "t1"); err != nil {
		t.Fatal(err)
	}
	b.look("talk/gw--dash/1")
	b.wantRang()
	b.start("t1", Tested) // codex resume
	b.look("talk/gw--dash/1")
	b.wantRang("t1")
}

// With no Codex terminal left in the party's folder the thread is not
// rung: Codex keeps it loaded for a minute after its terminal closed, and
// would run the queued turn there, where nobody sees it.
func TestAClosedSessionIsNotRung(t *testing.T) {
	b := newBench(t)
	b.start("t1", Tested)
	b.shown = 0
	b.look("talk/gw--dash/1")
	b.wantRang()
	if last := b.record().Last; last != LastClosed {
		t.Errorf("the record's last look says %q", last)
	}
	b.shown = 1
	b.look("talk/gw--dash/1")
	b.wantRang("t1")
}

// More loaded threads than terminals: one was left behind (/new, or a
// terminal closed), and which one is not known, so nothing is rung until
// Codex lets it go; then the one left is.
func TestALeftOverThreadHoldsTheRingBack(t *testing.T) {
	b := newBench(t)
	b.start("t1", Tested)
	old := Process{PID: 300, Start: 1}
	b.alive[old] = true
	Update(context.Background(), b.d.Dir, b.d.Client, party, func(r *Record) { r.Serves = append(r.Serves, old) })
	b.start("t2", Tested)
	if again := b.look("talk/gw--dash/1"); again != recheck {
		t.Errorf("look again after %v, want %v", again, recheck)
	}
	b.wantRang()
	// Codex unloads t1: its server ends, its SessionEnd runs.
	delete(b.alive, old)
	End(context.Background(), b.d.Dir, b.d.Client, party, "t1")
	b.look("talk/gw--dash/1")
	b.wantRang("t2")
}

// Two terminals in the party's folder, each on a thread: both are rung,
// each once, whichever server looks.
func TestEachShownThreadIsRungOnce(t *testing.T) {
	b := newBench(t)
	other := Process{PID: 300, Start: 1}
	b.alive[other] = true
	Update(context.Background(), b.d.Dir, b.d.Client, party, func(r *Record) { r.Serves = append(r.Serves, other) })
	b.start("t1", Tested)
	b.start("t2", Tested)
	b.shown = 2
	b.look("talk/gw--dash/1")
	b.look("talk/gw--dash/1")
	b.wantRang("t2", "t1")
}

// A thread Codex let go without a SessionEnd the hook saw (a hook not
// installed yet) is older than those it still holds: with one thread
// loaded, only the newest is rung.
func TestOnlyAsManyThreadsAsAreLoadedAreRung(t *testing.T) {
	b := newBench(t)
	b.start("t1", Tested)
	b.start("t2", Tested)
	b.look("talk/gw--dash/1")
	b.wantRang("t2")
}

// Nothing is rung while nothing waits, and a thread recorded under
// another client or party is not this record's.
func TestNothingWaitingRingsNothing(t *testing.T) {
	b := newBench(t)
	b.start("t1", Tested)
	b.look()
	b.wantRang()
	other := Client{Process: Process{PID: 101, Start: 7}, Kind: KindServer}
	if RecordPath(b.d.Dir, other.Process, party) == RecordPath(b.d.Dir, b.d.Client.Process, party) ||
		RecordPath(b.d.Dir, b.d.Client.Process, "/src/mesh-gw") == RecordPath(b.d.Dir, b.d.Client.Process, party) {
		t.Error("records of another client or party share a file")
	}
}
