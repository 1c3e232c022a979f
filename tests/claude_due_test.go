package tests

import (
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// An ask with a due time, in Claude Code as a person runs it (a tmux
// pane, the hooks `setup hooks --write` writes): the idle session is woken
// for the ask, leaves it unacked, and when its due time passes is woken
// once more — the model's request holds OVERDUE — and then not again.
func TestClaudeInteractiveOverdueWakesOnceMore(t *testing.T) {
	w, c, gw, dash := interactiveWorld(t)
	model := startModel(t,
		scripted.End("waiting for peers"),
		scripted.End("noted"), // the ask's wake: left unacked
		scripted.Do(scripted.MCP("chat", "chat_ack", map[string]any{"item": "tls"})), // the overdue wake
		scripted.End("acked tls"))
	x := c.interactive(t, gw, model)
	x.prompt(t, model, "prompt-1: wait for peers")
	waiter := awaitWaiter(t, w, "")

	const title = "Can we move to TLS 1.3?"
	// Long enough for the ask's own wake to come and go first on a loaded
	// machine; the overdue wake then comes within the next wait.
	w.mustCall(dash, "chat_ask", map[string]any{"title": title, "body": "Please look.", "slug": "tls", "consumers": []string{"mesh-gw"}, "due": "40s"}, nil)
	first := awaitTurn(t, model, "the ask's wake", func(turn *scripted.Turn) bool {
		return turn.NewContains(stopReason) && turn.NewContains(title)
	})
	if first.NewContains("OVERDUE") {
		t.Fatalf("the ask's own wake came after its due time; the test needs a later due:\n%s", describe(first.New))
	}
	awaitWaiter(t, w, waiter) // armed again once the woken turn ended

	overdue := awaitTurn(t, model, "the overdue wake", func(turn *scripted.Turn) bool {
		return turn.NewContains(stopReason) && turn.NewContains("OVERDUE")
	})
	if !overdue.NewContains(`[tls] "` + title + `" from node-dash — OVERDUE by`) {
		t.Errorf("the overdue wake does not name the item as overdue:\n%s", describe(overdue.New))
	}
	awaitTurn(t, model, "the ack's result", func(turn *scripted.Turn) bool {
		return len(turn.Results) > 0 && strings.Contains(turn.Last().Text, "Acked [tls]")
	})
	x.awaitIdle(t)

	wakes := 0
	for _, turn := range turns(model) {
		if turn.NewContains(stopReason) {
			wakes++
		}
	}
	if wakes != 2 {
		t.Errorf("the session was woken %d times, want 2: the ask, then once more when it was overdue", wakes)
	}
}
