// Package escalation runs the clock of the escalation ladder
// (docs/protocol.md, Due times and the ladder): every process that serves
// the chat — each serve, each hub — arms one timer for the store's next
// stage (store.DB.NextDue), fires the stages whose time has come when it
// goes off (store.DB.Advance, which claims each in a transaction, so it
// fires once however many processes race), and tells a person of the
// stages that call for one (notify.go). A process that starts after a
// stage's time fires it at once, and says how late.
package escalation

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// Changes says when the store may have changed: the clock re-arms its
// timer then (an item asked with a due time, a due time changed, a stage
// another process fired).
type Changes interface {
	Next() <-chan struct{}
}

// Clock is one process's clock of the ladder.
type Clock struct {
	DB     *store.DB
	Ladder store.Ladder
	Notify Notifier
	// Changes wakes the clock at the store's changes; nil: it looks again
	// only at its timer and every Rearm.
	Changes Changes
	Log     *slog.Logger
	// Rearm bounds how long the timer waits without a look at the store:
	// a net for a change nobody announced. 0 means DefaultRearm.
	Rearm time.Duration
	// Fired, if set, is told of each stage this clock fired, once a
	// person stage's telling is done (tests wait for it).
	Fired func(store.Fired, string)
}

// DefaultRearm is how often a clock looks at the store with no change
// announced: one indexed query a few minutes apart.
const DefaultRearm = 5 * time.Minute

// retryAfter is the pause after a failed look (a busy or unreachable
// store) before the clock looks again.
const retryAfter = 5 * time.Second

// maxTelling bounds the tellings of a person under way at once: each holds
// a program or a connection for up to their timeouts.
const maxTelling = 4

// Run keeps the clock until ctx ends, then waits (briefly: their own
// timeouts bound them) for the tellings it started.
func (c *Clock) Run(ctx context.Context) {
	var telling sync.WaitGroup
	defer telling.Wait()
	slots := make(chan struct{}, maxTelling)
	for ctx.Err() == nil {
		changed, stop := c.next() // before the look: a change during it is not missed
		wait, err := c.tick(ctx, func(f store.Fired) {
			telling.Add(1)
			go func() {
				defer telling.Done()
				slots <- struct{}{}
				defer func() { <-slots }()
				c.tell(ctx, f)
			}()
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log().Warn("the escalation clock could not look at the store; it looks again shortly", "err", err)
			wait = retryAfter
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
		stop()
	}
}

// keyedChanges are Changes that wake a waiter only at the commits that
// name its keys (a team store's listener).
type keyedChanges interface {
	NextOf(keys []int64) (<-chan struct{}, func())
}

// next is a channel closed at the next change that may move the next
// stage's time — on a team store only a commit that names the clock's key
// (store.ClockKeys) — and a stop to call once done waiting on it.
func (c *Clock) next() (<-chan struct{}, func()) {
	if c.Changes == nil {
		return nil, func() {}
	}
	if keyed, ok := c.Changes.(keyedChanges); ok {
		return keyed.NextOf(store.ClockKeys())
	}
	return c.Changes.Next(), func() {}
}

// tick fires what is due now and says how long to wait for the next
// stage: one indexed query when nothing is due.
func (c *Clock) tick(ctx context.Context, fired func(store.Fired)) (time.Duration, error) {
	rearm := c.Rearm
	if rearm <= 0 {
		rearm = DefaultRearm
	}
	for {
		at, ok, err := c.DB.NextDue(ctx)
		if err != nil {
			return 0, err
		}
		if !ok {
			return rearm, nil
		}
		if wait := time.Until(at); wait > 0 {
			return min(wait, rearm), nil
		}
		list, err := c.DB.Advance(ctx, c.Ladder)
		for _, f := range list {
			c.report(f)
			fired(f)
		}
		if err != nil {
			return 0, err
		}
		if len(list) == 0 {
			// Due, but nothing fired: another process claimed it, or the
			// item's ladder ended. Look again once the store says so.
			at2, ok2, err := c.DB.NextDue(ctx)
			if err != nil || !ok2 || at2.After(at) {
				continue
			}
			return retryAfter, nil
		}
	}
}

// report logs a stage that fired late: no process ran the clock at its
// time, and this one, starting, fired what was missed.
func (c *Clock) report(f store.Fired) {
	if late := f.Late(); late > 0 {
		c.log().Warn("fired an escalation stage late: no chat process was running at its time",
			"stage", f.Stage, "item", f.Channel+":"+f.Item, "late", store.Late(late), "planned", store.Timestamp(f.Planned))
	}
}

// tell tells a person of a person stage and records how; other stages
// need no telling (the commit wakes the parties they concern).
func (c *Clock) tell(ctx context.Context, f store.Fired) {
	outcome := ""
	if f.Stage == store.StagePerson {
		outcome = c.Notify.Tell(ctx, NewEvent(f))
		// The stage is claimed already: record how it went even when
		// the process is stopping.
		record, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := c.DB.StageOutcome(record, f.ID, outcome); err != nil {
			c.log().Warn("could not record how the person was told", "item", f.Channel+":"+f.Item, "outcome", outcome, "err", err)
		}
		cancel()
	}
	if c.Fired != nil {
		c.Fired(f, outcome)
	}
}

func (c *Clock) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}
