package store

import "sync/atomic"

// sweepMemo lets read-type calls (read, inbox, whoami) skip the archive
// sweep while the database is as it was when a sweep last found nothing.
// The sweep's answer depends only on the committed state and every commit
// of any process moves the Fingerprint, so an unchanged fingerprint means
// the sweep would find nothing again. With
// a few hundred done items waiting on a prune-ok the sweep is half of a
// chat_read (docs/performance.md); the fingerprint costs a few stats.
type sweepMemo struct {
	clean atomic.Pointer[string] // the fingerprint at which a sweep found nothing
	runs  atomic.Int64           // sweeps run by read-type calls (for tests)
}

// readSweep is the sweep of one read-type call; readAnswer runs its steps
// in the order they need.
type readSweep struct {
	memo  *sweepMemo
	state func() (string, bool) // the store's fingerprint now
	// stateIn is state asked inside the call's transaction.
	stateIn func(*tx) (string, bool)
	fp      string
	known   bool // fp names the state before the call's transaction
	clean   bool // the sweep ran and archived nothing
}

// fingerprint names the committed state of the store: the database
// file's Fingerprint, or a team store's change counter (one query).
// State names the store's committed state: it changes with every commit
// that wrote. ok is false when it cannot tell (see Fingerprint).
func (d *DB) State() (string, bool) { return d.fingerprint() }

func (d *DB) fingerprint() (string, bool) {
	if d.pg != nil {
		return d.pg.fingerprint(d.sql)
	}
	return Fingerprint(d.path)
}

// fingerprintIn is fingerprint as seen from inside t: on a team store it
// asks on t's own connection, since a call that holds one of a bounded
// pool's connections and waits for a second could wait forever.
func (d *DB) fingerprintIn(t *tx) (string, bool) {
	if d.pg != nil {
		return d.pg.fingerprint(t)
	}
	return Fingerprint(d.path)
}

// readSweep takes the fingerprint before the transaction begins, so that a
// sweep that finds nothing is recorded for a state no later than the one
// it looked at: a commit in between moves the fingerprint the next call sees.
//
// On a team store the memo is not kept: its state moves with every write
// of the whole team, so it would rarely hold, and asking for it costs more
// round trips than the sweep's own query, which finds the done items
// through an index of live items.
func (d *DB) readSweep() *readSweep {
	if d.pg != nil {
		return &readSweep{memo: &d.sweeps}
	}
	fp, ok := d.fingerprint()
	return &readSweep{memo: &d.sweeps, state: d.fingerprint, stateIn: d.fingerprintIn, fp: fp, known: ok}
}

// run is t.sweep unless the state is one in which a sweep found nothing.
// It must come after the transaction's first read, which fixes its
// snapshot: the fingerprint is looked at again then, and only if it is
// still the one from before the transaction did no commit land between —
// another process's, or the one that made view retry under BEGIN
// IMMEDIATE — and is the snapshot the state the memo speaks of.
func (s *readSweep) run(t *tx, p party) ([]archived, error) {
	if s.known {
		if c := s.memo.clean.Load(); c != nil && *c == s.fp {
			if now, ok := s.stateIn(t); ok && now == s.fp {
				return nil, nil
			}
		}
	}
	s.memo.runs.Add(1)
	swept, err := t.sweep(p)
	s.clean = err == nil && len(swept) == 0
	return swept, err
}

// committed records a sweep that found nothing, once its call committed.
func (s *readSweep) committed() {
	if s.known && s.clean {
		s.memo.clean.Store(&s.fp)
	}
}
