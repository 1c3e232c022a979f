package store

// The escalation ladder (docs/protocol.md, Due times and the ladder): at
// an item's due time, while an ack is owed, it is overdue; escalation's
// raiser_after later the raiser is woken to decide; person_after later a
// person is told. Every process that runs the clock (each serve, each
// hub) arms one timer at NextDue and calls Advance when it fires; each
// stage is claimed in the transaction that records it, so however many
// processes race for it, it fires once. A process that starts after a
// stage's time fires it then, once, and the record says how late.

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// Ladder is when the stages after an item's due time fire.
type Ladder struct {
	// RaiserAfter is how long after the due time the raiser is woken.
	RaiserAfter time.Duration
	// PersonAfter is how long after the due time a person is told; not
	// before RaiserAfter.
	PersonAfter time.Duration
}

// next is the stage that follows stage on an item due at due, and when the
// one after it fires (the zero time: none does).
func (l Ladder) next(stage string, due time.Time) (string, time.Time) {
	switch stage {
	case StageDue:
		return StageOverdue, due.Add(l.RaiserAfter)
	case StageOverdue:
		return StageRaiser, due.Add(max(l.PersonAfter, l.RaiserAfter))
	case StageRaiser:
		return StagePerson, time.Time{}
	}
	return "", time.Time{}
}

// Fired is a stage the clock fired: what the process that claimed it tells
// (a person, for the person stage) and logs.
type Fired struct {
	// ID is the stage's row, for its outcome (StageOutcome).
	ID      int64
	Stage   string
	Channel string
	Seq     int64
	Item    string
	Title   string
	Raiser  string
	// For are the parties the stage concerns (StageNote.For).
	For     []string
	Due     time.Time
	Planned time.Time
	At      time.Time
}

// Late is how long after its time the stage fired; 0 when on time.
func (f Fired) Late() time.Duration {
	if late := f.At.Sub(f.Planned); late >= lateAfter {
		return late
	}
	return 0
}

// NextDue is when the next stage of any item fires; ok is false when
// none will. One probe into the start of idx_item_due_next, however long
// the history.
func (d *DB) NextDue(ctx context.Context) (at time.Time, ok bool, err error) {
	err = d.read(ctx, func(t *tx) error {
		var next string
		err := t.row(`SELECT next_at FROM item_due WHERE next_at IS NOT NULL ORDER BY next_at LIMIT 1`).Scan(&next)
		if errors.Is(err, sql.ErrNoRows) {
			ok = false
			return nil
		}
		if err != nil {
			return err
		}
		at, err = time.Parse(time.RFC3339Nano, next)
		ok = err == nil
		return err
	})
	return at, ok, err
}

// Advance fires every stage whose time has come, by ladder l, and returns
// them in the order they fired. Each item is advanced in a transaction of
// its own, holding its channel: its stages are claimed there, so a stage
// another process claimed first is not fired again, and no two
// transactions wait on each other's channels. It reads only the items due
// now.
func (d *DB) Advance(ctx context.Context, l Ladder) ([]Fired, error) {
	var all []Fired
	for {
		var fired []Fired
		var found bool
		err := d.update(ctx, func(t *tx) error {
			fired = nil
			var id int64
			err := t.row(`SELECT message_id FROM item_due WHERE next_at IS NOT NULL AND next_at <= ? ORDER BY next_at, message_id LIMIT 1`, t.now).Scan(&id)
			if found = err == nil; !found {
				if errors.Is(err, sql.ErrNoRows) {
					return nil
				}
				return err
			}
			fired, err = t.advance(id, l)
			return err
		})
		if err != nil {
			return all, err
		}
		all = append(all, fired...)
		if !found {
			return all, nil
		}
	}
}

// advance fires the stages of item id whose time has come, or ends its
// ladder when nobody owes an ack any more.
func (t *tx) advance(id int64, l Ladder) ([]Fired, error) {
	x, err := scanTarget(t.row(`SELECT `+targetColumns+` FROM messages m JOIN channels c ON c.id = m.channel_id WHERE m.id = ?`, id))
	if err != nil {
		return nil, err
	}
	if _, err := t.lockChannel(x.ch.id); err != nil {
		return nil, err
	}
	// Read under the channel's lock: another process may have fired the
	// stage since the row was chosen.
	var due, stage string
	var next sql.NullString
	err = t.row(`SELECT due_at, stage, next_at FROM item_due WHERE message_id = ?`, id).Scan(&due, &stage, &next)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (!next.Valid || next.String > t.now)) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	owed, err := t.names(`SELECT p.name FROM item_consumers ic JOIN parties p ON p.id = ic.party_id
		WHERE ic.message_id = ? AND ic.acked_at IS NULL ORDER BY p.name`, id)
	if err != nil {
		return nil, err
	}
	if x.kind != "ask" || x.status == "done" || x.archived || len(owed) == 0 {
		// Nobody owes an ack: the ladder ends here, without a stage.
		_, err := t.exec(`UPDATE item_due SET next_at = NULL WHERE message_id = ?`, id)
		t.wake(dueKey)
		return nil, err
	}
	var raiser string
	if err := t.row(`SELECT name FROM parties WHERE id = ?`, x.authorID).Scan(&raiser); err != nil {
		return nil, err
	}
	var title string
	if err := t.row(`SELECT coalesce(title, '') FROM messages WHERE id = ?`, id).Scan(&title); err != nil {
		return nil, err
	}
	dueAt, err := time.Parse(time.RFC3339Nano, due)
	if err != nil {
		return nil, err
	}
	now := t.nowTime()
	var fired []Fired
	for next.Valid && next.String <= t.now {
		planned, err := time.Parse(time.RFC3339Nano, next.String)
		if err != nil {
			return nil, err
		}
		to, after := l.next(stage, dueAt)
		if to == "" {
			break
		}
		who := owed
		if to == StageRaiser {
			who = []string{raiser}
		}
		f := Fired{Stage: to, Channel: x.ch.name, Seq: x.seq, Item: x.slug, Title: title, Raiser: raiser, For: who, Due: dueAt, Planned: planned, At: now}
		if err := t.insert(&f.ID, `INSERT INTO item_stages (message_id, stage, due_at, planned_at, at, parties) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
			id, to, due, next.String, t.now, strings.Join(who, ",")); err != nil {
			return nil, err
		}
		next = sql.NullString{}
		if !after.IsZero() {
			next = sql.NullString{String: Timestamp(after), Valid: true}
		}
		if _, err := t.exec(`UPDATE item_due SET stage = ?, next_at = ? WHERE message_id = ?`, to, next, id); err != nil {
			return nil, err
		}
		stage = to
		fired = append(fired, f)
	}
	// The commit moves the channel's state: the consumers' hooks and
	// waiters look again, and so do the clocks of other processes.
	t.touch(x.ch.name, x.seq, raiser)
	t.wake(dueKey)
	return fired, nil
}

// StageOutcome records how a person was told of a stage (the person
// stage's outcome), once the process that fired it has told them.
func (d *DB) StageOutcome(ctx context.Context, id int64, outcome string) error {
	return d.update(ctx, func(t *tx) error {
		_, err := t.exec(`UPDATE item_stages SET outcome = ? WHERE id = ?`, outcome, id)
		return err
	})
}
