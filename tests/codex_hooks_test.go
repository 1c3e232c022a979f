package tests

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// Codex's lifecycle hooks (0.171), installed as a user installs them:
// `mcpp-chat setup codex --write` merges the server, the feature flag and
// the hooks into ~/.codex/config.toml. Codex runs a hook only once the
// person has trusted it in its terminal interface ("Hooks need review");
// these runs stand in for that with --dangerously-bypass-hook-trust, the
// flag Codex gives automation that vets its hooks itself.
var trustTheHooks = "--dangerously-bypass-hook-trust"

// withHooks is a Codex install set up by `setup codex --write`.
func withHooks(t *testing.T, w *world) *codex {
	t.Helper()
	c := newCodex(t, w)
	c.server, c.setUp = "", true
	return c
}

// developerWith is the index of the first developer message of parts
// holding text, -1 for none. Codex hands a hook's additionalContext to the
// model as a developer message.
func developerWith(parts []scripted.Part, text string) int {
	return slices.IndexFunc(parts, func(p scripted.Part) bool { return p.Role == "developer" && strings.Contains(p.Text, text) })
}

// The context the hook gives at SessionStart and UserPromptSubmit reaches
// the model of a Codex session, before the prompt, once; nothing is
// injected while nothing waits; a resumed session is told what arrived
// since.
func TestCodexHookContextReachesTheModel(t *testing.T) {
	w := newWorld(t)
	c := withHooks(t, w)
	gw, dash := seatPair(t, w)

	model := startModel(t, scripted.End("nothing to do"))
	c.run(t, gw, model, "prompt-1: nothing waits yet", trustTheHooks)
	if first := firstTurn(t, model); first.Contains(ourSummary) {
		t.Errorf("with nothing waiting, the model was told:\n%s", describe(first.Parts))
	}

	w.mustCall(dash, "chat_ask", map[string]any{"title": "Is the enum closed?", "body": "I need FRAME_AUX.", "slug": "enum"}, nil)
	model = startModel(t, scripted.End("seen"))
	c.run(t, gw, model, "prompt-2: what waits?", trustTheHooks)
	first := firstTurn(t, model)
	told := developerWith(first.Parts, ourSummary+"mesh-gw")
	if told < 0 || !strings.Contains(first.Parts[told].Text, `[enum] "Is the enum closed?" from node-dash — needs your ack`) {
		t.Fatalf("the first turn has no developer message from the hook naming the ask:\n%s", describe(first.Parts))
	}
	prompt := slices.IndexFunc(first.Parts, func(p scripted.Part) bool { return p.Role == "user" && strings.HasPrefix(p.Text, "prompt-2") })
	if prompt < told {
		t.Errorf("the hook's context comes after the prompt (%d, %d):\n%s", told, prompt, describe(first.Parts))
	}
	if n := strings.Count(strings.Join(texts(first.Parts), "\n"), ourSummary); n != 1 {
		t.Errorf("the model was told %d times (UserPromptSubmit repeated SessionStart):\n%s", n, describe(first.Parts))
	}

	// The same session resumed later is told what arrived meanwhile.
	w.mustCall(dash, "chat_say", map[string]any{"text": "the radio build is green"}, nil)
	model = startModel(t, scripted.End("seen again"))
	c.run(t, gw, model, "prompt-3: and now?", "resume", "--last", trustTheHooks)
	if turn := firstTurn(t, model); developerWith(turn.New, `"the radio build is green"`) < 0 {
		t.Errorf("the resumed session was not told the peer's new message:\n%s", describe(turn.New))
	}
}

func texts(parts []scripted.Part) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.Text
	}
	return out
}

// A peer writes while the Codex session works: at the end of its turn the
// Stop hook keeps the turn going with the reason, the model reads and
// answers, and the session then ends — one continuation, no loop; a later
// turn with nothing new is not stopped again.
func TestCodexHookStopContinuesWhileAPeerWaits(t *testing.T) {
	w := newWorld(t)
	c := withHooks(t, w)
	gw, dash := seatPair(t, w)

	var peerErr error
	model := startModel(t,
		func(*scripted.Turn) scripted.Reply {
			// The peer writes before this turn's answer, so before its Stop.
			_, peerErr = w.tryCall(dash, "chat_say", map[string]any{"text": "are you there? the build is red"})
			return scripted.Reply{Text: "done for now"}
		},
		scripted.Do(scripted.MCP("chat", "chat_read", map[string]any{})),
		scripted.Do(scripted.MCP("chat", "chat_say", map[string]any{"text": "looking at the build"})),
		scripted.End("answered"))
	c.run(t, gw, model, "prompt-1: work on something", trustTheHooks)
	if peerErr != nil {
		t.Fatal(peerErr)
	}
	// Codex asks the model again at once, with the hook's reason as a
	// user message; the tool searches that load the chat tools make the
	// other turns.
	all := turns(model)
	var stops []int
	for i, turn := range all {
		if turn.NewContains(stopReason) {
			stops = append(stops, i)
		}
	}
	if len(stops) != 1 || stops[0] != 1 {
		t.Fatalf("the Stop hook's reason reached the model in turns %v of %d, want once, in the second", stops, len(all))
	}
	if p := partWith(all[1].New, "user", ""); p == nil || !strings.Contains(p.Text, "are you there? the build is red") {
		t.Errorf("the turn after the Stop hook lacks the reason quoting the peer:\n%s", describe(all[1].New))
	}
	if got := results(model, "chat_read"); len(got) != 1 || !strings.Contains(got[0].Text, "the build is red") {
		t.Errorf("the model's chat_read did not bring the peer's message: %+v", got)
	}
	var read struct {
		Messages []struct{ From, Body string }
	}
	w.mustCall(dash, "chat_read", map[string]any{}, &read)
	if n := len(read.Messages); n == 0 || read.Messages[n-1].From != "mesh-gw" || read.Messages[n-1].Body != "looking at the build" {
		t.Errorf("node-dash did not get mesh-gw's answer: %+v", read.Messages)
	}

	// Nothing new since: the next turn ends when the model does.
	model = startModel(t, scripted.End("nothing new"))
	c.run(t, gw, model, "prompt-2: anything else?", "resume", "--last", trustTheHooks)
	if n := len(turns(model)); n != 1 {
		t.Errorf("with nothing new the session was kept going: %d turns", n)
	}
}
