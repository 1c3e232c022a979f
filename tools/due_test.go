package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/golden"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// What a due time shows, step by step along its ladder — an ask with one,
// the inboxes before and after it passes, a read with the ladder's record,
// chat_due and chat_reassign — is pinned in testdata/due.golden (go test
// ./tools -run Golden -update rewrites it).
func TestDueGolden(t *testing.T) {
	ctx := context.Background()
	var now atomic.Pointer[time.Time]
	set := func(at time.Time) { now.Store(&at) }
	start := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
	set(start)
	db, as := partiesOn(t, func() time.Time { return *now.Load() })
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
		transcript.WriteString(res.Display + "\n\n" + string(res.JSON) + "\n\n")
	}
	at := func(d time.Duration) {
		set(start.Add(d))
		fired, err := db.Advance(ctx, store.Ladder{RaiserAfter: 15 * time.Minute, PersonAfter: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		transcript.WriteString("### at " + store.Timestamp(start.Add(d)) + " the clock fires:")
		for _, f := range fired {
			transcript.WriteString(" " + f.Item + ":" + f.Stage)
		}
		transcript.WriteString("\n\n")
	}
	step(dash, "chat_whoami", `{}`)
	step(fw, "chat_whoami", `{}`)
	step(gw, "chat_channel_new", `{"name": "gw--dash", "parties": ["node-dash", "fw-core"]}`)
	step(gw, "chat_ask", `{"title": "Nothing due", "body": "No hurry.", "slug": "later", "consumers": ["node-dash"]}`)
	step(gw, "chat_ask", `{"title": "Is the chunk header enum closed?", "body": "I need FRAME_AUX.", "slug": "chunk-api", "consumers": ["node-dash"], "due": "30m"}`)
	step(gw, "chat_ask", `{"title": "Too late", "body": "b", "due": "2026-07-30T09:00:00Z"}`)
	step(gw, "chat_ask", `{"title": "News", "body": "b", "announce": true, "due": "1h"}`)
	step(dash, "chat_inbox", `{}`)
	at(45 * time.Minute)
	step(dash, "chat_inbox", `{}`)
	step(gw, "chat_inbox", `{}`)
	step(dash, "chat_due", `{"item": "chunk-api", "due": "1h"}`)
	at(61 * time.Minute)
	step(gw, "chat_inbox", `{}`)
	step(gw, "chat_reassign", `{"item": "chunk-api", "consumer": "node-dash", "to": "fw-core"}`)
	step(gw, "chat_read", `{"since": 0, "peek": true}`)
	step(gw, "chat_due", `{"item": "chunk-api", "due": "2h"}`)
	step(gw, "chat_due", `{"item": "chunk-api", "due": null}`)
	step(gw, "chat_due", `{"item": "chunk-api"}`)
	golden.Check(t, "due.golden", transcript.String())
}

// Without a due time, chat_ask answers as the Python edition does: no
// key is added (tools/fixture_test.go checks every answer of its
// database; this checks a new ask's).
func TestAskWithoutDueAddsNoKey(t *testing.T) {
	p := newPair(t)
	res := p.call(p.writer, "chat_ask", map[string]any{"title": "t", "body": "b"}, nil)
	var keys map[string]any
	json.Unmarshal(res.JSON, &keys)
	if _, ok := keys["due"]; ok || len(keys) != 7 {
		t.Errorf("ask without due answers %s", res.JSON)
	}
	res = p.call(p.writer, "chat_ask", map[string]any{"title": "u", "body": "b", "due": "1h"}, nil)
	json.Unmarshal(res.JSON, &keys)
	if _, ok := keys["due"]; !ok {
		t.Errorf("ask with due answers %s", res.JSON)
	}
}
