package hook

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// setNow moves the hook's clock for the test.
func setNow(t *testing.T, at time.Time) {
	t.Helper()
	was := now
	now = func() time.Time { return at }
	t.Cleanup(func() { now = was })
}

var due = time.Date(2026, 7, 30, 10, 30, 0, 0, time.UTC)

// pendingWithDue is pendingFor with a second item, due at due.
func pendingWithDue() store.Pending {
	p := pendingFor()
	w := needs("tls", "Can we move to TLS 1.3?", "mesh-gw", 5, store.NeedAck)
	w.Due = store.Timestamp(due)
	p.WaitingOnMe = append(p.WaitingOnMe, w)
	return p
}

// An item past its due time is OVERDUE from the time alone: put first,
// with how late, and news again once — a prompt tells it again, Stop
// blocks once more, and no more after that.
func TestOverdueIsToldOnceMore(t *testing.T) {
	setNow(t, due.Add(-10*time.Minute))
	var s session
	first := decodeContext(t, s.respond(UserPromptSubmit, pendingWithDue())).HookSpecificOutput.AdditionalContext
	mustContain(t, first, `[tls] "Can we move to TLS 1.3?" from mesh-gw — needs your ack by 2026-07-30 10:30 UTC`)
	if strings.Contains(first, "OVERDUE") {
		t.Errorf("overdue before its time:\n%s", first)
	}
	decodeBlock(t, s.respond(Stop, pendingWithDue()))
	if out := s.respond(Stop, pendingWithDue()); out != "" {
		t.Fatalf("blocked twice before the due time: %s", out)
	}

	setNow(t, due.Add(25*time.Minute))
	b := decodeBlock(t, s.respond(Stop, pendingWithDue()))
	mustContain(t, b.Reason, `[tls] "Can we move to TLS 1.3?" from mesh-gw — OVERDUE by 25m: needs your ack (due 2026-07-30 10:30 UTC)`)
	mustContain(t, b.SystemMessage, `[tls] "Can we move to TLS 1.3?" needs your ack, OVERDUE by 25m`)
	if strings.Index(b.Reason, "[tls]") > strings.Index(b.Reason, "[chunk-api] \"Is the enum closed?\" from") {
		t.Errorf("the overdue item is not first:\n%s", b.Reason)
	}
	if out := s.respond(Stop, pendingWithDue()); out != "" {
		t.Fatalf("blocked a third time for the same overdue item: %s", out)
	}
	// The model read the block: the next prompt does not repeat it.
	if out := s.respond(UserPromptSubmit, pendingWithDue()); out != "" {
		t.Fatalf("the prompt after the block repeated it:\n%s", out)
	}
	// A session that only had prompts is told it once, first.
	var other session
	setNow(t, due.Add(-time.Minute))
	other.respond(UserPromptSubmit, pendingWithDue())
	setNow(t, due.Add(time.Minute))
	next := decodeContext(t, other.respond(UserPromptSubmit, pendingWithDue())).HookSpecificOutput.AdditionalContext
	mustContain(t, next, "New since the last note", "[tls]", "OVERDUE by 1m")
	if strings.Contains(next, "[chunk-api]") {
		t.Errorf("told the item that is not overdue again:\n%s", next)
	}
	if out := other.respond(UserPromptSubmit, pendingWithDue()); out != "" {
		t.Errorf("told twice:\n%s", out)
	}
}

// The raiser the ladder woke is told to decide, once, in its headline too.
func TestRaiserIsToldToDecide(t *testing.T) {
	setNow(t, due.Add(20*time.Minute))
	w := needs("tls", "Can we move to TLS 1.3?", "mesh-gw", 5, store.NeedDecide)
	w.Due, w.OverdueBy, w.NotAcked, w.Stage = store.Timestamp(due), "15m", []string{"node-dash"}, store.StageRaiser
	p := store.Pending{Party: "mesh-gw", Workspace: "/srv/mesh-gw", WaitingOnMe: []store.WaitingOnMe{w}}
	var s session
	b := decodeBlock(t, s.respond(Stop, p))
	mustContain(t, b.Reason, `[tls] "Can we move to TLS 1.3?" from mesh-gw — yours, OVERDUE by 20m (due 2026-07-30 10:30 UTC): not acked by node-dash; decide: more time (chat_due), another consumer (chat_reassign) or resolve it (chat_resolve)`)
	if want := `mcpp-chat: mesh-gw, your item [tls] "Can we move to TLS 1.3?" is OVERDUE by 20m: not acked by node-dash — decide`; b.SystemMessage != want {
		t.Errorf("headline %q, want %q", b.SystemMessage, want)
	}
	if out := s.respond(Stop, p); out != "" {
		t.Errorf("blocked twice: %s", out)
	}
}

// A waiter wakes when an item waiting on the session's ack becomes
// overdue, with no write to the database and no process running the
// ladder's clock: the due time alone.
func TestWaiterWakesAtTheDueTime(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.db.Ask(ctx, f.gw, store.AskArgs{Title: "Can we move to TLS 1.3?", Body: "b", Slug: "tls", Due: "2s"}); err != nil {
		t.Fatal(err)
	}
	if out := f.run(t, Stop, "s1"); !strings.Contains(out, "needs your ack by") { // blocked for the ask, not yet overdue
		t.Fatalf("Stop: %s", out)
	}
	w := f.waiter(ctx, "s1", time.Minute)
	w.waitLook(t)
	select {
	case code := <-w.done:
		if code != ExitWake {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiter did not wake at the due time")
	}
	mustContain(t, w.stderr.String(), `[tls] "Can we move to TLS 1.3?" from mesh-gw — OVERDUE by`)
}

// A prompt's quiet mark — nothing new at this state — ends at the due
// time of an item waiting on the session: the database unchanged, the
// item is overdue now.
func TestQuietEndsAtTheDueTime(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.db.Ask(ctx, f.gw, store.AskArgs{Title: "Can we move to TLS 1.3?", Body: "b", Slug: "tls", Due: "1h"}); err != nil {
		t.Fatal(err)
	}
	f.letFilesAge(t)
	if out := f.run(t, UserPromptSubmit, "s1"); !strings.Contains(out, "needs your ack by") {
		t.Fatalf("first prompt: %s", out)
	}
	if out := f.run(t, UserPromptSubmit, "s1"); out != "" {
		t.Fatalf("second prompt: %s", out)
	}
	setNow(t, time.Now().Add(61*time.Minute))
	if out := f.run(t, UserPromptSubmit, "s1"); !strings.Contains(out, "OVERDUE by 1m: needs your ack") {
		t.Fatalf("the prompt after the due time: %q", out)
	}
}
