package store

import "context"

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
//  1. The fingerprint is taken before the transaction begins (readSweep),
//     so that what the call finds is recorded for a state no later than
//     the one it read.
//  2. The answer memo is consulted then: at an unchanged fingerprint the
//     kept answer is the answer, and no transaction runs.
//  3. The sweep runs after the transaction's first read (t.me), which
//     fixes its snapshot; it is skipped while the sweep memo knows it
//     would find nothing at this state (readSweep.run).
//  4. Only once the call has committed is a sweep that found nothing
//     recorded (committed), and the answer kept — and only if no commit,
//     the call's own included, landed since step 1 (answerMemo.unchanged).
//
// state is the fingerprint the answer was read at, "" when unknown; fn
// may run more than once (see DB.view), so it returns its answer rather
// than adding to one.
func readAnswer[T any](ctx context.Context, d *DB, c readCall, fn func(t *tx, p party, swept []archived) (T, error)) (out T, state string, err error) {
	byParty := c.ownView && d.pg != nil
	memoState := func() string {
		fp, ok := d.fingerprint()
		if byParty {
			fp, ok = d.pg.partyState(d.sql, c.me)
		}
		if !ok {
			return ""
		}
		return fp
	}
	var before string
	if c.key != "" && byParty {
		before = memoState()
		if v, ok := d.answers.lookup(before, c.key); ok {
			return v.(T), before, nil
		}
	}
	sweep := d.readSweep()
	if c.key != "" && !byParty && sweep.known {
		before = sweep.fp
		if v, ok := d.answers.lookup(before, c.key); ok {
			return v.(T), before, nil
		}
	}
	run := d.view
	if c.write {
		run = d.update
	}
	var seen string
	err = run(ctx, func(t *tx) error {
		p, err := t.me(c.me, c.write)
		if err != nil {
			return err
		}
		seen = p.lastSeen
		swept, err := sweep.run(t, p)
		if err != nil {
			return err
		}
		out, err = fn(t, p, swept)
		return err
	})
	if err != nil {
		return out, "", err
	}
	sweep.committed()
	if before != "" && memoState() == before {
		d.answers.keep(before, c.key, out, seen)
		state = before
	}
	return out, state, nil
}
