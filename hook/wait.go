package hook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/turns"
	"github.com/mcpp/mcpp-chat/internal/wake"
)

// DefaultWaitTimeout is how long --wait blocks when --timeout is not given.
const DefaultWaitTimeout = time.Hour

// DefaultRecheck is how often a waiter looks whether a newer waiter took
// its place or its session went away (sessionWatch); the database itself
// is watched.
const DefaultRecheck = time.Second

// runWaiter is --wait: it blocks until a peer waits on this session (exit
// 2, the Stop reason on stderr, which wakes an idle Claude Code session),
// or until the timeout, a newer waiter of the same session and party, or
// the end of the session it serves (exit 0, silent). In a run nobody sits
// at it does not wait at all.
func runWaiter(ctx context.Context, o Options) int {
	pl, err := readPayloadWithin(ctx, o)
	if err != nil || unattended(o.Env) {
		return ExitOK
	}
	paths, party, err := o.locate(pl.Cwd)
	if err != nil {
		return ExitOK
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dir := StateDir(o.Env)
	c := claimWaiter(dir, pl.SessionID, party.Root)
	defer c.release()
	var w Changes
	open := o.attentive(o.opener(paths))
	pending := func(ctx context.Context) (store.Pending, error) { return readPending(ctx, open, party.Root) }
	mark := func() string { m, _ := store.CommitMark(paths.DB); return m } // "": it cannot tell
	written := func() time.Time {
		info, err := os.Stat(paths.DB + "-wal")
		if err != nil {
			return time.Time{}
		}
		return info.ModTime()
	}
	switch {
	case config.IsHub(paths.Store):
		if o.HubChanges == nil || o.TeamHub == nil {
			return ExitOK
		}
		w = o.HubChanges(paths, party.Name)
		mark = nil
		pending = func(ctx context.Context) (store.Pending, error) {
			p, _, _, err := o.TeamHub(ctx, paths, party.Name, "")
			return p, err
		}
	case config.IsPostgres(paths.Store):
		if o.TeamChanges == nil {
			return ExitOK
		}
		w = o.TeamChanges(paths.Store)
		mark = nil
	default:
		if w, err = wake.Watch(paths.DB, paths.Tick); err != nil {
			return ExitOK
		}
	}
	defer w.Close()

	look := watcherLook{dir: dir, session: pl.SessionID, root: party.Root, pending: pending, mark: mark, written: written, deadline: o.deadline(),
		limit: o.wakesPer10m()}
	session := watchSession(o.Env)
	recheck := time.NewTicker(o.recheck())
	defer recheck.Stop()
	for {
		changed := w.Next() // before the look: a change during it is not missed
		if ans, ok := look.check(ctx); ok {
			o.woke(ctx, dir, pl.SessionID, party.Root, turns.Wake, look.decision)
			// Claude Code shows stderr to the model once the waiter
			// exits 2: written whole, the wake told the session.
			if _, err := fmt.Fprintln(o.Stderr, ans.Text); err == nil {
				if list := tellings(ans.Shown); len(list) > 0 {
					journal(paths, party, store.ViaWake, list)
				}
			}
			return ExitWake
		}
		if o.looked != nil {
			o.looked()
		}
		// An item waiting on the session's ack becomes overdue at its due
		// time, with no commit to wake the waiter (no process may run the
		// clock): it looks again then; and a wake the per-sender limit
		// held back looks again once it may wake.
		due, stop := dueTimer(look.due)
		ok := waitForChange(ctx, changed, recheck.C, due, look.retry(), func() bool { return c.lost() || session.gone() })
		stop()
		if !ok {
			return ExitOK
		}
	}
}

// dueTimer fires at at (never when at is zero); stop releases it.
func dueTimer(at time.Time) (<-chan time.Time, func() bool) {
	if at.IsZero() {
		return nil, func() bool { return false }
	}
	t := time.NewTimer(max(time.Until(at), 0))
	return t.C, t.Stop
}

// waitForChange waits until changed closes, the due time comes or again
// fires (true), or ctx ends or ended says so, at a change or a recheck
// (false).
func waitForChange(ctx context.Context, changed <-chan struct{}, recheck, due, again <-chan time.Time, ended func() bool) bool {
	for {
		select {
		case <-changed:
			return !ended()
		case <-due:
			return !ended()
		case <-again:
			return !ended()
		case <-ctx.Done():
			return false
		case <-recheck:
			if ended() {
				return false
			}
		}
	}
}

// unattended reports a Claude Code run that nobody sits at: `claude -p`
// or the Agent SDK. There is no idle session there for a wake to reach,
// and Claude Code waits for its background hooks before such a run exits,
// so a waiter would hold the run open until its timeout.
//
// CLAUDE_CODE_SESSION_ATTENDED is the signal trusted first: Claude Code
// computes it for each run and sets it, "1" or "0", in every hook's
// environment, so it is right even when one Claude Code was started by
// another. CLAUDE_CODE_ENTRYPOINT ("cli" at a terminal, "sdk-cli" for -p,
// "sdk-ts" or "sdk-py" for the SDK) is only a fallback for versions that do
// not set the first: it is inherited from a parent that had it set, so it
// can be stale.
func unattended(env config.Env) bool {
	switch env("CLAUDE_CODE_SESSION_ATTENDED") {
	case "0", "false":
		return true
	case "1", "true":
		return false
	}
	return strings.HasPrefix(env("CLAUDE_CODE_ENTRYPOINT"), "sdk")
}

// readPayloadWithin reads stdin but gives up after the run's deadline.
func readPayloadWithin(ctx context.Context, o Options) (Payload, error) {
	type result struct {
		pl  Payload
		err error
	}
	done := make(chan result, 1)
	go func() {
		pl, err := ReadPayload(o.Stdin)
		done <- result{pl, err}
	}()
	select {
	case r := <-done:
		return r.pl, r.err
	case <-time.After(o.deadline()):
		return Payload{}, errors.New("no hook payload on stdin")
	case <-ctx.Done():
		return Payload{}, ctx.Err()
	}
}

// watcherLook is one waiter's view of the session: what it has already
// reported (shared with the Stop hook through the state file) and, without
// a session record, what blocked at its previous look.
type watcherLook struct {
	dir, session, root string
	pending            func(context.Context) (store.Pending, error)
	// mark is the store's commit mark (store.CommitMark), "" when it
	// cannot tell; nil for a store without one (every look reads).
	// written is when the database's -wal was last written.
	mark     func() string
	written  func() time.Time
	deadline time.Duration // bounds one look
	looked   bool          // a look was taken: blocked is what it saw
	blocked  []string      // without a record, what blocked at the last look
	// lastMark and lastRead are the mark before the last read and when
	// that read began.
	lastMark string
	lastRead time.Time
	// due is when the soonest item waiting on the session's ack becomes
	// overdue, as the last look found (nextDue).
	due time.Time
	// limit is attention.wakes_per_10m; decision is what the last look
	// decided (Decide).
	limit    int
	decision Decision
}

// retry fires when a wake held back by the per-sender limit may wake
// the session; nil when none is held.
func (l *watcherLook) retry() <-chan time.Time {
	if l.decision.Retry.IsZero() {
		return nil
	}
	return time.After(time.Until(l.decision.Retry) + 10*time.Millisecond)
}

// markTrust is how long an unchanged commit mark spares a look: after a
// read, or after a write to the -wal. A commit appends its frames to the
// -wal, each a notification, before it becomes visible; a look at each
// would open the database for nothing while the peer's commit waits for
// the processor, and a look that read the mark just before the commit was
// published would see the commit under the mark before it, which the
// wake's record (WakeQuiet) must not hold. Past it the waiter reads
// whatever the mark says (a writer that died between appending its commit
// and publishing it leaves the mark unchanged): the watcher looks again
// 50 ms and more after each write.
const markTrust = 40 * time.Millisecond

// check reads the database and reports the wake reason when something
// waits on the session that neither the Stop hook nor a waiter reported.
// Without a session record, what waited at the start does not count.
// The report is recorded as told, under the same lock as the hooks' own
// records: Claude Code runs UserPromptSubmit for the wake, which must not
// tell the model again what the wake just told it.
func (l *watcherLook) check(ctx context.Context) (Answer, bool) {
	mark := l.currentMark()
	retrying := !l.decision.Retry.IsZero() && !time.Now().Before(l.decision.Retry)
	if l.looked && !retrying && mark != "" && mark == l.lastMark && (time.Since(l.lastRead) < markTrust || l.writing()) {
		return Answer{}, false // no commit became visible since the last look
	}
	look, cancel := context.WithTimeout(ctx, l.deadline)
	defer cancel()
	began := time.Now()
	p, err := l.pending(look)
	if err != nil {
		return Answer{}, false
	}
	var ans Answer
	wakes, now := ReadWakeLog(l.dir, l.root), time.Now()
	recorded := l.session != "" && l.dir != ""
	if recorded {
		err = UpdateState(look, l.dir, l.session, l.root, func(st *State) {
			seen := st.seen()
			seen.Wakes, seen.Limit, seen.Now = wakes, l.limit, now
			ans = wakeAnswer(p, seen)
			st.Told, st.Blocked = ans.Told, ans.Blocked
			st.WakeQuiet = ""
			// Claude Code runs UserPromptSubmit for the wake before it
			// sends the model anything: when that run would have
			// nothing to say, it may know so without the database.
			if after := Respond(UserPromptSubmit, p, st.seen()); ans.Text != "" && after.Text == "" && !after.Untold {
				st.WakeQuiet = mark
			}
		})
	}
	if !recorded || err != nil {
		ans = Answer{}
		if l.looked {
			ans = wakeAnswer(p, Seen{Blocked: l.blocked, Wakes: wakes, Limit: l.limit, Now: now})
		}
	}
	l.decision = ans.Decision
	if l.blocked = ans.Blocked; !l.looked {
		l.blocked = blockingKeys(p) // what waited at the start does not count
	}
	l.looked, l.due = true, nextDue(p)
	// A claim the party sees may end by the clock, with no commit: its
	// waiters may wake then (freedKeys). One past already (another
	// clock's, a hub's) is no reason to look again at once.
	if end, err := time.Parse(time.RFC3339Nano, nextClaimEnd(p)); err == nil && end.After(time.Now()) && (l.due.IsZero() || end.Before(l.due)) {
		l.due = end.Add(10 * time.Millisecond)
	}
	l.lastMark, l.lastRead = mark, began
	return ans, ans.Text != ""
}

// currentMark is the commit mark a look starts from; "" when it cannot
// be told. Read while a commit updates the -shm it cannot be, and then
// the wake could not leave its prompt quiet (WakeQuiet): while the -wal
// was written moments ago it is asked again, for up to markSettle.
func (l *watcherLook) currentMark() string {
	if l.mark == nil {
		return ""
	}
	for deadline := time.Now().Add(markSettle); ; time.Sleep(time.Millisecond) {
		if m := l.mark(); m != "" || !l.writing() || time.Now().After(deadline) {
			return m
		}
	}
}

// markSettle bounds how long a look waits for a commit under way to be
// published, so that its mark can be told.
const markSettle = 20 * time.Millisecond

// writing reports a -wal written moments ago: a commit on its way.
func (l *watcherLook) writing() bool {
	if l.written == nil {
		return false
	}
	at := l.written()
	return !at.IsZero() && time.Since(at) < markTrust
}

// wakeAnswer is a waiter's report on stderr, made once per state as a Stop
// block is. Claude Code shows the person at the terminal a wake as
// one line, "Stop hook feedback", and this report only when expanded, so
// the report starts with the headline; the model reads all of it.
func wakeAnswer(p store.Pending, seen Seen) Answer {
	r := newReport(p)
	return block(p, seen, func(fresh []string) (string, []string) {
		message := headline(p, fresh)
		reason, shown := stopReason(r, cost(message))
		return message + "\n" + reason, shown
	})
}

// claim marks the one waiter of a session and party: a newer waiter
// overwrites the file and the older one, seeing a token not its own, ends.
type claim struct {
	path, token string
}

func claimWaiter(dir, session, workspace string) *claim {
	if dir == "" || os.MkdirAll(dir, 0o700) != nil {
		return nil
	}
	c := &claim{path: filepath.Join(dir, "wait-"+sessionKey(session, workspace)+".pid"),
		token: fmt.Sprintf("%d %d", os.Getpid(), time.Now().UnixNano())}
	tmp, err := os.CreateTemp(dir, ".wait-*.tmp")
	if err != nil {
		return nil
	}
	_, werr := tmp.WriteString(c.token + "\n")
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), c.path) != nil {
		os.Remove(tmp.Name())
		return nil
	}
	return c
}

// lost reports that a newer waiter holds the claim. A missing file is not
// a newer waiter (an older one removed it on its way out).
func (c *claim) lost() bool {
	if c == nil {
		return false
	}
	data, err := os.ReadFile(c.path)
	return err == nil && strings.TrimSpace(string(data)) != c.token
}

func (c *claim) release() {
	if c != nil && !c.lost() {
		os.Remove(c.path)
	}
}
