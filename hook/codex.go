package hook

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/codexwake"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/turns"
)

// SessionEnd is the event Codex runs when it lets a thread go (it keeps a
// thread loaded for a while after its terminal closed or moved on).
const SessionEnd = "SessionEnd"

// The Codex doorbell (internal/codexwake) rings an idle Codex session
// from the party's running serve; the hook's part is to say which thread
// that is. At Codex's SessionStart it records the thread under the Codex
// process it runs under, and at SessionEnd that the thread is gone.

// WakeKeys names what a peer waits on a session for: what makes a Stop
// block, the idle wake wake Claude Code, and the Codex doorbell ring.
func WakeKeys(p store.Pending) []string { return blockingKeys(p) }

// RingLine is the one line the Codex doorbell queues as the session's
// next prompt: who waits on it, as party names only, and how to look —
// never a peer's words, which the model reads through the tools, quoted
// as data.
//
//	mcpp-chat: mesh-gw is waiting on this session. Call chat_inbox to see what waits, then answer from this repository.
func RingLine(p store.Pending) string {
	var who names
	for _, name := range peersOf(p.Party, pendingAcks(p, nil), talkChannels(p, nil)) {
		if name == config.PartyName(name) {
			who = append(who, name)
		}
	}
	return ringHead + who.subject() + ringTail
}

// A ring line begins and ends so, whoever waits: how the hook tells the
// prompt a ring queued from one a person typed.
const (
	ringHead = "mcpp-chat: "
	ringTail = " waiting on this session. Call chat_inbox to see what waits, then answer from this repository."
)

// isRingPrompt reports the prompt a ring queued (RingLine).
func isRingPrompt(prompt string) bool {
	p := strings.TrimSpace(prompt)
	return strings.HasPrefix(p, ringHead) && strings.HasSuffix(p, ringTail) && !strings.Contains(p, "\n")
}

// Ring is what the Codex doorbell may ring the party for now: as for any
// wake (Decide), the keys a peer waits on it for less those whose senders
// woke it attention.wakes_per_10m times already, and when such a held key
// may ring. Line is what a ring queues.
type Ring struct {
	Keys  []string
	Line  string
	Retry time.Time

	p     store.Pending
	log   WakeLog
	limit int
	now   time.Time
}

// PlanRing decides what the doorbell may ring party root for, with the
// party's wake log in the hook's state folder dir.
func PlanRing(dir, root string, p store.Pending, limit int, now time.Time) Ring {
	log := ReadWakeLog(dir, root)
	d := Decide(p, nil, log, limit, now)
	return Ring{Keys: missing(d.Keys, newSet(d.Held)), Line: RingLine(p), Retry: d.Retry, p: p, log: log, limit: limit, now: now}
}

// Rang records a ring of a thread last rung for prior, as a wake records
// itself: its senders in the party's wake log (the per-sender limit counts
// it), and the chain of the turn it begins under client c, the Codex
// process that runs the thread's hooks and servers — so that the posts the
// rung turn makes carry the next hop, and a loop through a Codex session
// stops at attention.max_hops like any other.
func (r Ring) Rang(ctx context.Context, dir, root string, c turns.Client, thread string, prior []string) error {
	d := Decide(r.p, prior, r.log, r.limit, r.now)
	now := time.Now()
	if err := AddWakes(ctx, dir, root, d.Senders, now); err != nil {
		return err
	}
	if d.Chain.ID == "" {
		return nil
	}
	return turns.Write(dir, c, root, turns.Turn{Chain: d.Chain.ID, Hop: d.Chain.Hop, Cause: turns.Ring, At: now.UTC(), Session: thread})
}

// MarkRung records in the Codex session's record (session is the thread)
// that the doorbell rang it while keys (WakeKeys) waited, as the idle
// wake records what it reported: the Stop hook then does not keep a turn
// going for that same state — the person's turn, running when the ring
// came, ends as it would, and the rung turn follows.
func MarkRung(ctx context.Context, dir, session, root string, keys []string) error {
	return UpdateState(ctx, dir, session, root, func(st *State) { st.Blocked = keys })
}

// codexRecordBudget bounds what recording a thread may add to a
// SessionStart or SessionEnd run.
const codexRecordBudget = 500 * time.Millisecond

// recordCodex notes a Codex thread's start or end for the doorbell. It
// does nothing under any other client (Claude Code), and any failure is
// silent: the doorbell then does not ring that thread, and the session
// learns of its peers through the other hooks.
func (o Options) recordCodex(ctx context.Context, pl Payload, event string, party config.Party) {
	if (event != SessionStart && event != SessionEnd) || pl.SessionID == "" {
		return
	}
	find := o.codexClient
	if find == nil {
		find = func() (codexwake.Client, bool) { return codexwake.FindClient(os.Getpid()) }
	}
	c, ok := find()
	if !ok || c.Kind == codexwake.KindOther {
		return
	}
	dir := StateDir(o.Env)
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, codexRecordBudget)
	defer cancel()
	if event == SessionEnd {
		codexwake.End(ctx, dir, c, party.Root, pl.SessionID)
		return
	}
	home := codexwake.HomeOf(pl.TranscriptPath)
	if home == "" {
		home = o.Env("CODEX_HOME")
	}
	codexwake.Start(ctx, dir, c, party.Root, codexwake.Thread{
		ID: pl.SessionID, CodexHome: home, Cwd: pl.Cwd, Source: pl.Source, Started: time.Now().UTC(),
	})
}
