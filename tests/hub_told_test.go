package tests

import (
	"testing"
	"time"
)

// On a member machine of a team hub: node-dash's hook tells its session
// of mesh-gw's message, journals it, and node-dash's serve records it
// through the hub, where mesh-gw, on another machine, reads told_to.
func TestHubMemberToldReachesTheSender(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	a := ht.hub("A")
	m, dashDir, _ := ht.connectedDash(a)
	gw := hubMember(t, a.url, ht.issue("gw", "1h", "mesh-gw"), "")
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)
	var said struct{ Seq int64 }
	mustHubCall(t, gw, "chat_say", map[string]any{"channel": "gw--dash", "text": "is the enum closed?"}, &said)
	m.serveKillable(dashDir)
	contains(t, hookAskingTheHub(t, m, dashDir, "s1"), "is the enum closed?")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var r struct {
			Messages []struct {
				Seq    int64
				ToldTo map[string]struct{ Via string } `json:"told_to"`
			}
		}
		mustHubCall(t, gw, "chat_read", map[string]any{"channel": "gw--dash", "since": 0, "peek": true}, &r)
		if len(r.Messages) > 0 && r.Messages[0].Seq == said.Seq && r.Messages[0].ToldTo["node-dash"].Via == "SessionStart" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mesh-gw never saw node-dash told of #%d: %+v", said.Seq, r.Messages)
		}
	}
}
