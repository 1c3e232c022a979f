package main

import (
	"os"

	"github.com/mcpp/mcpp-chat/hook"
	"github.com/mcpp/mcpp-chat/internal/codexwake"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/turns"
)

// sessionTurn is how serve finds the chain of its session's turn, for
// the posts it makes (docs/hooks.md, Chains): the session's hooks record
// the turn under the client process (Claude Code, Codex) that runs both
// them and this server. nil where the client cannot be found: posts then
// carry no chain.
func (in install) sessionTurn() func() (store.Chain, bool) {
	dir := hook.StateDir(in.env)
	if c, ok := codexwake.FindClient(os.Getpid()); ok {
		// Codex gives its servers few variables and its hooks all of
		// its own: the turn is where the hooks (and the doorbell) keep it.
		dir = hook.StateDir(c.Getenv)
	}
	client, ok := turns.ClientOf(os.Getpid())
	if !ok || dir == "" {
		return nil
	}
	root := in.party.Root
	return func() (store.Chain, bool) {
		t, ok := turns.Read(dir, client, root)
		if !ok {
			return store.Chain{}, false
		}
		return store.Chain{ID: t.Chain, Hop: t.Hop}, true
	}
}
