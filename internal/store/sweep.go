package store

import "sync/atomic"

// sweepMemo lets read-type calls (read, inbox, whoami) skip the archive
// sweep while the database is as it was when a sweep last found nothing.
// The sweep's answer depends only on the committed state and every commit
// of any process moves the state, so an unchanged state means
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
	state func() (string, bool) // the store's state now
	fp    string
	known bool // fp names the state before the call's transaction
	clean bool // the sweep ran and archived nothing
}

// readSweep takes the store's state before the transaction begins, so
// that a sweep that finds nothing is recorded for a state no later than
// the one it looked at: a commit in between moves the state the next call
// sees.
//
// The memo is kept only where the state costs no round trip
// (engine.CheapState: a file's few stats). A team store's state moves
// with every write of the whole team, so it would rarely hold, and asking
// for it costs more round trips than the sweep's own query, which finds
// the done items through an index of live items.
func (d *DB) readSweep() *readSweep {
	if !cheapState(d.eng) {
		return &readSweep{memo: &d.sweeps}
	}
	fp, ok := d.eng.State()
	return &readSweep{memo: &d.sweeps, state: d.eng.State, fp: fp, known: ok}
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
			if now, ok := s.state(); ok && now == s.fp {
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
