package store

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Due times and the escalation ladder (docs/protocol.md, Due times and the
// ladder), on both engines.

// fakeClock is a store's clock a test moves.
type fakeClock struct{ at atomic.Pointer[time.Time] }

func newFakeClock(at time.Time) *fakeClock {
	c := &fakeClock{}
	c.set(at)
	return c
}

func (c *fakeClock) set(at time.Time)                  { c.at.Store(&at) }
func (c *fakeClock) now() time.Time                    { return *c.at.Load() }
func (c *fakeClock) advance(d time.Duration) time.Time { at := c.now().Add(d); c.set(at); return at }

// clockedWorld is world on a store whose time the test moves; it starts at
// start.
func clockedWorld(t *testing.T, start time.Time) (*DB, *fakeClock) {
	t.Helper()
	clock := newFakeClock(start)
	return worldWith(t, Options{Clock: clock.now}), clock
}

var ladder = Ladder{RaiserAfter: 15 * time.Minute, PersonAfter: time.Hour}

func TestParseDue(t *testing.T) {
	now := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
	for raw, want := range map[string]time.Time{
		"30m":                       now.Add(30 * time.Minute),
		"2h":                        now.Add(2 * time.Hour),
		"1d":                        now.Add(24 * time.Hour),
		"1d12h":                     now.Add(36 * time.Hour),
		" 90s ":                     now.Add(90 * time.Second),
		"2026-07-30T12:00:00Z":      now.Add(2 * time.Hour),
		"2026-07-30T14:00:00+02:00": now.Add(2 * time.Hour),
	} {
		got, err := ParseDue(raw, now)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseDue(%q) = %v, %v; want %v", raw, got, err, want)
		}
	}
	for raw, why := range map[string]string{
		"soon": "neither a duration nor a time", "": "neither a duration nor a time", "1x": "neither",
		"-5m": "not in the future", "0s": "not in the future", "2026-07-30T09:00:00Z": "not in the future",
		"400d": "more than 366 days ahead", "2030-01-01T00:00:00Z": "more than 366 days ahead",
	} {
		_, err := ParseDue(raw, now)
		refused(t, err, why)
	}
}

// An ask's due time shows on the item wherever it shows; nothing is
// overdue before it, and an ask refused for its due time writes nothing.
func TestAskWithDue(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		start := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
		db, _ := clockedWorld(t, start)
		ctx := context.Background()
		res, err := db.Ask(ctx, gw, AskArgs{Title: "Is the enum closed?", Body: "b", Due: "30m"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "2026-07-30T10:30:00.000000+00:00"; res.Due != want {
			t.Errorf("ask's due = %q, want %q", res.Due, want)
		}
		in := must2[Inbox](t)(db.Inbox(ctx, dash))
		if len(in.WaitingOnMe) != 1 || in.WaitingOnMe[0].Due != res.Due || in.WaitingOnMe[0].Overdue() || in.WaitingOnMe[0].NotAcked != nil {
			t.Errorf("consumer's inbox = %+v", in.WaitingOnMe)
		}
		if m := readAll(t, db, dash, "gw--dash").Messages[0]; m.Due != res.Due || m.Overdue() {
			t.Errorf("read shows %+v", m.Dues)
		}
		before := len(readAll(t, db, gw, "gw--dash").Messages)
		_, err = db.Ask(ctx, gw, AskArgs{Title: "news", Body: "b", Announce: true, Due: "1h"})
		refused(t, err, "an announcement needs no ack, so it has no due time")
		_, err = db.Ask(ctx, gw, AskArgs{Title: "later", Body: "b", Due: "yesterday"})
		refused(t, err, "neither a duration nor a time")
		if after := len(readAll(t, db, gw, "gw--dash").Messages); after != before {
			t.Errorf("refused asks wrote %d messages", after-before)
		}
		if _, ok, err := db.NextDue(ctx); err != nil || !ok {
			t.Errorf("NextDue = %v, %v", ok, err)
		}
	})
}

// Past its due time with an ack owed, an item is overdue: first in the
// consumer's inbox, with how late and who has not acked, in the raiser's
// too, in a read and in the hook's read-only view — from the due time
// alone, with no stage fired.
func TestOverdueShowsWhereTheItemShows(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		// The store writes times two hours ago, so that the hook's
		// read-only view, which reads the real clock, sees them past too.
		start := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
		db, clock := clockedWorld(t, start)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "First, no due", Body: "b", Slug: "first"}))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Second, due", Body: "b", Slug: "second", Due: "30m"}))
		if in := must2[Inbox](t)(db.Inbox(ctx, dash)); in.WaitingOnMe[0].Item != "first" {
			t.Errorf("before its due time an item keeps its place: %+v", in.WaitingOnMe)
		}
		clock.advance(45 * time.Minute)
		in := must2[Inbox](t)(db.Inbox(ctx, dash))
		if len(in.WaitingOnMe) != 2 || in.WaitingOnMe[0].Item != "second" || in.WaitingOnMe[0].OverdueBy != "15m" ||
			!slices.Equal(in.WaitingOnMe[0].NotAcked, []string{"node-dash"}) || in.WaitingOnMe[0].Needs != NeedAck {
			t.Errorf("consumer's inbox: want [second] first, 15m overdue, not acked by node-dash: %+v", in.WaitingOnMe)
		}
		if in.State != "" {
			t.Errorf("an inbox with a due time is kept under state %q: the clock alone changes it", in.State)
		}
		raiser := must2[Inbox](t)(db.Inbox(ctx, gw))
		if len(raiser.WaitingOnPeer) != 2 || raiser.WaitingOnPeer[0].Item != "second" || !slices.Equal(raiser.WaitingOnPeer[0].NotAcked, []string{"node-dash"}) {
			t.Errorf("raiser's inbox: want [second] first, not acked by node-dash: %+v", raiser.WaitingOnPeer)
		}
		var second Message
		for _, m := range readAll(t, db, dash, "gw--dash").Messages {
			if m.Slug == "second" {
				second = m
			}
		}
		if second.OverdueBy != "15m" || second.Due == "" {
			t.Errorf("read: %+v", second.Dues)
		}
		r := openRO(t, db.Path())
		p, err := r.Pending(ctx, dash.Workspace, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.WaitingOnMe) != 2 || p.WaitingOnMe[0].Item != "second" || !p.WaitingOnMe[0].Overdue() {
			t.Errorf("the hook's view: %+v", p.WaitingOnMe)
		}
		// An ack settles it: nothing owed, nothing overdue.
		must(t)(db.Ack(ctx, dash, "second", "", ""))
		for _, w := range must2[Inbox](t)(db.Inbox(ctx, gw)).WaitingOnMe {
			if w.Item == "second" && (w.Overdue() || w.NotAcked != nil) {
				t.Errorf("acked, still overdue: %+v", w)
			}
		}
	})
}

// The ladder fires each stage once, at its time: overdue at the due time,
// the raiser's at raiser_after, the person's at person_after; its clock
// arms for the next; the raiser then needs to decide.
func TestLadderFiresEachStageOnce(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		start := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
		db, clock := clockedWorld(t, start)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Is the enum closed?", Body: "b", Slug: "enum", Due: "10m"}))
		due := start.Add(10 * time.Minute)
		expectNext(t, db, due)
		if fired := advance(t, db); len(fired) != 0 {
			t.Fatalf("before the due time: %+v", fired)
		}
		for _, step := range []struct {
			at      time.Time
			stage   string
			forWhom []string
			next    time.Time
		}{
			{due, StageOverdue, []string{"node-dash"}, due.Add(15 * time.Minute)},
			{due.Add(15 * time.Minute), StageRaiser, []string{"mesh-gw"}, due.Add(time.Hour)},
			{due.Add(time.Hour), StagePerson, []string{"node-dash"}, time.Time{}},
		} {
			clock.set(step.at.Add(time.Second))
			fired := advance(t, db)
			if len(fired) != 1 || fired[0].Stage != step.stage || !slices.Equal(fired[0].For, step.forWhom) || fired[0].Late() != 0 ||
				fired[0].Item != "enum" || !fired[0].Planned.Equal(step.at) {
				t.Fatalf("at %s: fired %+v, want %s for %v", step.at, fired, step.stage, step.forWhom)
			}
			if again := advance(t, db); len(again) != 0 {
				t.Fatalf("%s fired twice: %+v", step.stage, again)
			}
			expectNext(t, db, step.next)
			if step.stage == StageOverdue {
				if w := must2[Inbox](t)(db.Inbox(ctx, gw)).WaitingOnMe; len(w) != 0 {
					t.Errorf("overdue alone asks nothing of the raiser yet: %+v", w)
				}
			}
			if step.stage == StageRaiser {
				w := must2[Inbox](t)(db.Inbox(ctx, gw)).WaitingOnMe
				if len(w) != 1 || w[0].Needs != NeedDecide || w[0].Stage != StageRaiser {
					t.Errorf("the raiser woken must decide: %+v", w)
				}
				if who := must2[Whoami](t)(db.Whoami(ctx, gw, "")); who.WaitingOnMe != 1 {
					t.Errorf("whoami counts %d waiting on the raiser", who.WaitingOnMe)
				}
			}
		}
		m := readAll(t, db, gw, "gw--dash").Messages[0]
		var stages []string
		for _, n := range m.Escalation {
			stages = append(stages, n.Stage+":"+strings.Join(n.For, ",")+":"+n.LateBy)
		}
		if want := []string{"overdue:node-dash:", "raiser:mesh-gw:", "person:node-dash:"}; !slices.Equal(stages, want) || m.Stage != StagePerson {
			t.Errorf("the item's record = %v (stage %q), want %v", stages, m.Stage, want)
		}
	})
}

// Many processes advance the same store at once: each stage fires once.
func TestLadderStagesFireOnceAcrossProcesses(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		start := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
		db, clock := clockedWorld(t, start)
		ctx := context.Background()
		for _, slug := range []string{"a", "b", "c"} {
			must(t)(db.Ask(ctx, gw, AskArgs{Title: slug, Body: "b", Slug: slug, Due: "10m"}))
		}
		var handles []*DB
		for range 8 {
			other := secondHandleWith(t, db, Options{Clock: clock.now})
			handles = append(handles, other)
		}
		var mu sync.Mutex
		count := map[string]int{}
		for _, step := range []time.Duration{11 * time.Minute, 26 * time.Minute, 71 * time.Minute} {
			clock.set(start.Add(step))
			var wg sync.WaitGroup
			for _, h := range handles {
				wg.Add(1)
				go func() {
					defer wg.Done()
					fired, err := h.Advance(ctx, ladder)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					for _, f := range fired {
						count[f.Item+":"+f.Stage]++
					}
					mu.Unlock()
				}()
			}
			wg.Wait()
		}
		if len(count) != 9 {
			t.Errorf("stages fired: %v, want overdue, raiser and person of a, b and c", count)
		}
		for k, n := range count {
			if n != 1 {
				t.Errorf("%s fired %d times", k, n)
			}
		}
	})
}

// With no process running at a stage's time, the next to start fires what
// was missed, each stage once, and says how late.
func TestMissedStagesFireOnceAndSayHowLate(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		start := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
		db, clock := clockedWorld(t, start)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Is the enum closed?", Body: "b", Slug: "enum", Due: "10m"}))
		clock.set(start.Add(3 * time.Hour))
		fired := advance(t, db)
		var got []string
		for _, f := range fired {
			got = append(got, f.Stage+" "+Late(f.Late()))
		}
		if want := []string{"overdue 2h50m", "raiser 2h35m", "person 1h50m"}; !slices.Equal(got, want) {
			t.Errorf("fired %v, want %v", got, want)
		}
		if again := advance(t, db); len(again) != 0 {
			t.Errorf("fired again: %+v", again)
		}
		if _, ok, _ := db.NextDue(ctx); ok {
			t.Error("the ladder is over, yet the clock is armed")
		}
		for _, n := range readAll(t, db, gw, "gw--dash").Messages[0].Escalation {
			if n.LateBy == "" {
				t.Errorf("%s does not say how late it fired", n.Stage)
			}
		}
	})
}

// An item nobody owes an ack by its due time ends its ladder without a
// stage: acked in time, resolved, or acked after it was overdue.
func TestLadderEndsWhenNoAckIsOwed(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		start := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
		db, clock := clockedWorld(t, start)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "acked", Body: "b", Due: "10m"}))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "resolved", Body: "b", Due: "10m"}))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "late", Body: "b", Due: "10m"}))
		must(t)(db.Reply(ctx, dash, "acked", "yes", "")) // a reply that auto-acks counts
		must(t)(db.Resolve(ctx, gw, "resolved", "", false, ""))
		clock.advance(11 * time.Minute)
		fired := advance(t, db)
		if len(fired) != 1 || fired[0].Item != "late" || fired[0].Stage != StageOverdue {
			t.Fatalf("fired %+v, want only [late] overdue", fired)
		}
		must(t)(db.Ack(ctx, dash, "late", "", ""))
		clock.advance(time.Hour)
		if fired := advance(t, db); len(fired) != 0 {
			t.Errorf("acked after its overdue stage, yet fired %+v", fired)
		}
		if _, ok, _ := db.NextDue(ctx); ok {
			t.Error("no ack is owed, yet the clock is armed")
		}
	})
}

// chat_due: the raiser sets, changes or clears a due time; a new one
// starts the ladder afresh; nobody else may, and bad input writes nothing.
func TestSetDue(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		start := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
		db, clock := clockedWorld(t, start)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Is the enum closed?", Body: "b", Slug: "enum"}))
		st, err := db.SetDue(ctx, gw, DueArgs{Item: "enum", Due: "10m"})
		if err != nil || st.Due != "2026-07-30T10:10:00.000000+00:00" || st.Unchanged {
			t.Fatalf("set: %+v, %v", st.Dues, err)
		}
		clock.advance(11 * time.Minute)
		if fired := advance(t, db); len(fired) != 1 {
			t.Fatalf("fired %+v", fired)
		}
		st, err = db.SetDue(ctx, gw, DueArgs{Item: "enum", Due: "2026-07-30T12:00:00Z"})
		if err != nil || st.Overdue() || st.Stage != "" {
			t.Fatalf("a new due time starts the ladder afresh: %+v, %v", st.Dues, err)
		}
		expectNext(t, db, time.Date(2026, 7, 30, 12, 0, 0, 0, time.UTC))
		before := kinds(readAll(t, db, gw, "gw--dash"))
		_, err = db.SetDue(ctx, dash, DueArgs{Item: "enum", Due: "1h"})
		refused(t, err, "only the raiser (mesh-gw) sets the due time of [enum]")
		_, err = db.SetDue(ctx, gw, DueArgs{Item: "enum", Due: "whenever"})
		refused(t, err, "neither a duration nor a time")
		if after := kinds(readAll(t, db, gw, "gw--dash")); !slices.Equal(before, after) {
			t.Errorf("refused calls wrote: %v", after[len(before):])
		}
		st, err = db.SetDue(ctx, gw, DueArgs{Item: "enum"})
		if err != nil || st.Due != "" || st.Unchanged {
			t.Fatalf("clear: %+v, %v", st, err)
		}
		if _, ok, _ := db.NextDue(ctx); ok {
			t.Error("cleared, yet the clock is armed")
		}
		st, err = db.SetDue(ctx, gw, DueArgs{Item: "enum"})
		if err != nil || !st.Unchanged {
			t.Errorf("clearing again: %+v, %v", st, err)
		}
		events := kinds(readAll(t, db, gw, "gw--dash"))
		want := []string{"event:[enum] due 2026-07-30 10:10 UTC, set by mesh-gw", "event:[enum] due 2026-07-30 12:00 UTC, set by mesh-gw", "event:[enum] due time cleared by mesh-gw"}
		var got []string
		for _, e := range events {
			if strings.Contains(e, "due") {
				got = append(got, e)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("events = %v, want %v", got, want)
		}
		must(t)(db.Ack(ctx, dash, "enum", "", ""))
		_, err = db.SetDue(ctx, gw, DueArgs{Item: "enum", Due: "1h"})
		refused(t, err, "every consumer of [enum] acked it")
	})
}

// chat_reassign: the raiser replaces a consumer who has not acked by
// another seated party; recorded on the item and posted; the new consumer
// owes the ack.
func TestReassign(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		start := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
		db, _ := clockedWorld(t, start)
		ctx := context.Background()
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Is the enum closed?", Body: "b", Slug: "enum", Consumers: []string{"node-dash"}, Due: "10m"}))
		before := kinds(readAll(t, db, gw, "gw--dash"))
		for _, c := range []struct {
			who            Identity
			from, to, want string
		}{
			{dash, "node-dash", "fw-core", "only the raiser (mesh-gw) reassigns [enum]"},
			{gw, "mesh-gw", "fw-core", "the raiser stays one of its consumers"},
			{gw, "fw-core", "node-dash", "'fw-core' is not a consumer of [enum]"},
			{gw, "node-dash", "node-dash", "'node-dash' already consumes [enum]"},
			{gw, "node-dash", "nobody", "'nobody' does not sit in 'gw--dash'"},
		} {
			_, err := db.Reassign(ctx, c.who, ReassignArgs{Item: "enum", Consumer: c.from, To: c.to})
			refused(t, err, c.want)
		}
		if after := kinds(readAll(t, db, gw, "gw--dash")); !slices.Equal(before, after) {
			t.Errorf("refused calls wrote: %v", after[len(before):])
		}
		st, err := db.Reassign(ctx, gw, ReassignArgs{Item: "enum", Consumer: "node-dash", To: "fw-core"})
		if err != nil || !slices.Equal(st.AwaitingAckFrom, []string{"fw-core"}) || st.Due == "" {
			t.Fatalf("reassign: %+v, %v", st, err)
		}
		if w := must2[Inbox](t)(db.Inbox(ctx, fw)).WaitingOnMe; len(w) != 1 || w[0].Needs != NeedAck {
			t.Errorf("fw-core owes the ack now: %+v", w)
		}
		if w := must2[Inbox](t)(db.Inbox(ctx, dash)).WaitingOnMe; len(w) != 0 {
			t.Errorf("node-dash owes nothing now: %+v", w)
		}
		r := readAll(t, db, fw, "gw--dash")
		if last := r.Messages[len(r.Messages)-1]; last.Body != "[enum] reassigned from node-dash to fw-core by mesh-gw" {
			t.Errorf("last message = %q", last.Body)
		}
		notes := r.Messages[1].Escalation // after fw-core's join
		if len(notes) != 1 || notes[0].Stage != StageReassigned || !slices.Equal(notes[0].For, []string{"node-dash", "fw-core"}) {
			t.Errorf("record = %+v", notes)
		}
		_, err = db.Reassign(ctx, gw, ReassignArgs{Item: "enum", Consumer: "fw-core", To: "node-dash"})
		if err != nil {
			t.Errorf("a second reassignment: %v", err)
		}
		must(t)(db.Ack(ctx, dash, "enum", "", ""))
		_, err = db.Reassign(ctx, gw, ReassignArgs{Item: "enum", Consumer: "node-dash", To: "fw-core"})
		refused(t, err, "every consumer of [enum] acked it")
	})
}

// secondHandleWith is secondHandle with options (a clock).
func secondHandleWith(t *testing.T, db *DB, o Options) *DB {
	t.Helper()
	open := func() (*DB, error) { return OpenWith(context.Background(), db.Path(), o) }
	if isPostgres(db) {
		open = func() (*DB, error) { return OpenPostgres(context.Background(), db.Path(), o) }
	}
	other, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}

func advance(t *testing.T, db *DB) []Fired {
	t.Helper()
	fired, err := db.Advance(context.Background(), ladder)
	if err != nil {
		t.Fatal(err)
	}
	return fired
}

// expectNext checks when the clock arms for: at, or nothing when at is zero.
func expectNext(t *testing.T, db *DB, at time.Time) {
	t.Helper()
	next, ok, err := db.NextDue(context.Background())
	switch {
	case err != nil:
		t.Fatal(err)
	case at.IsZero() && ok:
		t.Errorf("armed for %s, want nothing", next)
	case !at.IsZero() && (!ok || !next.Equal(at)):
		t.Errorf("armed for %s (%v), want %s", next, ok, at)
	}
}

// migrate's copy into a team store brings the due times and what their
// ladders recorded along; a database from before them copies as before.
func TestCopyToPostgresKeepsDueTimes(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
	clock := newFakeClock(start)
	src := filepath.Join(t.TempDir(), "chat.db")
	db, err := OpenWith(ctx, src, Options{Clock: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []Identity{gw, dash} {
		must(t)(db.Register(ctx, id))
	}
	must(t)(db.ChannelNew(ctx, gw, "gw--dash", "", []string{"node-dash"}))
	must(t)(db.Ask(ctx, gw, AskArgs{Title: "enum", Body: "b", Slug: "enum", Due: "10m"}))
	clock.advance(11 * time.Minute)
	if fired := advance(t, db); len(fired) != 1 {
		t.Fatalf("fired %+v", fired)
	}
	db.Close()
	from := openRO(t, src)
	to, _ := openPGStore(t)
	copied, err := CopyTo(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if copied.Rows["item_due"] != 1 || copied.Rows["item_stages"] != 1 || !strings.Contains(copied.String(), "1 due time, 1 escalation stage") {
		t.Errorf("copied %v", copied)
	}
	expectNext(t, to, start.Add(25*time.Minute))
	m := readAll(t, to, gw, "gw--dash").Messages[0]
	if m.Due != "2026-07-30T10:10:00.000000+00:00" || len(m.Escalation) != 1 || m.Escalation[0].Stage != StageOverdue {
		t.Errorf("copied item: %+v %+v", m.Dues, m.Escalation)
	}
}

// A done item shows no due time: it asks nothing of anyone any more.
func TestDoneItemShowsNoDueTime(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db, clock := clockedWorld(t, time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC))
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "enum", Body: "b", Slug: "enum", Due: "10m"}))
		clock.advance(time.Hour)
		st, err := db.Resolve(ctx, gw, "enum", "", false, "")
		if err != nil || st.Due != "" || st.Overdue() {
			t.Errorf("resolved: %+v, %v", st.Dues, err)
		}
		for _, w := range must2[Inbox](t)(db.Inbox(ctx, dash)).WaitingOnMe {
			if w.Due != "" {
				t.Errorf("a done item waiting on a prune-ok shows its due time: %+v", w)
			}
		}
	})
}
