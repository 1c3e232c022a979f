package store

import (
	"context"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// readCall is one read-type call — chat_read, chat_inbox, chat_whoami —
// as readAnswer runs it.
type readCall struct {
	me Identity
	// write makes the call a writer from the start (whoami setting its
	// about): BEGIN IMMEDIATE, and the party's last_seen written.
	write bool
	// key names the call's answer in the answer memo; "" keeps none.
	key string
	// ownView: the answer depends only on what the caller's party sees
	// (its channels and items), so on a team store the memo keeps it by
	// that party's state, which writes in other channels do not move.
	ownView bool
}

// readAnswer runs a read-type call: the archive sweep, then fn, in one
// transaction. The two memos that make these calls cheap depend on an
// order kept here, once, for all of them:
//
//  1. The fingerprint is taken before the transaction begins (readSweep;
//     on a team store the store's or the party's state), so that what the
//     call finds is recorded for a state no later than the one it read.
//  2. The answer memo is consulted then: at an unchanged fingerprint the
//     kept answer is the answer, and no transaction runs.
//  3. The sweep runs after the transaction's first read (t.me), which
//     fixes its snapshot; it is skipped while the sweep memo knows it
//     would find nothing at this state (readSweep.run).
//  4. Only once the call has committed is a sweep that found nothing
//     recorded (committed), and the answer kept — and only if no commit,
//     the call's own included, landed since step 1. A party's state on a
//     team store needs no second look: it names every write the answer
//     depends on and only moves forward, so a call that wrote nothing
//     keeps its answer under the state of step 1.
//
// state is the fingerprint the answer was read at, "" when unknown; fn
// may run more than once (see DB.view), so it returns its answer rather
// than adding to one.
func readAnswer[T any](ctx context.Context, d *DB, c readCall, fn func(t *tx, p party, swept []archived) (T, error)) (out T, state string, err error) {
	ps := partyStates(d.eng)
	byParty := c.ownView && ps != nil
	// One turn for the whole call: behind a busy pool it queues once.
	ctx, release, err := holdTurn(ctx, d.eng)
	if err != nil {
		return out, "", err
	}
	defer release()
	var known party // the party's row as the state's look found it
	memoState := func() string {
		var fp string
		var ok bool
		if byParty {
			var p engine.Party
			fp, p, ok = ps.PartyState(ctx, c.me.who())
			known = party{id: p.ID, name: p.Name, lastSeen: p.LastSeen}
		} else {
			fp, ok = d.eng.State()
		}
		if !ok {
			return ""
		}
		return fp
	}
	sweep := d.readSweep()
	var before string
	switch {
	case c.key != "" && sweep.known:
		before = sweep.fp // a cheap state: the sweep's look is the memo's
	case c.key != "" && !cheapState(d.eng):
		before = memoState() // the sweep keeps no state (readSweep): the memo asks
	}
	if v, ok := d.answers.lookup(before, c.key); ok {
		return v.(T), before, nil
	}
	run := d.view
	if c.write {
		run = d.update
	}
	var seen string
	var wrote bool
	err = run(ctx, func(t *tx) error {
		p, err := t.meKnown(c.me, c.write, known)
		if err != nil {
			return err
		}
		seen = p.lastSeen
		swept, err := sweep.run(t, p)
		if err != nil {
			return err
		}
		out, err = fn(t, p, swept)
		wrote = t.wrote()
		return err
	})
	if err != nil {
		return out, "", err
	}
	sweep.committed()
	if byParty && before != "" && !wrote {
		// A party's state only moves forward, and it names every write
		// this answer depends on: if it is before again at a later look,
		// nothing the answer read has changed since before, so what the
		// call read is the answer at before, however late it read it.
		d.answers.keep(before, c.key, out, seen)
		return out, before, nil
	}
	if before != "" && memoState() == before {
		d.answers.keep(before, c.key, out, seen)
		state = before
	}
	return out, state, nil
}
