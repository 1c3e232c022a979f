package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's worked example, through two real servers started in two
// repositories as Claude Code starts them (cwd = where it was launched,
// here a subfolder of mesh-gw).
func TestWorkedExampleTwoServers(t *testing.T) {
	w := newWorld(t)
	gw := w.repo("mesh-gw")
	sub := filepath.Join(gw, "src", "radio")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	dashDir := w.repo("node-dash")

	dash := w.serve(dashDir)
	mesh := w.serve(sub)

	var who struct {
		Me string `json:"me"`
	}
	toolCall(t, dash, "chat_whoami", map[string]any{"about": "web dashboard"}, &who)
	if who.Me != "node-dash" {
		t.Fatalf("dash server is %q, want node-dash", who.Me)
	}
	toolCall(t, mesh, "chat_whoami", nil, &who)
	if who.Me != "mesh-gw" {
		t.Fatalf("a server started in a subfolder of mesh-gw is %q, want mesh-gw", who.Me)
	}

	if _, e := toolCall(t, mesh, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil); e != "" {
		t.Fatal(e)
	}
	var asked struct {
		Slug   string `json:"slug"`
		Status string `json:"status"`
	}
	if _, e := toolCall(t, mesh, "chat_ask", map[string]any{"title": "Is the chunk header enum closed?", "body": "I need FRAME_AUX.", "slug": "chunk-api"}, &asked); e != "" {
		t.Fatal(e)
	}
	if asked.Slug != "chunk-api" || asked.Status != "open" {
		t.Fatalf("ask = %+v", asked)
	}

	var inbox struct {
		WaitingOnMe []struct {
			Item  string `json:"item"`
			Needs string `json:"needs"`
		} `json:"waiting_on_me"`
	}
	display, _ := toolCall(t, dash, "chat_inbox", nil, &inbox)
	if len(inbox.WaitingOnMe) != 1 || inbox.WaitingOnMe[0].Item != "chunk-api" || !strings.Contains(inbox.WaitingOnMe[0].Needs, "ack") {
		t.Fatalf("node-dash inbox = %+v", inbox)
	}
	if !strings.Contains(display, "**Waiting on YOU**") {
		t.Fatalf("inbox display lacks the Waiting on YOU section:\n%s", display)
	}

	var replied struct {
		AutoAcked bool   `json:"auto_acked"`
		Re        string `json:"re"`
	}
	display, e := toolCall(t, dash, "chat_reply", map[string]any{"item": "chunk-api", "text": "I own the generator; FRAME_AUX added."}, &replied)
	if e != "" || !replied.AutoAcked || replied.Re != "chunk-api" || !strings.Contains(display, "(auto-acked)") {
		t.Fatalf("reply = %+v %q %s", replied, display, e)
	}

	var read struct {
		Messages []struct {
			From string `json:"from"`
			Body string `json:"body"`
			Kind string `json:"kind"`
		} `json:"messages"`
	}
	toolCall(t, mesh, "chat_read", nil, &read)
	if len(read.Messages) == 0 || read.Messages[len(read.Messages)-1].Body != "I own the generator; FRAME_AUX added." {
		t.Fatalf("mesh-gw did not read the answer: %+v", read)
	}

	var state struct {
		Status      string `json:"status"`
		ArchivedNow *bool  `json:"archived_now"`
	}
	if _, e := toolCall(t, mesh, "chat_resolve", map[string]any{"item": "chunk-api", "note": "Confirmed, no workaround needed."}, &state); e != "" || state.Status != "done" {
		t.Fatalf("resolve: %+v %s", state, e)
	}
	toolCall(t, mesh, "chat_prune_ok", map[string]any{"item": "chunk-api"}, &state)
	if *state.ArchivedNow {
		t.Fatal("archived after one of two prune-oks")
	}
	toolCall(t, dash, "chat_prune_ok", map[string]any{"item": "gw--dash:chunk-api"}, &state)
	if !*state.ArchivedNow {
		t.Fatal("not archived after both prune-oks")
	}

	var live, archived struct {
		Messages []struct {
			Slug string `json:"slug"`
		} `json:"messages"`
	}
	toolCall(t, mesh, "chat_read", map[string]any{"since": 0, "peek": true}, &live)
	for _, m := range live.Messages {
		if m.Slug == "chunk-api" {
			t.Fatal("archived item still in the live channel")
		}
	}
	toolCall(t, mesh, "chat_read", map[string]any{"archived": true}, &archived)
	if len(archived.Messages) == 0 || archived.Messages[0].Slug != "chunk-api" {
		t.Fatalf("archived read = %+v", archived)
	}
}
