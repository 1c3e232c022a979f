package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	turnrec "github.com/mcpp/mcpp-chat/internal/turns"
)

// Attention across processes, as sessions meet it: the built binaries, a
// post of mesh-gw's that names node-dash in a channel of five, the hooks
// of node-dash and fw-core, and a server whose session's turn is six
// agent-only hops into its chain — on a database file, on a team store,
// and through a team hub.

// attentionSetup is one way to run the chat: where the posts go, and the
// member machine (or host) whose hooks and servers the test runs.
type attentionSetup struct {
	w *world // where node-dash's and fw-core's hooks and servers run
	// post makes mesh-gw's call and decodes its result.
	post func(t *testing.T, tool string, args map[string]any, into any)
	// settle waits until what a post changed is what party's hook sees
	// (a member's cache follows the hub a moment later).
	settle func(t *testing.T, party, want string)
}

func TestAttentionAcrossProcesses(t *testing.T) {
	skipShort(t)
	t.Run("sqlite", func(t *testing.T) { attentionAcross(t, localAttention(t, newWorld(t))) })
	t.Run("postgres", func(t *testing.T) {
		w, _, _ := teamWorld(t)
		attentionAcross(t, localAttention(t, w))
	})
	t.Run("hub", func(t *testing.T) { attentionAcross(t, hubAttention(t)) })
}

// localAttention seats the five in all-hands on w's own store.
func localAttention(t *testing.T, w *world) attentionSetup {
	gw := w.repo("mesh-gw")
	for _, name := range []string{"node-dash", "fw-core", "repo-1", "repo-2"} {
		w.mustCall(w.repo(name), "chat_whoami", nil, nil)
	}
	w.mustCall(gw, "chat_channel_new", map[string]any{"name": "all-hands", "parties": []string{"node-dash", "fw-core", "repo-1", "repo-2"}}, nil)
	return attentionSetup{w: w,
		post: func(t *testing.T, tool string, args map[string]any, into any) {
			t.Helper()
			w.mustCall(gw, tool, args, into)
		},
		settle: func(*testing.T, string, string) {}}
}

// hubAttention is a hub on a team store; mesh-gw posts through its own
// token, and node-dash and fw-core are one member machine whose servers
// keep the hook's cache.
func hubAttention(t *testing.T) attentionSetup {
	ht := newHubTeam(t)
	a := ht.hub("A")
	gw := hubMember(t, a.url, ht.issue("gw", "1h", "mesh-gw"), "")
	for _, name := range []string{"repo-1", "repo-2"} {
		mustHubCall(t, hubMember(t, a.url, ht.issue(name, "1h", name), ""), "chat_whoami", nil, nil)
	}
	token := ht.issue("team", "1h", "node-dash", "fw-core")
	m := member(ht.w, memberEnv(ht.w))
	for _, name := range []string{"node-dash", "fw-core"} {
		mustHubCall(t, hubMember(t, a.url, token, name), "chat_whoami", nil, nil)
	}
	if out, err := m.command(m.repo("node-dash"), "connect", a.url, "--token", token); err != nil {
		t.Fatalf("connect: %v\n%s", err, out)
	}
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "all-hands", "parties": []string{"node-dash", "fw-core", "repo-1", "repo-2"}}, nil)
	for _, name := range []string{"node-dash", "fw-core"} {
		m.serve(m.repo(name)) // keeps the hook's cache of its party
	}
	return attentionSetup{w: m,
		post: func(t *testing.T, tool string, args map[string]any, into any) {
			t.Helper()
			mustHubCall(t, gw, tool, args, into)
		},
		settle: func(t *testing.T, party, want string) {
			t.Helper()
			awaitFileHolding(t, filepath.Join(filepath.Dir(hubFile(m)), "hub-cache", party+".json"), want, callTimeout, "the cache never held "+want)
		}}
}

func attentionAcross(t *testing.T, s attentionSetup) {
	w := s.w
	dash, fw := w.repo("node-dash"), w.repo("fw-core")
	var said struct {
		Seq       int      `json:"seq"`
		Addressed []string `json:"addressed"`
	}
	s.post(t, "chat_say", map[string]any{"channel": "all-hands", "text": "@node-dash the API answers 500 since the deploy; mail ops@fw-core.example"}, &said)
	if strings.Join(said.Addressed, ",") != "node-dash" {
		t.Fatalf("addressed = %v", said.Addressed)
	}
	s.settle(t, "node-dash", "the API answers 500")
	s.settle(t, "fw-core", `"Unread":1`)

	// node-dash, addressed, is told in full and its Stop blocks.
	text := contextOf(t, w.event(dash, "d1", "UserPromptSubmit", "prompt", "go on"), "UserPromptSubmit")
	contains(t, text, `#all-hands: 1 new, 1 for you:`, `- mesh-gw #1 said to you: "@node-dash the API answers 500`)
	contains(t, reasonOf(t, w.event(dash, "d2", "Stop")), "the API answers 500")
	// fw-core, not addressed, gets one count line and no block.
	if got := contextOf(t, w.event(fw, "f1", "UserPromptSubmit", "prompt", "go on"), "UserPromptSubmit"); got != "mcpp-chat: #all-hands: 1 new, none for you (chat_read shows them)\n" {
		t.Errorf("fw-core's note: %q", got)
	}
	mustSilent(t, "fw-core's Stop", w.event(fw, "f2", "Stop"))
	var read struct {
		Messages []struct {
			To []string `json:"to"`
		} `json:"messages"`
	}
	if r := w.call(fw, "chat_read", map[string]any{"channel": "all-hands", "peek": true}); !r.Success || json.Unmarshal(r.Result, &read) != nil ||
		len(read.Messages) != 1 || strings.Join(read.Messages[0].To, ",") != "node-dash" {
		t.Errorf("chat_read's to: %s %s", r.Result, r.Error)
	}

	// A turn six agent-only hops into its chain: node-dash's server finds
	// it under the client process (this test), and its post lands but
	// wakes no one.
	if runtime.GOOS != "linux" {
		return
	}
	client, ok := turnrec.Lookup(os.Getpid())
	party, err := config.Identify(dash, true)
	if !ok || err != nil {
		t.Fatalf("this process %v, node-dash's root %v", ok, err)
	}
	state := filepath.Join(envOf(w, "XDG_STATE_HOME"), "mcpp-chat", "hook")
	if err := turnrec.Write(state, client, party.Root, turnrec.Turn{Chain: "feedc0de", Hop: 6, Cause: turnrec.Wake, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	session := w.serve(dash)
	var halted struct {
		Halted string `json:"halted"`
	}
	if _, errText := toolCall(t, session, "chat_say", map[string]any{"channel": "all-hands", "text": "@fw-core can you confirm?"}, &halted); errText != "" || !strings.Contains(halted.Halted, "wakes no one") {
		t.Fatalf("a post at hop 6: %+v %s", halted, errText)
	}
	s.settle(t, "fw-core", "feedc0de")
	mustSilent(t, "fw-core's Stop for a post at hop 6", w.event(fw, "f3", "Stop"))
	contains(t, contextOf(t, w.event(fw, "f4", "SessionStart", "source", "startup"), "SessionStart"),
		`node-dash #2 said to you: "@fw-core can you confirm?"`, "woke no one, nor will the posts after it in its chain")
}

// envOf is a variable of w's processes.
func envOf(w *world, name string) string {
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}
