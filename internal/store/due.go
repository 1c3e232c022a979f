package store

// Due times (docs/protocol.md, Due times and the ladder): an item may say
// by when each of its consumers must ack it. Past that time, while an ack
// is owed, the item is overdue wherever it shows, and the stages of the
// escalation ladder fire once each (ladder.go). The due time lives in a
// table of its own (item_due), never in the Python edition's: an item
// without one answers exactly as before.

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The stages of an item's ladder, as item_due and item_stages name them.
const (
	// StageDue: the due time has not come (no stage fired yet).
	StageDue = "due"
	// StageOverdue: the due time passed with an ack owed.
	StageOverdue = "overdue"
	// StageRaiser: the raiser was woken to decide.
	StageRaiser = "raiser"
	// StagePerson: a person was told.
	StagePerson = "person"
	// StageReassigned: the raiser replaced a consumer (not a stage of
	// the clock: recorded each time the raiser does it).
	StageReassigned = "reassigned"
)

// MaxDueAhead bounds how far ahead a due time may lie.
const MaxDueAhead = 366 * 24 * time.Hour

// dueKey is the key a commit wakes when it changes when the next stage of
// any item fires (an ask with a due time, chat_due, a stage fired): the
// processes that run the clock re-arm their timer at it, and no other
// commit of a team store wakes them. No party's or channel's key is it.
const dueKey int64 = math.MinInt64

// dueExamples ends every refusal of a due time.
const dueExamples = `pass a duration from now such as "30m", "2h" or "1d", or an RFC 3339 time such as "2026-07-30T10:00:00Z"`

// ParseDue reads a due time as chat_ask and chat_due take it: a duration
// from now ("30m", "2h", "1d", "1d12h") or an RFC 3339 time. It must lie
// in the future, at most MaxDueAhead from now.
func ParseDue(raw string, now time.Time) (time.Time, error) {
	s := strings.TrimSpace(raw)
	var due time.Time
	if span, ok := parseSpan(s); ok {
		due = now.Add(span)
	} else if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
		due = at
	} else {
		return time.Time{}, userErrorf("due %q is neither a duration nor a time — %s", raw, dueExamples)
	}
	switch {
	case !due.After(now):
		return time.Time{}, userErrorf("due %q is not in the future — %s", raw, dueExamples)
	case due.Sub(now) > MaxDueAhead:
		return time.Time{}, userErrorf("due %q lies more than %d days ahead — pass a nearer time", raw, int(MaxDueAhead/(24*time.Hour)))
	}
	return due.UTC(), nil
}

// parseSpan reads a duration as Go writes one, with whole days in front:
// "30m", "2h", "1d", "1d12h".
func parseSpan(s string) (time.Duration, bool) {
	var days int64
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n < 0 || n > 1e6 {
			return 0, false
		}
		days, s = n, s[i+1:]
		if s == "" {
			return time.Duration(days) * 24 * time.Hour, true
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, false
	}
	return time.Duration(days)*24*time.Hour + d, true
}

// Late is how late something is, in the fewest units that say it:
// "40s", "5m", "1h5m", "2d3h".
func Late(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d/time.Second), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	}
	days, h := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, h)
}

// Dues is what a due time adds to an item wherever it shows; an item
// without one carries none of its keys.
type Dues struct {
	// Due is by when each consumer must ack (a stored time, UTC).
	Due string `json:"due,omitempty"`
	// OverdueBy is how late the acks still owed are, once the due time
	// passed ("25m").
	OverdueBy string `json:"overdue_by,omitempty"`
	// NotAcked are the consumers who have not acked an overdue item.
	NotAcked []string `json:"not_acked,omitempty"`
	// Stage is the newest stage of the ladder fired for this due time:
	// overdue, raiser or person.
	Stage string `json:"stage,omitempty"`
}

// Overdue reports an item whose due time passed with an ack owed.
func (d Dues) Overdue() bool { return d.OverdueBy != "" }

// dueRow is an item's row of item_due.
type dueRow struct {
	due, stage string
}

// dues is what an item's due row says at now: its consumers and status
// decide whether an ack is still owed. A done item shows none: its due
// time no longer asks anything of anyone (its ladder's record stays).
func dues(r dueRow, status string, consumers []Consumer, now time.Time) Dues {
	if status == "done" {
		return Dues{}
	}
	d := Dues{Due: r.due}
	if r.stage != StageDue {
		d.Stage = r.stage
	}
	at, err := time.Parse(time.RFC3339Nano, r.due)
	if err != nil || now.Before(at) {
		return d
	}
	for _, c := range consumers {
		if !c.Acked {
			d.NotAcked = append(d.NotAcked, c.Party)
		}
	}
	if len(d.NotAcked) > 0 {
		d.OverdueBy = Late(now.Sub(at))
	}
	return d
}

// nowTime is the transaction's time as a time.
func (t *tx) nowTime() time.Time {
	at, err := time.Parse(time.RFC3339Nano, t.now)
	if err != nil {
		return time.Now()
	}
	return at
}

// attachDues gives the items among msgs their due times and what their
// ladders recorded (for chat_read, the hook and the person's views), read
// in one query.
func (t *tx) attachDues(msgs []Message, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	list := idList(ids)
	rows, err := t.query(`SELECT message_id, 0 AS n, due_at, stage, '', '', '' FROM item_due WHERE message_id IN (SELECT value FROM json_each(?))
		UNION ALL
		SELECT message_id, id, stage, planned_at, at, parties, coalesce(outcome, '') FROM item_stages WHERE message_id IN (SELECT value FROM json_each(?))
		ORDER BY 2`, list, list)
	if err != nil {
		return err
	}
	defer rows.Close()
	due := map[int64]dueRow{}
	notes := map[int64][]StageNote{}
	for rows.Next() {
		var id, n int64
		var a, b, c, d, e string
		if err := rows.Scan(&id, &n, &a, &b, &c, &d, &e); err != nil {
			return err
		}
		if n == 0 {
			due[id] = dueRow{due: a, stage: b}
			continue
		}
		notes[id] = append(notes[id], StageNote{Stage: a, At: c, LateBy: lateBy(b, c), For: splitNames(d), Outcome: e})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	now := t.nowTime()
	for i := range msgs {
		m := &msgs[i]
		if m.Kind != "ask" {
			continue
		}
		if r, ok := due[m.id]; ok {
			m.Dues = dues(r, m.Status, m.Consumers, now)
		}
		m.Escalation = notes[m.id]
	}
	return nil
}

// StageNote is one stage of an item's ladder, as chat_read, log and the
// page show it.
type StageNote struct {
	Stage string `json:"stage"`
	At    string `json:"at"`
	// LateBy says how long after its time the stage fired: no process
	// ran the clock then, and the next to start fired it.
	LateBy string `json:"late_by,omitempty"`
	// For are the parties the stage concerned: the consumers who had not
	// acked (overdue, person), the raiser (raiser), the one replaced and
	// the one who took its place (reassigned).
	For []string `json:"for"`
	// Outcome is how the person was told (person).
	Outcome string `json:"outcome,omitempty"`
}

// Words is what the stage did, for a person or a model: "overdue: not
// acked by node-dash", "raiser mesh-gw woken to decide", "a person told
// (not acked by node-dash) — notify.command ok", "reassigned from
// node-dash to fw-core"; a stage fired late says how late.
func (n StageNote) Words() string {
	who := quoteList(n.For)
	var what string
	switch n.Stage {
	case StageOverdue:
		what = "overdue: not acked by " + who
	case StageRaiser:
		what = "raiser " + who + " woken to decide"
	case StagePerson:
		what = "a person told (not acked by " + who + ")"
		if n.Outcome != "" {
			what += " — " + n.Outcome
		}
	case StageReassigned:
		what = "reassigned from " + strings.Join(n.For, " to ")
	default:
		what = n.Stage
	}
	if n.LateBy != "" {
		what += " (" + n.LateBy + " late: no chat process was running)"
	}
	return what
}

// lateAfter is how long after its time a stage may fire and still count
// as on time: a timer's and a busy store's delay, not a process missing.
const lateAfter = 5 * time.Second

// lateBy is how much later than planned a stage fired, "" when on time.
func lateBy(planned, at string) string {
	p, err1 := time.Parse(time.RFC3339Nano, planned)
	a, err2 := time.Parse(time.RFC3339Nano, at)
	if err1 != nil || err2 != nil || a.Sub(p) < lateAfter {
		return ""
	}
	return Late(a.Sub(p))
}

func splitNames(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// idList is ids as the JSON array json_each reads.
func idList(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// overdueFirst puts the overdue items first, the longest overdue first,
// and keeps the order of the rest.
func overdueFirst[T any](list []T, dues func(T) Dues) {
	slices.SortStableFunc(list, func(a, b T) int {
		da, db := dues(a), dues(b)
		switch {
		case da.Overdue() && db.Overdue():
			return strings.Compare(da.Due, db.Due)
		case da.Overdue():
			return -1
		case db.Overdue():
			return 1
		}
		return 0
	})
}

// decides reports that the raiser of an item must decide on it: the
// ladder woke the raiser (or went on to tell a person) and an ack is
// still owed.
func decides(m Message, me string) bool {
	return m.From == me && m.Overdue() && (m.Stage == StageRaiser || m.Stage == StagePerson)
}

// setDue records an item's due time and starts its ladder afresh.
func (t *tx) setDue(itemID int64, due time.Time) error {
	at := Timestamp(due)
	_, err := t.exec(`INSERT INTO item_due (message_id, due_at, stage, next_at, set_at) VALUES (?1, ?2, 'due', ?2, ?3)
		ON CONFLICT (message_id) DO UPDATE SET due_at = excluded.due_at, stage = 'due', next_at = excluded.next_at, set_at = excluded.set_at`,
		itemID, at, t.now)
	t.wake(dueKey)
	return err
}

// askDue is the due time an ask asks for, read before anything is
// written; the zero time when it asks for none.
func (t *tx) askDue(a AskArgs) (time.Time, error) {
	if strings.TrimSpace(a.Due) == "" {
		return time.Time{}, nil
	}
	if a.Announce {
		return time.Time{}, userErrorf("an announcement needs no ack, so it has no due time — leave due out, or announce out to ask for acks by then")
	}
	return ParseDue(a.Due, t.nowTime())
}

// DueArgs are chat_due's arguments; an empty Due clears the item's due
// time.
type DueArgs struct {
	Item, Due      string
	DefaultChannel string
}

// SetDue sets, changes or clears an item's due time: the raiser's call.
// A new due time starts the ladder afresh; what the old one's stages
// recorded stays in the item's history.
func (d *DB) SetDue(ctx context.Context, me Identity, a DueArgs) (ItemState, error) {
	var out ItemState
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		x, err := t.findItem(p, a.Item, a.DefaultChannel)
		if err != nil {
			return err
		}
		if err := t.raiserAct(x, p, "sets the due time of"); err != nil {
			return err
		}
		clear := strings.TrimSpace(a.Due) == ""
		if !clear {
			if err := t.owesAcks(x, "a due time is for acks still owed"); err != nil {
				return err
			}
		}
		changed, event, err := t.changeDue(x, a.Due, clear)
		if err != nil {
			return err
		}
		if !changed {
			out, err = t.itemState(x.id)
			out.Unchanged = true
			return err
		}
		if _, _, err := t.post(x.ch, p, post{kind: "event", body: fmt.Sprintf("[%s] %s by %s", x.slug, event, p.name)}); err != nil {
			return err
		}
		out, err = t.itemState(x.id)
		return err
	})
	return out, err
}

// changeDue sets or clears x's due time and says what it did, for the
// event; changed is false when there was nothing to clear.
func (t *tx) changeDue(x target, raw string, clear bool) (changed bool, event string, err error) {
	if clear {
		res, err := t.exec(`DELETE FROM item_due WHERE message_id = ?`, x.id)
		if err != nil {
			return false, "", err
		}
		n, _ := res.RowsAffected()
		t.wake(dueKey)
		return n > 0, "due time cleared", nil
	}
	due, err := ParseDue(raw, t.nowTime())
	if err != nil {
		return false, "", err
	}
	return true, "due " + due.Format("2006-01-02 15:04 UTC") + ", set", t.setDue(x.id, due)
}

// raiserAct refuses anyone but the raiser, and an archived item.
func (t *tx) raiserAct(x target, p party, action string) error {
	if x.archived {
		return errArchived(x)
	}
	if x.authorID == p.id {
		return nil
	}
	var raiser string
	if err := t.row(`SELECT name FROM parties WHERE id = ?`, x.authorID).Scan(&raiser); err != nil {
		return err
	}
	return userErrorf("only the raiser (%s) %s %s — ask it with chat_reply if it should", raiser, action, x.label())
}

// owesAcks refuses an item that waits on no ack: done, or acked by all.
func (t *tx) owesAcks(x target, why string) error {
	if x.status == "done" {
		return userErrorf("%s is done, so nobody owes an ack — %s", x.label(), why)
	}
	var owed bool
	if err := t.row(`SELECT EXISTS (SELECT 1 FROM item_consumers WHERE message_id = ? AND acked_at IS NULL)`, x.id).Scan(&owed); err != nil {
		return err
	}
	if !owed {
		return userErrorf("every consumer of %s acked it, so nobody owes an ack — %s; resolve it with chat_resolve once you are satisfied", x.label(), why)
	}
	return nil
}

// ReassignArgs are chat_reassign's arguments: Consumer is the one
// replaced, To the party that takes its place.
type ReassignArgs struct {
	Item, Consumer, To string
	DefaultChannel     string
}

// Reassign replaces a consumer who has not acked an item by another party
// seated in its channel: the raiser's call. It is recorded on the item
// and posted as an event, which both parties see; the item then waits on
// the new consumer, and its due time stays as it was.
func (d *DB) Reassign(ctx context.Context, me Identity, a ReassignArgs) (ItemState, error) {
	var out ItemState
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		x, err := t.findItem(p, a.Item, a.DefaultChannel)
		if err != nil {
			return err
		}
		if err := t.raiserAct(x, p, "reassigns"); err != nil {
			return err
		}
		if err := t.owesAcks(x, "there is no ack to reassign"); err != nil {
			return err
		}
		from, to, err := t.reassignees(x, p, strings.TrimSpace(a.Consumer), strings.TrimSpace(a.To))
		if err != nil {
			return err
		}
		if _, err := t.exec(`DELETE FROM item_consumers WHERE message_id = ? AND party_id = ?`, x.id, from.id); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT INTO item_consumers (message_id, party_id) VALUES (?, ?)`, x.id, to.id); err != nil {
			return err
		}
		var due sql.NullString
		if err := t.row(`SELECT (SELECT due_at FROM item_due WHERE message_id = ?)`, x.id).Scan(&due); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT INTO item_stages (message_id, stage, due_at, planned_at, at, parties) VALUES (?, ?, ?, ?, ?, ?)`,
			x.id, StageReassigned, due, t.now, t.now, from.name+","+to.name); err != nil {
			return err
		}
		if _, _, err := t.post(x.ch, p, post{kind: "event", body: fmt.Sprintf("[%s] reassigned from %s to %s by %s", x.slug, from.name, to.name, p.name)}); err != nil {
			return err
		}
		out, err = t.itemState(x.id)
		return err
	})
	return out, err
}

// reassignees checks chat_reassign's consumer and to: the consumer a
// consumer of x who has not acked (never the raiser), to a party seated in
// x's channel that does not consume x yet.
func (t *tx) reassignees(x target, raiser party, fromName, toName string) (from, to party, err error) {
	consumers, err := t.names(`SELECT p.name FROM item_consumers ic JOIN parties p ON p.id = ic.party_id WHERE ic.message_id = ? ORDER BY p.name`, x.id)
	if err != nil {
		return from, to, err
	}
	if fromName == raiser.name {
		return from, to, userErrorf("you raised %s, and the raiser stays one of its consumers — name as consumer one who has not acked (%s)", x.label(), quoteList(without(consumers, raiser.name)))
	}
	if !contains(consumers, fromName) {
		return from, to, userErrorf("'%s' is not a consumer of %s — name one of its consumers as consumer (%s)", fromName, x.label(), quoteList(without(consumers, raiser.name)))
	}
	if from, err = t.partyByName(fromName, false); err != nil {
		return from, to, err
	}
	if row, _, err := t.consumerRow(x.id, from.id); err != nil || row.acked {
		if err == nil {
			err = userErrorf("'%s' has acked %s already — only a consumer who has not acked is reassigned", fromName, x.label())
		}
		return from, to, err
	}
	seated, err := t.seatedNames(x.ch.id)
	if err != nil {
		return from, to, err
	}
	switch {
	case contains(consumers, toName):
		return from, to, userErrorf("'%s' already consumes %s — name as to a party seated in '%s' that does not (%s)", toName, x.label(), x.ch.name, quoteList(notIn(seated, consumers)))
	case !contains(seated, toName):
		return from, to, userErrorf("'%s' does not sit in '%s' — name as to a party seated there (%s)", toName, x.ch.name, quoteList(notIn(seated, consumers)))
	}
	to, err = t.partyByName(toName, false)
	return from, to, err
}

// notIn is list without the names in other.
func notIn(list, other []string) []string {
	var out []string
	for _, x := range list {
		if !contains(other, x) {
			out = append(out, x)
		}
	}
	return out
}

// timely reports an answer that the clock alone changes: an item with a
// due time is overdue, and by how much, at whatever time it is read, while
// the store's state stays where it was. Such an answer is never kept.
func timely(answer any) bool {
	in, ok := answer.(Inbox)
	if !ok {
		return false
	}
	// A claim ends by the clock too.
	return len(in.ClaimsHeld)+len(in.ClaimsAwaited) > 0 ||
		slices.ContainsFunc(in.WaitingOnMe, func(w WaitingOnMe) bool { return w.Due != "" }) ||
		slices.ContainsFunc(in.WaitingOnPeer, func(w WaitingOnPeer) bool { return w.Due != "" })
}

// ClockKeys are the keys whose commits concern the processes that run the
// ladder's clock (escalation.Clock): on a team store no other commit wakes
// them.
func ClockKeys() []int64 { return []int64{dueKey} }
