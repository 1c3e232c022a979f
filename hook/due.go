package hook

import (
	"fmt"
	"sort"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// Due times (docs/protocol.md, Due times and the ladder), as the hook
// tells them: an item past its due time is OVERDUE from the time alone —
// the hook reads, never writes, and needs no stage fired to say so — put
// first, and news again once, so that Stop blocks and an idle session is
// woken once more for it.

// now is the hook's clock; tests set it.
var now = time.Now

// overdue reports an item that waits on the party past its due time: as
// the store read it, or since (a hub's view is kept while its state stays).
func overdue(w store.WaitingOnMe) bool {
	if w.Overdue() {
		return true
	}
	at, ok := dueAt(w.Dues)
	return ok && (w.Needs == store.NeedAck || w.Needs == store.NeedDecide) && !now().Before(at)
}

func dueAt(d store.Dues) (time.Time, bool) {
	if d.Due == "" {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, d.Due)
	return at, err == nil
}

// overdueFirst puts what is overdue first, the longest overdue first, and
// keeps the store's order of the rest.
func overdueFirst(list []store.WaitingOnMe) []store.WaitingOnMe {
	out := append([]store.WaitingOnMe(nil), list...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := overdue(out[i]), overdue(out[j])
		if a && b {
			return out[i].Due < out[j].Due
		}
		return a && !b
	})
	return out
}

// nextDue is when the soonest item waiting on the party's ack becomes
// overdue; the zero time when none will. What a session was told stays
// true until then.
func nextDue(p store.Pending) time.Time {
	var soonest time.Time
	for _, w := range p.WaitingOnMe {
		at, ok := dueAt(w.Dues)
		if !ok || w.Needs != store.NeedAck || overdue(w) {
			continue
		}
		if soonest.IsZero() || at.Before(soonest) {
			soonest = at
		}
	}
	return soonest
}

// dueWords is what a due time adds to an item's line: " by 10:30 UTC",
// or the lateness of an overdue one.
func dueWords(w store.WaitingOnMe) string {
	at, ok := dueAt(w.Dues)
	switch {
	case !ok:
		return ""
	case overdue(w):
		return fmt.Sprintf(" (due %s)", at.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return " by " + at.UTC().Format("2006-01-02 15:04 UTC")
}

// lateness is how long an overdue item has been overdue: "25m".
func lateness(w store.WaitingOnMe) string {
	at, ok := dueAt(w.Dues)
	if !ok {
		return w.OverdueBy
	}
	return store.Late(now().Sub(at))
}

func overdueKey(w store.WaitingOnMe) string { return fmt.Sprintf("overdue/%s/%d", w.Channel, w.Seq) }

func decideKey(w store.WaitingOnMe) string { return fmt.Sprintf("decide/%s/%d", w.Channel, w.Seq) }
