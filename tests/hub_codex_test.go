package tests

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// httpServer is the [mcp_servers.chat] table of a Codex that talks to
// the hub over streamable HTTP, as docs/team.md shows it: the token in
// the variable MCPP_CHAT_TOKEN (Codex takes no inline token for an HTTP
// server), the calls approved (without that, `codex exec` answers each
// call "MCP tool call requires approval, but approval policy is never").
func httpServer(url string) string {
	return "[mcp_servers.chat]\n" +
		"url = " + tomlString(url) + "\n" +
		`bearer_token_env_var = "MCPP_CHAT_TOKEN"` + "\n" +
		`default_tools_approval_mode = "approve"` + "\n"
}

// 4. Codex (`codex exec`) with the hub as its HTTP server, the token in
// MCPP_CHAT_TOKEN, calls the hub's tools in a real turn: both text
// contents reach the model, and what it says is the token's party's, as
// another party reads it from the hub. The control: with a token the hub
// never issued Codex offers no chat tool, and the hub logged refusing it.
func TestHubCodexOverHTTP(t *testing.T) {
	w := memberWorld(t)
	c := newCodex(t, w)
	h := startHub(t)
	token, gwToken := h.issue(t, "node-dash", "codex"), h.issue(t, "mesh-gw", "gw-box")
	c.server, c.env = httpServer(h.url), []string{"MCPP_CHAT_TOKEN=" + token}
	// A party exists on the hub once it has called a tool.
	gw := h.session(t, gwToken)
	toolCall(t, gw, "chat_whoami", map[string]any{}, nil)
	// The folder's name is not the party: the token decides who speaks.
	dir := gitRepo(t, w, "somewhere-else")

	const text = "said by Codex over HTTP"
	model := c.session(t, dir, "say something on the team chat",
		scripted.Do(scripted.MCP("chat", "chat_whoami", map[string]any{})),
		scripted.Do(scripted.MCP("chat", "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"mesh-gw"}})),
		scripted.Do(scripted.MCP("chat", "chat_say", map[string]any{"text": text, "channel": "gw--dash"})),
		scripted.End("done"))

	got := results(model, "chat_whoami")
	if len(got) != 1 {
		t.Fatalf("the model got %d chat_whoami results, want 1: %+v", len(got), got)
	}
	// Codex puts its own "Wall time: … Output:" part first.
	contents := got[0].Contents
	if n := len(contents); got[0].IsError || n < 2 || !strings.HasPrefix(contents[n-2], "**You are node-dash**") {
		t.Fatalf("chat_whoami did not reach the model as node-dash's display then the JSON: %q", contents)
	}
	var who struct{ Me string }
	if err := json.Unmarshal([]byte(contents[len(contents)-1]), &who); err != nil || who.Me != "node-dash" {
		t.Errorf("the last content is not node-dash's result JSON (%v): %q", err, contents[len(contents)-1])
	}
	var made map[string]any
	mustResult(t, model, "chat_channel_new", &made)
	var said struct {
		Channel string
		Seq     int
	}
	mustResult(t, model, "chat_say", &said)

	// Another party, with its own token, reads it from the hub as
	// node-dash's.
	var read struct {
		Messages []struct {
			Seq        int
			From, Body string
		}
	}
	if _, errText := toolCall(t, gw, "chat_read", map[string]any{"channel": "gw--dash", "since": 0}, &read); errText != "" {
		t.Fatalf("mesh-gw's chat_read of gw--dash: %s", errText)
	}
	if len(read.Messages) != 1 || read.Messages[0].Seq != said.Seq || read.Messages[0].From != "node-dash" || read.Messages[0].Body != text {
		t.Fatalf("mesh-gw reads %+v in gw--dash from the hub, want #%d %q from node-dash", read.Messages, said.Seq, text)
	}
	if log := h.log.String(); strings.Contains(log, "status=401") {
		t.Errorf("the hub refused a request of Codex with its token:\n%s", log)
	}

	// The control: a token the hub never issued. Codex's client gets 401
	// at its first request (its stderr: AuthRequired, the hub's
	// WWW-Authenticate), starts the turn without the server, and its
	// tool_search finds nothing of it.
	t.Run("wrong token", func(t *testing.T) {
		c.env = []string{"MCPP_CHAT_TOKEN=mcc_000000000000_not-a-token"}
		model := c.session(t, dir, "look for the team chat",
			scripted.Do(scripted.Builtin("tool_search", map[string]any{"query": "chat_whoami"})),
			scripted.End("done"))
		searched := false
		for _, turn := range turns(model) {
			if turn.Contains("mcp__chat") {
				t.Fatalf("with a wrong token Codex offered the chat server to the model:\n%s", describe(turn.Parts))
			}
			for _, r := range turn.Results {
				if r.Name == "tool_search" {
					searched = true
					if slices.Contains(r.Contents, scripted.CodexName("chat", "chat_whoami")) {
						t.Fatalf("with a wrong token tool_search found chat_whoami: %q", r.Contents)
					}
				}
			}
		}
		if !searched {
			t.Errorf("the model got no tool_search result")
		}
		if log := h.log.String(); !strings.Contains(log, "status=401 path=/mcp") || !strings.Contains(log, "the token is not one this hub issued") {
			t.Errorf("the hub did not log refusing the wrong token with 401:\n%s", tail(log, 4000))
		}
	})
}
