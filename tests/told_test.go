package tests

import (
	"testing"
	"time"
)

// toldTo is who mesh-gw's message seq says was told of it.
func toldTo(w *world, gw string, seq int64) map[string]struct{ At, Via string } {
	w.t.Helper()
	var r struct {
		Messages []struct {
			Seq    int64
			ToldTo map[string]struct{ At, Via string } `json:"told_to"`
		}
	}
	w.mustCall(gw, "chat_read", map[string]any{"channel": "gw--dash", "since": 0, "peek": true}, &r)
	for _, m := range r.Messages {
		if m.Seq == seq {
			return m.ToldTo
		}
	}
	w.t.Fatalf("no message #%d", seq)
	return nil
}

// awaitTold waits, a minute at most, until mesh-gw's message seq says
// node-dash was told of it, and returns by which event.
func awaitTold(w *world, gw string, seq int64) string {
	w.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if tl, ok := toldTo(w, gw, seq)["node-dash"]; ok {
			return tl.Via
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("mesh-gw's #%d never said node-dash was told", seq)
		}
	}
}

// The processes as a user runs them: node-dash's hook prints its note and
// journals what it told; node-dash's running serve records it; mesh-gw,
// another process, reads told_to. A telling made while no serve runs is
// recorded by the next serve of the party.
func TestHookToldReachesTheSender(t *testing.T) {
	w, gw, dash := hookPair(t) // mesh-gw's say is #1, its ask #2
	s := w.serve(dash)
	toolCall(t, s, "chat_whoami", map[string]any{}, nil)
	contains(t, contextOf(t, w.event(dash, "s1", "UserPromptSubmit"), "UserPromptSubmit"), "the radio build is green")
	if via := awaitTold(w, gw, 1); via != "UserPromptSubmit" {
		t.Fatalf("told by %q, want UserPromptSubmit", via)
	}
	s.Close()

	w.mustCall(gw, "chat_say", map[string]any{"text": "and the docs build"}, nil) // #3
	reasonOf(t, w.event(dash, "s2", "Stop"))
	if got := toldTo(w, gw, 3); got != nil {
		t.Fatalf("recorded %v with no serve of node-dash running", got)
	}
	w.serve(dash) // its start records the telling
	if via := awaitTold(w, gw, 3); via != "Stop" {
		t.Fatalf("told by %q, want Stop", via)
	}
	var in struct {
		UnreadByPeers []struct {
			Seq    int64
			ToldAt map[string]struct{ Via string } `json:"told_at"`
		} `json:"unread_by_peers"`
	}
	w.mustCall(gw, "chat_inbox", map[string]any{}, &in)
	for _, u := range in.UnreadByPeers {
		if u.ToldAt["node-dash"].Via == "" {
			t.Errorf("unread_by_peers #%d has no told_at for node-dash", u.Seq)
		}
	}
}
