// Package hook is the Claude Code hook, which Codex (0.171 and later) runs
// as well, with the same events and output shapes: it tells a session what
// waits on its repository in the chat, without ever changing the chat. It reads the
// database through a read-only handle, prints Claude Code's output shapes,
// keeps a tiny per-session file so that it does not repeat itself, and
// stays silent on any error: a hook must never break a session.
package hook

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/mcpp/mcpp-chat/internal/codexwake"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/turns"
)

// Options is one run of the hook binary.
type Options struct {
	// Name is the command as a person runs it, for --help and --version:
	// "" is the hook binary, mcpp-chat-hook.
	Name string
	// Event is --event; "" takes the payload's hook_event_name.
	Event string
	// Wait is --wait: block until a peer waits on this session.
	Wait    bool
	Timeout time.Duration
	Env     config.Env
	// Exe is the running executable: a checkout's bin/ finds its module
	// folder from it.
	Exe    string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// TeamStore opens a team store on PostgreSQL read-only, and
	// TeamChanges watches it. The hook binary leaves them nil: it does
	// not link the PostgreSQL driver (which would slow every prompt) and
	// hands a team store's events to `mcpp-chat hook`, which sets them.
	TeamStore   func(ctx context.Context, url string) (*store.ReadOnly, error)
	TeamChanges func(url string) Changes
	// TeamHub asks a member machine's hub what waits on party; given the
	// ETag of a state, an unchanged one answers changed=false. HubChanges
	// follows the hub's state. The hook binary leaves them nil (it does
	// not link an HTTP client): it answers from the cache a running serve
	// keeps, and hands the rest to `mcpp-chat hook`, which sets them.
	TeamHub    func(ctx context.Context, paths config.Paths, party, etag string) (p store.Pending, tag string, changed bool, err error)
	HubChanges func(paths config.Paths, party string) Changes

	// Deadline bounds one run, or one look of a waiter (0: DefaultDeadline);
	// Recheck is how often a waiter looks whether it was replaced or its
	// session ended (0: DefaultRecheck). Tests shorten them to run fast.
	Deadline time.Duration
	Recheck  time.Duration

	// looked, when set, is called after each look of a waiter: a test
	// waits for it instead of guessing when the waiter is waiting.
	looked func()
	// readClaims, when set, is called when PreToolUse reads the claims
	// from the store or the hub: a test tells the quiet path by it.
	readClaims func()
	// resolved is the install as Command resolved it; nil: locate does.
	resolved *resolved
	// hubCache is the member's cache as Command read it; nil: read it.
	hubCache *HubCache
	// codexClient finds the Codex process the hook runs under; nil:
	// codexwake.FindClient. A test sets it.
	codexClient func() (codexwake.Client, bool)
	// client finds the client process the hook runs under (turns.go);
	// nil: turns.ClientOf. A test sets it.
	client func() (turns.Client, bool)
}

// resolved is config.Resolve's answer, kept for the run.
type resolved struct {
	paths config.Paths
	cfg   config.Config
	err   error
}

// Changes says when the store may have changed (wake.Watcher, or a team
// store's listener).
type Changes interface {
	Next() <-chan struct{}
	Close() error
}

// errNoTeamStore: this binary cannot read a team store.
var errNoTeamStore = errors.New("a team store is read by mcpp-chat hook")

// opener opens the install's store read-only for one look.
func (o Options) opener(paths config.Paths) func(context.Context) (*store.ReadOnly, error) {
	if !config.IsPostgres(paths.Store) {
		return func(ctx context.Context) (*store.ReadOnly, error) { return store.OpenReadOnly(ctx, paths.DB) }
	}
	return func(ctx context.Context) (*store.ReadOnly, error) {
		if o.TeamStore == nil {
			return nil, errNoTeamStore
		}
		return o.TeamStore(ctx, paths.Store)
	}
}

// DefaultDeadline is how long a hook run may take; past it the hook gives
// up and prints nothing, so a slow or locked database never delays a
// session.
const DefaultDeadline = 900 * time.Millisecond

// deliveryGrace is how long, past the deadline, an answer already computed
// may take to reach the output; DefaultDeadline plus it stays under a
// second.
const deliveryGrace = 50 * time.Millisecond

func (o Options) deadline() time.Duration {
	if o.Deadline > 0 {
		return o.Deadline
	}
	return DefaultDeadline
}

func (o Options) recheck() time.Duration {
	if o.Recheck > 0 {
		return o.Recheck
	}
	return DefaultRecheck
}

// Exit codes. A hook always exits 0, except a --wait that saw a peer
// waiting: 2 makes Claude Code show its stderr to the model and wake it.
const (
	ExitOK   = 0
	ExitWake = 2
)

// Run answers one hook event, or waits with o.Wait. Output is written
// only when the whole answer is ready within the deadline.
func Run(ctx context.Context, o Options) int {
	if o.Wait {
		return runWaiter(ctx, o)
	}
	ctx, cancel := context.WithTimeout(ctx, o.deadline())
	defer cancel()
	done := make(chan reply, 1)
	go func() { done <- answer(ctx, o) }()
	select {
	case r := <-done:
		r.deliver(o.Stdout)
	case <-ctx.Done():
		// An answer whose session record was saved just before the
		// deadline is on its way: print it rather than leave the record
		// saying the session was told what it never saw.
		select {
		case r := <-done:
			r.deliver(o.Stdout)
		case <-time.After(deliveryGrace):
		}
	}
	return ExitOK
}

// reply is a run's answer: what to print, and what records that the
// session was told once it is printed.
type reply struct {
	text string
	told func()
}

// deliver prints the reply and, once all of it is written, within the
// run's time (Run's select), records what it told: never on a guess.
func (r reply) deliver(w io.Writer) {
	if r.text == "" {
		return
	}
	if _, err := io.WriteString(w, r.text); err == nil && r.told != nil {
		r.told()
	}
}

// answer computes what to print; every failure means "nothing".
func answer(ctx context.Context, o Options) reply {
	pl, err := ReadPayload(o.Stdin)
	if err != nil {
		return reply{}
	}
	event := CanonicalEvent(o.Event)
	if event == "" {
		event = CanonicalEvent(pl.HookEventName)
	}
	if event == PreToolUse {
		return reply{text: o.checkEdit(ctx, pl)} // claims.go
	}
	if event == Stop && pl.StopHookActive {
		return reply{} // the turn already goes on because of a Stop block: no loops
	}
	paths, party, err := o.locate(pl.Cwd)
	if err != nil {
		return reply{}
	}
	o.recordCodex(ctx, pl, event, party)
	if event == SessionEnd {
		return reply{} // Codex lets the thread go: nobody reads an answer
	}
	if event == UserPromptSubmit {
		o.notePrompt(pl, party.Root)
	}
	if config.IsHub(paths.Store) {
		return journalled(paths, party, event, o.answerFromHub(ctx, pl, event, paths, party))
	}
	dir := StateDir(o.Env)
	if !tellsSession(event) {
		p, err := o.readPending(ctx, paths, party.Root)
		if err != nil {
			return reply{}
		}
		return reply{text: o.answerWith(ctx, dir, pl, event, party, "", p).Text}
	}
	// Taken before the read, so that a write landing during it moves the
	// fingerprint and the next run reads again. A team store has no file
	// to fingerprint: every event looks.
	var fp string
	if !config.IsPostgres(paths.Store) {
		fp, _ = store.Fingerprint(paths.DB)
		if quiet(dir, pl, party.Root, event, fp, paths.DB) {
			return reply{} // nothing was written since this event last had nothing new to say
		}
	}
	p, err := o.readPending(ctx, paths, party.Root)
	if err != nil {
		return reply{}
	}
	return journalled(paths, party, event, o.answerWith(ctx, dir, pl, event, party, fp, p))
}

// answerFromHub answers on a member machine: from the cache the running
// serve keeps while it is fresh, else from the hub itself, which answers
// "unchanged" without a read when the state is the one at which this
// event last had nothing to say.
func (o Options) answerFromHub(ctx context.Context, pl Payload, event string, paths config.Paths, party config.Party) Answer {
	dir := StateDir(o.Env)
	quiet := quietAt(dir, pl, party.Root, event)
	var p store.Pending
	var fp string
	if c, ok := o.cachedFor(paths, party.Name); ok {
		if c.ETag == quiet {
			return Answer{}
		}
		p, fp = c.Pending, c.ETag
	} else {
		if o.TeamHub == nil {
			return Answer{}
		}
		var changed bool
		var err error
		if p, fp, changed, err = o.TeamHub(ctx, paths, party.Name, quiet); err != nil || !changed {
			return Answer{}
		}
	}
	p.Workspace = party.Root // the hub knows the party, not its folder on this machine
	return o.answerWith(ctx, dir, pl, event, party, fp, p)
}

// cachedFor is party's fresh cache on a member machine: as Command read
// it, else from its file.
func (o Options) cachedFor(paths config.Paths, party string) (HubCache, bool) {
	if o.hubCache != nil {
		return *o.hubCache, o.hubCache.Party == party
	}
	c, ok := ReadHubCache(HubCachePath(paths, party), time.Now())
	return c, ok && c.Party == party
}

// tellsSession reports the events whose answers a session's record keeps.
func tellsSession(event string) bool {
	return event == SessionStart || event == UserPromptSubmit || event == Stop
}

// quietAt is the state at which event last had nothing new to say to the
// payload's session; "" when its record says none.
func quietAt(dir string, pl Payload, root, event string) string {
	st, ok := PeekState(dir, pl.SessionID, root)
	if !ok {
		return ""
	}
	return st.quietAt(event)
}

// quiet reports that the database at db, at fingerprint fp, holds nothing
// event has not told the payload's session: its record says so for this
// fingerprint, or a wake told everything at the commit the database is
// still at.
func quiet(dir string, pl Payload, root, event, fp, db string) bool {
	st, ok := PeekState(dir, pl.SessionID, root)
	switch {
	case !ok:
		return false
	case fp != "" && fp == st.quietAt(event):
		return true
	}
	mark, ok := store.CommitMark(db)
	return event == UserPromptSubmit && ok && st.WakeQuiet == mark && !st.quietExpired() && !claimsDue(st)
}

// answerWith is what p, read at the state fp, tells event; the events a
// session's record keeps are told once.
func (o Options) answerWith(ctx context.Context, dir string, pl Payload, event string, party config.Party, fp string, p store.Pending) Answer {
	if !tellsSession(event) {
		return Respond(event, p, Seen{})
	}
	if event == SessionStart && dir != "" {
		SweepState(dir)
	}
	ans := tell(ctx, dir, pl.SessionID, party.Root, event, fp, p, o.wakesPer10m())
	if event == Stop && ans.Text != "" {
		o.woke(ctx, dir, pl.SessionID, party.Root, turns.Stop, ans.Decision)
	}
	return ans
}

// tell answers event from what is pending, p, read at fingerprint fp, and
// saves what the answer told in the session's record, under its lock.
// Without a session id or a folder for records there is no record to
// consult or keep, and the session is told everything.
func tell(ctx context.Context, dir, session, root, event, fp string, p store.Pending, limit int) Answer {
	if session == "" || dir == "" {
		return Respond(event, p, Seen{})
	}
	var wakes WakeLog
	if event == Stop {
		wakes = ReadWakeLog(dir, root)
	}
	var ans Answer
	err := UpdateState(ctx, dir, session, root, func(st *State) {
		seen := st.seen()
		seen.Wakes, seen.Limit, seen.Now = wakes, limit, time.Now()
		ans = Respond(event, p, seen)
		remember(st, event, fp, ans)
		if event != Stop {
			st.ClaimsUntil = nextClaimEnd(p)
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			return Answer{} // too late: Run prints nothing
		}
		return Respond(event, p, Seen{}) // no record to consult: say it all
	}
	return ans
}

// remember is everything an answer changes in the session's record, which
// is saved only once the answer is known to be printed: the lines it told
// and what it reported, and whether the event has anything left to say
// while the database stays at fingerprint fp.
func remember(st *State, event, fp string, ans Answer) {
	st.Told, st.Blocked = ans.Told, ans.Blocked
	st.WakeQuiet = ""
	st.QuietUntil = quietUntil(ans.Due)
	switch event {
	case SessionStart, UserPromptSubmit:
		st.PromptQuiet = ""
		if !ans.Untold {
			st.PromptQuiet = fp
		}
		if event == SessionStart {
			st.StopQuiet = "" // a fresh context: Stop must look again
		}
	case Stop:
		st.StopQuiet = fp
	}
}

// quietUntil is a record's QuietUntil for the due time due (zero: none).
func quietUntil(due time.Time) string {
	if due.IsZero() {
		return ""
	}
	return due.UTC().Format(time.RFC3339Nano)
}

// locate resolves the install's paths (unless Command did) and the
// session's party: the same functions the server uses, with the hook's
// start folder order (CLAUDE_PROJECT_DIR › the payload's cwd › the
// process's cwd).
func (o Options) locate(cwd string) (config.Paths, config.Party, error) {
	r := o.resolved
	if r == nil {
		r = &resolved{}
		r.paths, r.cfg, r.err = config.Resolve(o.Env, o.Exe)
	}
	if r.err != nil {
		return r.paths, config.Party{}, r.err
	}
	party, err := config.Identify(config.StartDir(o.Env, "", cwd), r.cfg.Identity.GitRoot)
	return r.paths, party, err
}

// readPending opens the store read-only for one look.
func readPending(ctx context.Context, open func(context.Context) (*store.ReadOnly, error), root string) (store.Pending, error) {
	r, err := open(ctx)
	if err != nil {
		return store.Pending{}, err
	}
	defer r.Close()
	return r.Pending(ctx, root, NewestShown)
}

// readPending reads the install's store at its rules of attention.
func (o Options) readPending(ctx context.Context, paths config.Paths, root string) (store.Pending, error) {
	return readPending(ctx, o.attentive(o.opener(paths)), root)
}
