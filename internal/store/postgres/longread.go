package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// A team store's reads that may run long — a search, an arrivals page,
// the person's views — hold a bounded share of the process's turns (its
// connections): never more than all but the last two of them, and never
// more than LongReadsPerParty for one party. The rest of them queue
// behind each other, first come first served among the parties that are
// under their share, and never in front of a write: a write finds a turn
// free, or waits for a call that is not a long read. Eight searches by
// one member used to take all eight connections of a hub, and another
// member's say in another channel waited for them (10–11 s; with thirty
// searches 27 s, and past a few dozen it failed as busy).

// LongReadsPerParty is how many long reads one party may run at once.
const LongReadsPerParty = 2

// longReadsLeave is how many turns long reads always leave to the rest.
const longReadsLeave = 2

// longReads admits a team store's long reads within their share.
type longReads struct {
	mu       sync.Mutex
	max      int // long reads at once, in all
	perParty int // long reads at once, of one party
	running  int
	byParty  map[string]int
	queue    []*longWaiter // in the order they came
	// finished counts the long reads that ended: a read waiting for its
	// share goes on waiting while it moves (admit).
	finished int64
}

// longWaiter is a long read waiting for its share; in is closed when it
// is let in.
type longWaiter struct {
	party string
	in    chan struct{}
}

// newLongReads is the share of a process that holds turns turns: all but
// longReadsLeave of them (at least one, so that a pool of one or two
// still searches).
func newLongReads(turns int) *longReads {
	most := max(turns-longReadsLeave, 1)
	return &longReads{max: most, perParty: min(LongReadsPerParty, most), byParty: map[string]int{}}
}

// fits reports whether a long read of party may start now. l.mu is held.
func (l *longReads) fits(party string) bool {
	return l.running < l.max && l.byParty[party] < l.perParty
}

func (l *longReads) start(party string) {
	l.running++
	l.byParty[party]++
}

// admit waits until a long read of party may run, as long as long reads
// end (engine.Wait): it fails busy only when none did for poolPatience
// times patience. done ends the read.
func (l *longReads) admit(ctx context.Context, party string, patience time.Duration) (done func(), err error) {
	done = func() { l.end(party) }
	l.mu.Lock()
	// Nobody waiting fits (each end lets in every one that does), so a
	// read that fits goes before no one who came earlier.
	if l.fits(party) {
		l.start(party)
		l.mu.Unlock()
		return done, nil
	}
	w := &longWaiter{party: party, in: make(chan struct{})}
	l.queue = append(l.queue, w)
	l.mu.Unlock()
	got, err := engine.Wait(ctx, poolPatience*patience, poolPatience*patience,
		func() (int64, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.finished, nil
		},
		func(ctx context.Context, wait time.Duration) (bool, error) {
			timer := time.NewTimer(wait)
			defer timer.Stop()
			select {
			case <-w.in:
				return true, nil
			case <-ctx.Done():
				return !l.leave(w), ctx.Err() // let in meanwhile: the caller ends it
			case <-timer.C:
				return false, nil
			}
		})
	switch {
	case got:
		return done, nil
	case err != nil:
		return nil, err
	case l.leave(w):
		return nil, engine.Busy{Waited: poolPatience * patience, Cause: engine.LongReads}
	}
	return done, nil // let in as it gave up
}

// leave takes w out of the queue; false if it was let in already.
func (l *longReads) leave(w *longWaiter) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, q := range l.queue {
		if q == w {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			return true
		}
	}
	return false
}

// end ends a long read of party and lets in, in the order they came,
// every waiting read that now fits.
func (l *longReads) end(party string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running--
	if l.byParty[party]--; l.byParty[party] == 0 {
		delete(l.byParty, party)
	}
	l.finished++
	kept := l.queue[:0]
	for _, w := range l.queue {
		if l.fits(w.party) {
			l.start(w.party)
			close(w.in)
			continue
		}
		kept = append(kept, w)
	}
	clear(l.queue[len(kept):])
	l.queue = kept
}

// longRead marks a context whose call runs as a long read of its pool.
type longRead struct{ p *pool }

// LongRead runs the rest of ctx's call as a long read of party, once
// admitted within the share; a call that is one already is not admitted
// twice. done ends it (engine.Turns).
func (e *Engine) LongRead(ctx context.Context, party string) (context.Context, func(), error) {
	if ctx.Value(longRead{e.pool}) != nil {
		return ctx, func() {}, nil
	}
	done, err := e.pool.long.admit(ctx, party, e.patience)
	if err != nil {
		return ctx, nil, err
	}
	return context.WithValue(ctx, longRead{e.pool}, true), done, nil
}
