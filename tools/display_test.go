package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/golden"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// The display text of every tool, for a scripted two-repo conversation and
// for the Python edition's database, is pinned in testdata/*.golden.
func TestDisplayGolden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A fixed clock: the inbox shows when your unread messages were written.
	written := time.Date(2026, 11, 29, 18, 9, 27, 0, time.UTC)
	_, as := partiesOn(t, func() time.Time { return written })
	gw, dash := as("mesh-gw"), as("node-dash")
	var transcript strings.Builder
	step := func(s *Service, tool, args string) {
		t.Helper()
		res, err := s.Call(ctx, tool, json.RawMessage(args))
		transcript.WriteString("### " + s.Me.Name + " " + tool + " " + args + "\n")
		if err != nil {
			transcript.WriteString("ERROR: " + err.Error() + "\n\n")
			return
		}
		transcript.WriteString(res.Display + "\n\n")
	}
	step(dash, "chat_whoami", `{"about": "web dashboard"}`)
	step(gw, "chat_channel_new", `{"name": "gw--dash", "about": "gateway <-> dashboard", "parties": ["node-dash"]}`)
	step(gw, "chat_channel_list", `{}`)
	step(gw, "chat_say", `{"text": "gateway firmware 2.3 is flashed\u001b[31m on the bench", "ref": "src/gw.c:120"}`)
	step(gw, "chat_ask", `{"title": "Is the chunk header enum closed?", "body": "I need FRAME_AUX.\nCan your generator emit it?", "slug": "chunk-api"}`)
	step(gw, "chat_inbox", `{}`)
	step(dash, "chat_inbox", `{}`)
	step(dash, "chat_read", `{}`)
	step(dash, "chat_reply", `{"item": "chunk-api", "text": "I own the generator; FRAME_AUX added."}`)
	step(gw, "chat_ask", `{"title": "What baud does the bench UART use?", "body": "I see garbage at 115200."}`)
	step(dash, "chat_ack", `{"item": "what-baud-does-the-bench-uart-use", "note": "checking, ETA 10m"}`)
	step(gw, "chat_read", `{"limit": 2}`)
	step(gw, "chat_resolve", `{"item": "chunk-api", "note": "Confirmed, no workaround needed."}`)
	step(dash, "chat_resolve", `{"item": "what-baud-does-the-bench-uart-use"}`)
	step(gw, "chat_prune_ok", `{"item": "chunk-api"}`)
	step(dash, "chat_prune_ok", `{"item": "chunk-api"}`)
	step(gw, "chat_read", `{"archived": true}`)
	step(dash, "chat_search", `{"query": "generator"}`)
	step(dash, "chat_search", `{"query": "generator", "archived": false}`)
	step(gw, "chat_whoami", `{}`)
	step(gw, "chat_channel_leave", `{"name": "gw--dash"}`)
	step(gw, "chat_channel_join", `{"name": "gw--dash"}`)
	golden.Check(t, "conversation.golden", transcript.String())

	fixture := openFixtureCopy(t)
	transcript.Reset()
	mesh := &Service{DB: fixture, Config: config.Defaults(), Manifest: gw.Manifest, Me: store.Identity{Name: "mesh-gw", Workspace: "/srv/projects/mesh-gw"}}
	for _, c := range []struct{ tool, args string }{
		{"chat_inbox", `{}`}, {"chat_channel_list", `{"all": true}`},
		{"chat_read", `{"channel": "gw--dash", "since": 0, "peek": true}`},
		{"chat_read", `{"channel": "all-hands", "since": 0, "peek": true}`},
		{"chat_read", `{"channel": "gw--dash", "archived": true}`},
		{"chat_search", `{"query": "chunk"}`},
		{"chat_search", `{"query": "uptime", "channel": "gw--dash", "limit": 1}`},
	} {
		step(mesh, c.tool, c.args)
	}
	golden.Check(t, "fixture.golden", transcript.String())
}

func TestInstructionsNameThePartyAndBoundary(t *testing.T) {
	t.Parallel()
	s := &Service{Me: store.Identity{Name: "mesh-gw", Workspace: "/srv/projects/mesh-gw"}}
	text := s.Instructions()
	if len(text) >= 2048 {
		t.Fatalf("instructions are %d bytes; Claude Code cuts them at 2 KB", len(text))
	}
	for _, phrase := range []string{`"mesh-gw"`, "/srv/projects/mesh-gw", "authoritative about your own repository and nothing else", "Never edit another party's files"} {
		if !strings.Contains(text, phrase) {
			t.Errorf("instructions lack %q", phrase)
		}
	}
}
