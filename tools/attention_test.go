package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/golden"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// The display text of the attention tools and arguments — to, @names,
// @here, chat_attention, a join that sets attention, a reply in a thread,
// a post past max_hops — is pinned in testdata/attention.golden.
func TestAttentionDisplayGolden(t *testing.T) {
	ctx := context.Background()
	written := time.Date(2026, 11, 29, 18, 9, 27, 0, time.UTC)
	db, err := store.OpenWith(ctx, filepath.Join(t.TempDir(), "chat.db"), store.Options{Clock: func() time.Time { return written }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	manifest, _ := LoadManifest()
	as := func(name string) *Service {
		return &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: name, Workspace: "/srv/" + name}}
	}
	names := []string{"mesh-gw", "node-dash", "fw-core", "docs", "ci", "infra", "web", "api", "cli", "sdk"}
	party := map[string]*Service{}
	for _, n := range names {
		party[n] = as(n)
		if _, err := party[n].Call(ctx, "chat_whoami", nil); err != nil {
			t.Fatal(err)
		}
	}
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
	gw := party["mesh-gw"]
	step(gw, "chat_channel_new", `{"name": "all-hands", "parties": ["node-dash", "fw-core", "docs", "ci", "infra", "web", "api", "cli", "sdk"]}`)
	step(gw, "chat_channel_new", `{"name": "gw--dash", "parties": ["node-dash"]}`)
	step(gw, "chat_say", `{"channel": "all-hands", "text": "@node-dash the build is red; mail ops@ci.example", "to": ["fw-core"]}`)
	step(gw, "chat_say", `{"channel": "all-hands", "text": "@here standup"}`)
	step(gw, "chat_say", `{"channel": "all-hands", "text": "hi", "to": ["nod-dash"]}`)
	step(gw, "chat_ask", `{"channel": "all-hands", "title": "Who owns the release?", "body": "@sdk or @cli?", "slug": "release"}`)
	step(party["node-dash"], "chat_reply", `{"item": "all-hands:1", "text": "on it", "to": ["ci"]}`)
	step(party["node-dash"], "chat_read", `{"channel": "all-hands"}`)
	step(party["node-dash"], "chat_attention", `{}`)
	step(party["node-dash"], "chat_attention", `{"channel": "all-hands", "mode": "all"}`)
	step(party["node-dash"], "chat_attention", `{"channel": "all-hands", "mode": "loud"}`)
	step(party["docs"], "chat_channel_join", `{"name": "all-hands", "attention": "mentions"}`)
	halted := as("ci")
	halted.Turn = func() (store.Chain, bool) { return store.Chain{ID: "7f3a", Hop: 6}, true }
	step(halted, "chat_reply", `{"item": "all-hands:1", "text": "green again"}`)
	golden.Check(t, "attention.golden", transcript.String())
}

// A posting call carries the chain of the session's turn; one that came
// with a chain (a member's, through its hub's _meta) keeps it; a read
// carries none.
func TestPostsCarryTheTurnsChain(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	manifest, _ := LoadManifest()
	as := func(name string, hop int) *Service {
		s := &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: name, Workspace: "/srv/" + name}}
		s.Turn = func() (store.Chain, bool) { return store.Chain{ID: "turn-" + name, Hop: hop}, true }
		return s
	}
	gw, dash := as("mesh-gw", 6), as("node-dash", 0)
	if _, err := dash.Call(ctx, "chat_whoami", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Call(ctx, "chat_channel_new", json.RawMessage(`{"name": "gw--dash", "parties": ["node-dash"]}`)); err != nil {
		t.Fatal(err)
	}
	var said store.SayResult
	call := func(s *Service, ctx context.Context, tool, args string, into any) {
		t.Helper()
		res, err := s.Call(ctx, tool, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(res.Value)
		json.Unmarshal(data, into)
	}
	call(gw, ctx, "chat_say", `{"text": "sixth hop"}`, &said)
	if !strings.Contains(said.Halted, "wakes no one") {
		t.Errorf("a post in a turn at hop 6 does not say it wakes no one: %+v", said)
	}
	said = store.SayResult{}
	call(gw, store.WithChain(ctx, store.Chain{ID: "from-hub", Hop: 2}), "chat_say", `{"text": "a member's"}`, &said)
	if said.Halted != "" {
		t.Errorf("the call's own chain (hop 2) gave way to the turn's: %+v", said)
	}
	r, err := store.OpenReadOnly(ctx, db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := r.Pending(ctx, "/srv/node-dash", 3)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Channels[0]
	if c.Halted == nil || c.Halted.Chain != "turn-mesh-gw" || len(c.Wakers) != 1 || c.Wakers[0].Chain != "from-hub" {
		t.Errorf("pending = %+v", c)
	}
	if got := fmt.Sprint(ChainOf(store.WithChain(ctx, store.Chain{ID: "x", Hop: 1}))); got != "map[mcpp-chat/chain:{x 1}]" {
		t.Errorf("a member's _meta = %s", got)
	}
}
