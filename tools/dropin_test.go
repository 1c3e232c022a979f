package tools

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// Answers in the Python edition's shape and words where ours could
// easily differ: a client written against it must not notice the swap.

// chat_whoami has the Python edition's keys and types: name, os_user, and
// waiting_on_me as a count; known parties as {name, workspace, about}.
func TestWhoamiHasThePythonShape(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	p.call(p.writer, "chat_ask", map[string]any{"title": "q", "body": "b", "channel": "c1"}, nil)
	var w map[string]any
	p.call(p.reader, "chat_whoami", map[string]any{"about": "the reader"}, &w)
	for key, kind := range map[string]string{
		"name": "string", "workspace": "string", "about": "string", "os_user": "string|null",
		"channels": "list", "unread_total": "number", "waiting_on_me": "number", "known_parties": "list",
	} {
		if got := jsonKind(w[key]); !strings.Contains(kind, got) {
			t.Errorf("whoami %q is %s, want %s", key, got, kind)
		}
	}
	if w["name"] != "reader" || w["waiting_on_me"] != float64(1) {
		t.Errorf("whoami name %v, waiting_on_me %v; want reader, 1", w["name"], w["waiting_on_me"])
	}
	for _, e := range w["known_parties"].([]any) {
		party := e.(map[string]any)
		for _, key := range []string{"name", "workspace", "about"} {
			if _, ok := party[key]; !ok {
				t.Errorf("known party %v lacks %q", party, key)
			}
		}
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return "other"
}

// A reply_to with channel given is looked up in that channel, even by a
// party that sits in several.
func TestSayReplyToInTheGivenChannel(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	p.say("first")
	p.call(p.writer, "chat_channel_new", map[string]any{"name": "c2", "parties": []string{"reader"}}, nil)
	var r struct {
		Channel, Kind, Re string
	}
	p.call(p.writer, "chat_say", map[string]any{"text": "answer", "channel": "c1", "reply_to": "1"}, &r)
	if r.Channel != "c1" || r.Kind != "reply" || r.Re != "#1" {
		t.Fatalf("reply_to 1 in c1: %+v", r)
	}
}

// needs says "it is unattended" for every item waiting on your ack, also
// once another consumer acked it.
func TestNeedsAckSaysUnattendedAsThePythonEditionDoes(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	third := &Service{DB: p.reader.DB, Config: p.reader.Config, Manifest: p.reader.Manifest, Me: store.Identity{Name: "third", Workspace: "/srv/third"}}
	p.call(third, "chat_whoami", map[string]any{}, nil)
	p.call(third, "chat_channel_join", map[string]any{"name": "c1"}, nil)
	p.call(p.writer, "chat_ask", map[string]any{"title": "q", "body": "b", "channel": "c1", "slug": "q"}, nil)
	p.call(third, "chat_ack", map[string]any{"item": "q"}, nil)
	var in struct {
		WaitingOnMe []struct{ Item, Needs string } `json:"waiting_on_me"`
	}
	p.call(p.reader, "chat_inbox", map[string]any{}, &in)
	if len(in.WaitingOnMe) != 1 || in.WaitingOnMe[0].Needs != "your ack (chat_ack) — it is unattended" {
		t.Fatalf("an item acked by another consumer: %+v", in.WaitingOnMe)
	}
}

// The error sentences clients of the Python edition match on.
func TestErrorSentencesClientsMatchOn(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	_, err := p.reader.Call(context.Background(), "chat_nope", json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "Unknown tool") || !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	loner := &Service{DB: p.reader.DB, Config: p.reader.Config, Manifest: p.reader.Manifest, Me: store.Identity{Name: "loner", Workspace: "/srv/loner"}}
	_, err = loner.Call(context.Background(), "chat_say", json.RawMessage(`{"text":"hello"}`))
	if err == nil || !strings.Contains(err.Error(), "not in any channel") {
		t.Errorf("a write while in no channel: %v", err)
	}
}

// waited_seconds has one decimal, as the Python edition rounds it.
func TestWaitedSecondsHasOneDecimal(t *testing.T) {
	t.Parallel()
	if got := tenths(1249 * time.Millisecond); got != 1.2 {
		t.Errorf("1.249 s reported as %v, want 1.2", got)
	}
	p := newPair(t)
	var w struct {
		WaitedSeconds float64 `json:"waited_seconds"`
	}
	p.call(p.writer, "chat_wait", map[string]any{"seconds": 1}, &w)
	if tenth := w.WaitedSeconds * 10; tenth != math.Round(tenth) || w.WaitedSeconds < 0.9 {
		t.Errorf("a 1 s wait reported waited_seconds %v, want about 1 with one decimal", w.WaitedSeconds)
	}
}

// waited_seconds is written as the Python edition writes it, a float
// (0.0, not 0), on either engine: the answer's text is compared, since a
// client that parses it sees no difference.
func TestWaitedSecondsIsWrittenAsAFloat(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, db *store.DB) {
		p := newPairOn(t, db)
		p.say("are you there?")
		res := p.call(p.reader, "chat_wait", map[string]any{"seconds": 5}, nil) // answers at once
		if !pyFloatField(res.JSON, "waited_seconds") {
			t.Errorf("waited_seconds is not written as Python writes a float (one decimal, 0.0 for nothing):\n%s", res.JSON)
		}
	})
}

// pyFloatField reports whether the answer's text writes key's value the
// way Python writes a number of tenths: digits, a point, one digit.
func pyFloatField(answer []byte, key string) bool {
	return regexp.MustCompile(`"` + regexp.QuoteMeta(key) + `":[0-9]+\.[0-9][,}]`).Match(answer)
}

// A wait that answers at once, for what was already waiting, says so
// instead of "Something arrived"; its JSON is the Python edition's
// (arrived: true).
func TestWaitSaysWhatWasAlreadyWaiting(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	p.say("are you there?")
	var w map[string]any
	res := p.call(p.reader, "chat_wait", map[string]any{"seconds": 5}, &w)
	if w["arrived"] != true || !strings.HasPrefix(res.Display, "**Already waiting on you** (from before this wait") {
		t.Errorf("arrived %v, display:\n%s", w["arrived"], res.Display)
	}
	for _, key := range []string{"arrived", "waited_seconds", "channels", "unread_total", "waiting_on_me", "waiting_on_peer"} {
		if _, ok := w[key]; !ok {
			t.Errorf("the wait's JSON lacks %q: %v", key, w)
		}
	}
	if _, ok := w["already"]; ok {
		t.Errorf("the wait's JSON grew a key: %v", w)
	}
}
