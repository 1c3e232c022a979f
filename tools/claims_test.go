package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/golden"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// The claims' tools as a person reads them, for a scripted exchange
// between three parties, pinned in testdata/claims.golden.
func TestClaimsDisplayGolden(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	db, err := store.OpenWith(ctx, filepath.Join(t.TempDir(), "chat.db"), store.Options{Clock: func() time.Time { return time.Unix(0, now.Load()).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	manifest, _ := LoadManifest()
	as := func(name string) *Service {
		return &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: name, Workspace: "/srv/" + name}}
	}
	gw, dash, fw := as("mesh-gw"), as("node-dash"), as("fw-core")
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
	step(fw, "chat_whoami", `{}`)
	step(dash, "chat_whoami", `{}`)
	step(gw, "chat_channel_new", `{"name": "gw--dash", "parties": ["node-dash", "fw-core"]}`)
	step(gw, "chat_claims", `{}`)
	step(gw, "chat_claim", `{"resource": "path:node-dash/proto/**", "reason": "regenerating the frame enum"}`)
	step(dash, "chat_claim", `{"resource": "path:proto/frame.proto", "ttl": "1h", "reason": "adding FRAME_AUX"}`)
	step(dash, "chat_claim", `{"resource": "env:staging", "ttl": "2h", "exclusive": false, "reason": "watching the deploy"}`)
	step(fw, "chat_claim", `{"resource": "env:staging", "reason": "flashing the bench"}`)
	step(fw, "chat_claim", `{"resource": "staging"}`)
	step(fw, "chat_claim", `{"resource": "port:8080", "ttl": "5s"}`)
	step(dash, "chat_claims", `{}`)
	step(dash, "chat_ask", `{"title": "Is the enum regenerated?", "body": "I need FRAME_AUX.", "slug": "enum"}`)
	step(gw, "chat_reply", `{"item": "enum", "text": "Regenerated; the folder is yours now.", "hand_over": "path:node-dash/proto/**"}`)
	step(gw, "chat_release", `{"resource": "path:node-dash/proto/**"}`)
	step(dash, "chat_release", `{"resource": "path:proto/**"}`)
	now.Add(int64(3 * time.Hour))
	step(fw, "chat_claims", `{}`)
	step(dash, "chat_claims", `{}`)
	golden.Check(t, "claims.golden", transcript.String())
}
