package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// Three interactive Claude Code sessions in tmux, each with the idle wake,
// in a channel where their attention is mentions, told to answer each
// other: each woken turn says "@<next> your turn". A post naming one
// session wakes that one only; after attention.max_hops agent-only hops
// the chain's post lands but wakes no one; a prompt a person types starts
// a new chain, and the sessions wake each other again as far.

// stopRelay in a post ends a session's relay: it reads, and says nothing.
const stopRelay = "STOP-RELAY"

// relay answers every turn of session self after its first: a prompt a
// person typed, or a wake, is answered with a post naming next; the post's
// result ends the turn; a wake whose newest post (the headline quotes it)
// holds stopRelay ends it at once.
func relay(self, next string) scripted.Step {
	return func(turn *scripted.Turn) scripted.Reply {
		switch {
		case turn.Last().IsMCP("chat", "chat_say"):
			return scripted.Reply{Text: "passed it on", Again: true}
		case turn.NewContains(`newest "@` + self + " " + stopRelay):
			return scripted.Reply{Text: "the relay is over", Again: true}
		}
		return scripted.Reply{Calls: []scripted.Call{scripted.MCP("chat", "chat_say",
			map[string]any{"channel": "trio", "text": "@" + next + " your turn"})}, Again: true}
	}
}

// wakes counts the turns a peer's post began or kept going: a wake or a
// Stop block, whose report starts with stopReason.
func wakes(m *scripted.Server) int {
	n := 0
	for _, turn := range turns(m) {
		if turn.NewContains(stopReason) {
			n++
		}
	}
	return n
}

// awaitWakes waits until the session has been woken n times in all, and
// returns the nth wake's turn.
func awaitWakes(t *testing.T, m *scripted.Server, who string, n int) *scripted.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliAwait)
	defer cancel()
	var nth *scripted.Turn
	m.Await(ctx, func(log []scripted.Exchange) bool {
		seen := 0
		for _, e := range log {
			if turn := e.Parsed(); turn != nil && (e.Kind == scripted.TurnRequest || e.Kind == scripted.Extra) && turn.NewContains(stopReason) {
				if seen++; seen == n {
					nth = turn
					return true
				}
			}
		}
		return false
	})
	if nth == nil {
		t.Fatalf("%s was not woken %d times (%d wakes came)", who, n, wakes(m))
	}
	return nth
}

// awaitHalted waits until the session's model got a chat_say result that
// says the post wakes no one.
func awaitHalted(t *testing.T, m *scripted.Server, who string) {
	t.Helper()
	awaitTurn(t, m, who+"'s post past max_hops", func(turn *scripted.Turn) bool {
		last := turn.Last()
		return last.IsMCP("chat", "chat_say") && strings.Contains(last.Text, `"halted"`)
	})
}

func TestClaudeInteractiveMentionsAndHops(t *testing.T) {
	w := newWorld(t)
	w.configure("attention:\n  default_above: 2\n  max_hops: 3\n")
	c := newClaude(t, w)
	requireWakeHook(t, c.settings)
	gw, dash, fw, ops := gitRepo(t, w, "mesh-gw"), gitRepo(t, w, "node-dash"), gitRepo(t, w, "fw-core"), gitRepo(t, w, "ops")
	for _, dir := range []string{dash, fw, ops} {
		w.mustCall(dir, "chat_whoami", map[string]any{}, nil)
	}
	w.mustCall(gw, "chat_channel_new", map[string]any{"name": "trio", "parties": []string{"node-dash", "fw-core", "ops"}}, nil)

	models := map[string]*scripted.Server{}
	terms := map[string]*terminal{}
	for _, s := range []struct{ name, dir, next string }{{"mesh-gw", gw, "node-dash"}, {"node-dash", dash, "fw-core"}, {"fw-core", fw, "mesh-gw"}} {
		models[s.name] = startModel(t, scripted.End("waiting for peers"), relay(s.name, s.next))
		terms[s.name] = c.interactiveAgain(t, s.dir, models[s.name])
		terms[s.name].prompt(t, models[s.name], "prompt-1: wait for peers")
	}
	for name, x := range terms {
		x.awaitIdle(t)
		if n := wakes(models[name]); n != 0 {
			t.Fatalf("%s was woken %d times before anyone wrote", name, n)
		}
	}

	// A person starts the relay at mesh-gw: its post names node-dash (hop
	// 0), which wakes node-dash only (hop 1), whose post wakes fw-core
	// only (hop 2), whose post wakes mesh-gw only (hop 3); mesh-gw's post,
	// three hops into the chain, lands and wakes no one.
	terms["mesh-gw"].prompt(t, models["mesh-gw"], "prompt-2: start the relay")
	awaitWakes(t, models["node-dash"], "node-dash", 1)
	awaitWakes(t, models["fw-core"], "fw-core", 1)
	awaitWakes(t, models["mesh-gw"], "mesh-gw", 1)
	awaitHalted(t, models["mesh-gw"], "mesh-gw")
	// ops, a person's tool outside any chain, names node-dash: the wake
	// that follows is node-dash's second, and tells it why mesh-gw's
	// post woke it not.
	terms["mesh-gw"].awaitIdle(t)
	w.mustCall(ops, "chat_say", map[string]any{"channel": "trio", "text": "@node-dash " + stopRelay + ": enough for now"}, nil)
	barrier := awaitWakes(t, models["node-dash"], "node-dash", 2)
	if !barrier.NewContains("woke no one, nor will the posts after it in its chain") || !barrier.NewContains(stopRelay) {
		t.Errorf("node-dash's wake after the chain stopped:\n%s", describe(barrier.New))
	}

	// A prompt typed at fw-core starts a new chain: mesh-gw (hop 1),
	// node-dash (hop 2) and fw-core (hop 3) wake once more each, and
	// fw-core's post wakes no one.
	terms["node-dash"].awaitIdle(t)
	terms["fw-core"].prompt(t, models["fw-core"], "prompt-3: start again")
	awaitWakes(t, models["mesh-gw"], "mesh-gw", 2)
	awaitWakes(t, models["node-dash"], "node-dash", 3)
	awaitWakes(t, models["fw-core"], "fw-core", 2)
	awaitHalted(t, models["fw-core"], "fw-core")
	terms["fw-core"].awaitIdle(t)
	w.mustCall(ops, "chat_say", map[string]any{"channel": "trio", "text": "@mesh-gw " + stopRelay + ": thanks"}, nil)
	awaitWakes(t, models["mesh-gw"], "mesh-gw", 3)
	for _, x := range terms {
		x.awaitIdle(t)
	}
	// Every wake was of the one party a post named: mesh-gw by fw-core's
	// hop 2, by fw-core's typed post and by ops; node-dash by mesh-gw's
	// typed post, by ops and by mesh-gw's hop 1; fw-core by node-dash's
	// hop 1 and hop 2. The two posts past max_hops woke nobody.
	for name, want := range map[string]int{"mesh-gw": 3, "node-dash": 3, "fw-core": 2} {
		if got := wakes(models[name]); got != want {
			t.Errorf("%s was woken %d times, want %d", name, got, want)
		}
	}
}

// interactiveAgain is interactive for one of several sessions of one
// user: Claude Code asks to use the API key once, and remembers the
// answer for the sessions that follow.
func (c *claudeCode) interactiveAgain(t *testing.T, dir string, model *scripted.Server) *terminal {
	t.Helper()
	x := newTerminal(t, dir, c.env(model.URL), c.bin, "--settings", c.settings, "--allowedTools", "mcp__chat__*")
	x.awaitScreen(t, "Yes, I trust this folder")
	x.choose(t, "Down", "Yes, I trust this folder")
	asks := func(screen string) bool { return strings.Contains(screen, "Do you want to use this API key?") }
	if !x.shows(cliAwait, func(screen string) bool { return asks(screen) || strings.Contains(screen, "Claude Code v") }) {
		t.Fatal("Claude Code never started after the trust dialog")
	}
	x.settle()
	if asks(x.screen()) {
		x.choose(t, "Up", "Yes")
	}
	x.awaitScreen(t, "Claude Code v")
	return x
}
