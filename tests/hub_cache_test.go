package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The hook's cache on a member machine answers only while a serve that
// hears the hub keeps it. Once that serve has ended — closed as a session
// ends, or as `claude mcp list` ends the one it starts, or killed — the
// hook asks the hub itself and tells what came since, and doctor calls no
// cache fresh.
func TestHubMemberHookAsksTheHubOnceServeEnds(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	a := ht.hub("A")
	m, dashDir, _ := ht.connectedDash(a)
	gw := hubMember(t, a.url, ht.issue("gw", "1h", "mesh-gw"), "")
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)
	ask := func(slug string) {
		t.Helper()
		mustHubCall(t, gw, "chat_ask", map[string]any{"channel": "gw--dash", "title": "Question " + slug + "?", "body": "Please look.", "slug": slug}, nil)
	}
	ask("first")
	cache := filepath.Join(filepath.Dir(hubFile(m)), "hub-cache", "node-dash.json")
	for i, end := range []struct {
		how  string
		stop func(*killable)
		kept string // what the cache holds before the serve ends
		next string // what a peer asks after
	}{
		{"closed", func(k *killable) { k.session.Close() }, "first", "second"},
		{"killed", (*killable).kill, "second", "third"},
	} {
		k := m.serveKillable(dashDir)
		awaitFileHolding(t, cache, end.kept, callTimeout, "serve kept no cache")
		end.stop(k)
		ask(end.next)

		text := hookAskingTheHub(t, m, dashDir, fmt.Sprintf("s%d", i+1))
		if !strings.Contains(text, "Question "+end.next+"?") {
			t.Errorf("serve %s: SessionStart left out the ask that came after (it answered from the cache the serve kept):\n%s", end.how, text)
		}
		if out, _ := m.command(dashDir, "doctor"); !lineWith(out, "hook cache:", "none fresh") {
			t.Errorf("serve %s: doctor calls a cache fresh, or says nothing of it:\n%s", end.how, out)
		}
	}
}

// A token the hub refuses ends the cache's answers: once the hub has
// refused the running serve, the hook does not answer from what that
// serve kept.
func TestHubMemberHookCacheEndsWithTheToken(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	a := ht.hub("A")
	m, dashDir, tok := ht.connectedDash(a)
	gw := hubMember(t, a.url, ht.issue("gw", "1h", "mesh-gw"), "")
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)
	mustHubCall(t, gw, "chat_ask", map[string]any{"channel": "gw--dash", "title": "Is the chunk header enum closed?", "body": "I need FRAME_AUX.", "slug": "chunk-api"}, nil)

	session := m.serve(dashDir)
	s, _ := servers.Load(session)
	serveErr := s.(*served).stderr
	cache := filepath.Join(filepath.Dir(hubFile(m)), "hub-cache", "node-dash.json")
	awaitFileHolding(t, cache, "chunk-api", callTimeout, "serve kept no cache holding the ask")

	ht.revoke(tokenIDOf(tok))
	// The serve's long poll ends at the next change; the one after it is
	// refused, and serve says so.
	mustHubCall(t, gw, "chat_say", map[string]any{"channel": "gw--dash", "text": "are you there?"}, nil)
	for deadline := time.Now().Add(time.Minute); !strings.Contains(serveErr.String(), "the token was revoked"); {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not say the hub refused its token:\n%s", serveErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, event := range []string{"SessionStart", "UserPromptSubmit"} {
		h := m.runHook(dashDir, hookPayload("s1", event, dashDir, "prompt", "go on"), []string{"CLAUDE_PROJECT_DIR=" + dashDir}, "--event", event)
		mustSilent(t, event+" once the hub refused the token", h)
	}
}

// hookAskingTheHub is what SessionStart tells a new session in dir on a
// member machine with no cache to answer from: the hook asks the hub,
// within its time, which a loaded machine can make it miss (it is then
// silent), so a silent answer is asked again, a few times.
func hookAskingTheHub(t *testing.T, m *world, dir, session string) string {
	t.Helper()
	for try := 1; ; try++ {
		h := m.runHook(dir, hookPayload(session, "SessionStart", dir, "source", "startup"), []string{"CLAUDE_PROJECT_DIR=" + dir}, "--event", "SessionStart")
		if h.stdout != "" || try == 10 {
			return contextOf(t, h, "SessionStart")
		}
	}
}
