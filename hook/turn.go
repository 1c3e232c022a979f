package hook

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/turns"
)

// Chains (docs/hooks.md): the hooks know how a session's turn began — a
// prompt a person typed, a wake, a Stop block — and record the turn's
// chain under the client process they run under, where the session's
// server, a child of the same client, finds it for its posts
// (internal/turns).

// clientProcess is the client the hook runs under.
func (o Options) clientProcess() (turns.Client, bool) {
	if o.client != nil {
		return o.client()
	}
	return turns.ClientOf(os.Getpid())
}

// notePrompt records, at UserPromptSubmit, a prompt a person typed as the
// start of a new chain. The prompt Claude Code submits for a wake, and
// the one the Codex doorbell queues, are no person's: their turn was
// recorded by the waiter or the doorbell that woke the session.
func (o Options) notePrompt(pl Payload, root string) {
	if isWakePrompt(pl.Prompt) || isRingPrompt(pl.Prompt) {
		return
	}
	c, ok := o.clientProcess()
	dir := StateDir(o.Env)
	if !ok || dir == "" {
		return
	}
	turns.Write(dir, c, root, turns.Turn{Chain: turns.NewChain(), Cause: turns.Prompt, At: time.Now().UTC(), Session: pl.SessionID})
}

// isWakePrompt reports the prompt Claude Code submits for a wake: a task
// notification that holds the waiter's report (seen with Claude Code
// 2.1.332: "<task-notification>…</task-notification><system-reminder>Stop
// hook blocking error from command …: <the report>").
func isWakePrompt(prompt string) bool {
	return strings.HasPrefix(strings.TrimSpace(prompt), "<task-notification>") && strings.Contains(prompt, stopIntro)
}

// woke records what a Stop block or a wake decided: that its senders woke
// the party (the per-sender limit counts it), and the chain of the turn
// it begins, for the session's server. Failures are silent: the wake
// happened, and a post of the turn then carries the turn's former chain.
func (o Options) woke(ctx context.Context, dir, session, root, cause string, d Decision) {
	now := time.Now()
	AddWakes(ctx, dir, root, d.Senders, now)
	if d.Chain.ID == "" || dir == "" {
		return
	}
	if c, ok := o.clientProcess(); ok {
		turns.Write(dir, c, root, turns.Turn{Chain: d.Chain.ID, Hop: d.Chain.Hop, Cause: cause, At: now.UTC(), Session: session})
	}
}

// settings is the install's configuration as Command resolved it.
func (o Options) settings() config.Config {
	if o.resolved != nil && o.resolved.err == nil {
		return o.resolved.cfg
	}
	_, cfg, err := config.Resolve(o.Env, o.Exe)
	if err != nil {
		return config.Defaults()
	}
	return cfg
}

// wakesPer10m is attention.wakes_per_10m.
func (o Options) wakesPer10m() int { return o.settings().Attention.WakesPer10m }

// attentive opens the store with the install's rules of attention.
func (o Options) attentive(open func(context.Context) (*store.ReadOnly, error)) func(context.Context) (*store.ReadOnly, error) {
	a := o.settings().Attention
	rules := store.Attention{MaxBroadcast: a.MaxBroadcast, DefaultAbove: a.DefaultAbove, MaxHops: a.MaxHops}
	return func(ctx context.Context) (*store.ReadOnly, error) {
		r, err := open(ctx)
		if err == nil {
			r.SetAttention(rules)
		}
		return r, err
	}
}

// attentionFile reports the state folder's files of attention: a party's
// wake log and the turn records, swept with the session records.
func attentionFile(name string) bool {
	return strings.HasPrefix(name, "wakes-") || strings.HasPrefix(name, "turn-")
}
