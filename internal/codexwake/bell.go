package codexwake

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Doorbell rings one party's Codex threads under one client. Every server
// of ours the client runs for the party (one per loaded thread) has one;
// they share the record, so a thread is rung once whichever looks first.
type Doorbell struct {
	Dir    string // the hook's state folder, where the record lives
	Client Client
	Party  string  // the party's root
	Self   Process // this server
	Log    *slog.Logger

	// Ring queues text for thread t (Queue). Interfaces counts the
	// interactive Codex processes that could show a thread of the party
	// (Interfaces). Alive says whether a process still runs. Now is the
	// clock. Tests replace them.
	Ring       func(ctx context.Context, t Thread, text string) error
	Interfaces func() int
	// Rang, when set, is told of each ring that went out, with what it
	// was for and what the thread was rung for before.
	Rang  func(ctx context.Context, t Thread, keys, prior []string)
	Alive func(Process) bool
	Now   func() time.Time
}

// Waiting is what waits on the party now: the keys the Claude Code idle
// wake wakes for (hook.WakeKeys: per channel the newest unread say, ask
// or reply from a peer, and each item that needs the party's ack), and
// the line a ring queues (hook.RingLine).
type Waiting struct {
	Keys []string
	Line string
}

// Bounds.
const (
	// MaxAttempts is how many times in a row a refused ring is tried for
	// the same keys before it is given up on and reported.
	MaxAttempts = 5
	// firstRetry doubles after each refusal: 1, 2, 4, 8 s.
	firstRetry = time.Second
	// recheck is how soon a look that could not tell which threads
	// somebody sees looks again.
	recheck = 2 * time.Second
)

// What a look decided, in the record's Last.
const (
	LastNothing    = "nothing waits on the party"
	LastNothingNew = "nothing new since the last ring"
	LastRang       = "rang"
	LastNoThread   = "no thread of the party is recorded (Codex records one at its first prompt)"
	LastClosed     = "no Codex terminal shows a thread of the party: nothing rung"
	LastLeftOver   = "more threads are loaded than Codex terminals show: one may have been left (/new, /resume, a terminal closed), so nothing is rung until Codex lets it go"
	LastGate       = "the thread's Codex is not one the doorbell rings (doctor says why)"
	LastRetry      = "waiting to ring again after a refusal"
)

// Register notes this server in the record: one more loaded thread.
func (d *Doorbell) Register(ctx context.Context) error {
	return Update(ctx, d.Dir, d.Client, d.Party, func(r *Record) { d.prune(r) })
}

// Unregister takes this server out of the record, as it ends.
func (d *Doorbell) Unregister(ctx context.Context) {
	Update(ctx, d.Dir, d.Client, d.Party, func(r *Record) {
		r.Serves = slices.DeleteFunc(r.Serves, func(p Process) bool { return p == d.Self })
	})
}

// Read records that the party looked at what waits from thread id (its
// model called chat_inbox, chat_read or chat_wait there): its ring is no
// longer outstanding, and what comes next rings again.
func (d *Doorbell) Read(ctx context.Context, id string) {
	if id == "" {
		return
	}
	Update(ctx, d.Dir, d.Client, d.Party, func(r *Record) {
		if t := r.thread(id); t != nil {
			t.Bell.Outstanding = false
		}
	})
}

// ring is one ring decided: the thread, and its keys before it.
type ring struct {
	thread Thread
	prior  []string
}

// Look rings the party's threads that should be rung for w, and returns
// when to look again without a change (0: at the next change only): a
// refused ring's retry, or a recheck of who shows which thread.
func (d *Doorbell) Look(ctx context.Context, w Waiting) (again time.Duration) {
	var rings []ring
	var notes []string
	err := Update(ctx, d.Dir, d.Client, d.Party, func(r *Record) {
		rings, again, notes = d.plan(r, w)
	})
	d.say(notes)
	if err != nil {
		d.Log.Warn("the Codex doorbell could not read its record; nothing was rung", "err", err)
		return recheck
	}
	for _, g := range rings {
		rang := d.Ring(ctx, g.thread, w.Line)
		if rang == nil && d.Rang != nil {
			d.Rang(ctx, g.thread, w.Keys, g.prior)
		}
		var report string
		var retry time.Duration
		err := Update(ctx, d.Dir, d.Client, d.Party, func(r *Record) {
			retry, report = settle(r, g, w.Keys, rang, d.Now())
		})
		if err != nil {
			d.Log.Warn("the Codex doorbell could not record a ring", "thread", g.thread.ID, "err", err)
		}
		if report != "" {
			d.Log.Warn(report)
		}
		if retry > 0 && (again == 0 || retry < again) {
			again = retry
		}
	}
	return again
}

// plan decides, under the record's lock, which threads to ring for w
// now, and marks them outstanding; notes are what to report once.
func (d *Doorbell) plan(r *Record, w Waiting) (rings []ring, again time.Duration, notes []string) {
	now := d.Now()
	d.prune(r)
	r.LastAt = now
	if len(w.Keys) == 0 {
		for i := range r.Threads {
			r.Threads[i].Bell.Outstanding = false // nothing waits: the party has read
		}
		r.Last = LastNothing
		return nil, 0, nil
	}
	live := d.candidates(r)
	if len(live) == 0 {
		r.Last = LastNoThread
		return nil, 0, nil
	}
	var due []*Thread
	gated := false
	for _, t := range live {
		b := &t.Bell
		switch {
		case t.Version == "" || Older(t.Version):
			gated = true
			if note := gateNote(t); !slices.Contains(b.Said, note.key) {
				b.Said = append(b.Said, note.key)
				notes = append(notes, note.text)
			}
		case b.Outstanding:
			// The ring asks the session to look at everything that
			// waits: what arrives before it looks is covered by it.
			b.Rung = w.Keys
		case now.Before(b.Retry):
			again = minPositive(again, b.Retry.Sub(now))
		case len(missing(w.Keys, b.Rung)) > 0:
			due = append(due, t)
		}
	}
	if len(due) == 0 {
		switch {
		case again > 0:
			r.Last = LastRetry
		case gated:
			r.Last = LastGate
		default:
			r.Last = LastNothingNew
		}
		return nil, again, notes
	}
	switch n := d.Interfaces(); {
	case n == 0:
		r.Last = LastClosed
		return nil, again, notes
	case len(r.Serves) > n:
		r.Last = LastLeftOver
		return nil, minPositive(again, recheck), notes
	}
	for _, t := range due {
		rings = append(rings, ring{thread: *t, prior: t.Bell.Rung})
		t.Bell.Outstanding, t.Bell.At, t.Bell.Rung = true, now, w.Keys
	}
	r.Last = LastRang
	return rings, again, notes
}

// candidates are the threads that may be shown now, newest first: not
// ended, and no more of them than there are loaded threads (a thread
// Codex let go without a SessionEnd the hook saw is older than those it
// still holds).
func (d *Doorbell) candidates(r *Record) []*Thread {
	var live []*Thread
	for i := range r.Threads {
		if !r.Threads[i].Ended {
			live = append(live, &r.Threads[i])
		}
	}
	slices.SortStableFunc(live, func(a, b *Thread) int { return b.Started.Compare(a.Started) })
	if len(live) > len(r.Serves) {
		live = live[:len(r.Serves)]
	}
	return live
}

// settle records how a ring went: rung, or refused — then tried again
// after a while, and after MaxAttempts given up on for these keys and
// reported once. It returns when to try again and what to report.
func settle(r *Record, g ring, keys []string, rang error, now time.Time) (retry time.Duration, report string) {
	t := r.thread(g.thread.ID)
	if t == nil {
		return 0, ""
	}
	b := &t.Bell
	if rang == nil {
		b.Rings++
		b.Attempts, b.Retry, b.Refused = 0, time.Time{}, ""
		b.Said = slices.DeleteFunc(b.Said, func(s string) bool { return s == saidRefused })
		return 0, ""
	}
	b.Outstanding = false
	b.Attempts++
	b.Refused = rang.Error()
	if b.Attempts < MaxAttempts {
		b.Rung = g.prior
		retry = firstRetry << (b.Attempts - 1)
		b.Retry = now.Add(retry)
		return retry, ""
	}
	// Given up on: these keys are not rung again; what comes next is.
	b.Attempts, b.Retry, b.Rung = 0, time.Time{}, keys
	if slices.Contains(b.Said, saidRefused) {
		return 0, ""
	}
	b.Said = append(b.Said, saidRefused)
	return 0, fmt.Sprintf("the Codex doorbell could not ring thread %s (%d tries): %s — that session learns of its peers at its next prompt (the hooks) instead; mcpp-chat doctor shows what it last saw", t.ID, MaxAttempts, b.Refused)
}

const saidRefused = "refused"

// note is something said once per thread.
type note struct{ key, text string }

// gateNote says why a thread's Codex is not rung.
func gateNote(t *Thread) note {
	if t.Version == "" {
		return note{"version", fmt.Sprintf("the Codex doorbell does not ring thread %s: %s --version did not say its version (the doorbell needs Codex %s or later)", t.ID, t.Exe, Tested)}
	}
	return note{"older", fmt.Sprintf("the Codex doorbell does not ring thread %s: Codex %s is older than %s, the version it is tested with — update Codex to have idle sessions woken", t.ID, t.Version, Tested)}
}

// say logs notes.
func (d *Doorbell) say(notes []string) {
	for _, n := range notes {
		d.Log.Warn(n)
	}
}

// prune keeps the servers that still run, this one among them.
func (d *Doorbell) prune(r *Record) {
	r.Serves = slices.DeleteFunc(r.Serves, func(p Process) bool { return p != d.Self && !d.Alive(p) })
	if !slices.Contains(r.Serves, d.Self) {
		r.Serves = append(r.Serves, d.Self)
	}
}

// missing lists the keys of have that were not rung.
func missing(have, rung []string) []string {
	var out []string
	for _, k := range have {
		if !slices.Contains(rung, k) {
			out = append(out, k)
		}
	}
	return out
}

// minPositive is the smaller of two durations, 0 meaning none.
func minPositive(a, b time.Duration) time.Duration {
	if a == 0 {
		return b
	}
	if b == 0 {
		return a
	}
	return min(a, b)
}
