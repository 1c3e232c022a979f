package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// callRaw runs a tool as s with raw JSON arguments.
func callRaw(t *testing.T, s *Service, tool, args string) (Result, error) {
	t.Helper()
	return s.Call(context.Background(), tool, json.RawMessage(args))
}

// asks counts the live asks in c1 as the reader sees them.
func (p *pair) asks() int {
	p.t.Helper()
	var r struct{ Messages []struct{ Kind string } }
	p.call(p.reader, "chat_read", map[string]any{"channel": "c1", "since": 0, "peek": true, "limit": 500}, &r)
	n := 0
	for _, m := range r.Messages {
		if m.Kind == "ask" {
			n++
		}
	}
	return n
}

// Every tool that writes takes an idempotency_key: a retry with the same
// key and arguments (in any order) answers the first answer with
// "duplicate": true and writes nothing; other arguments are refused.
func TestKeyedRetryGetsTheFirstAnswer(t *testing.T) {
	bothStores(t, func(t *testing.T, db *store.DB) {
		p := newPairOn(t, db)
		args := `{"title": "Is the enum closed?", "body": "Asking once.", "channel": "c1", "idempotency_key": "k-1"}`
		first, err := callRaw(t, p.writer, "chat_ask", args)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(first.JSON), "duplicate") {
			t.Fatalf("a first answer says duplicate: %s", first.JSON)
		}
		retry, err := callRaw(t, p.writer, "chat_ask", `{"idempotency_key": "k-1", "channel": "c1", "body": "Asking once.", "title": "Is the enum closed?"}`)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(string(first.JSON), "}") + `,"duplicate":true}`
		if string(retry.JSON) != want {
			t.Fatalf("retry = %s\nwant   %s", retry.JSON, want)
		}
		if !strings.HasPrefix(retry.Display, "Duplicate: ") || !strings.HasSuffix(retry.Display, first.Display) {
			t.Fatalf("retry display = %q", retry.Display)
		}
		if n := p.asks(); n != 1 {
			t.Fatalf("%d asks after a retry, want 1", n)
		}
		_, err = callRaw(t, p.writer, "chat_ask", `{"title": "Is the enum open?", "body": "Asking once.", "channel": "c1", "idempotency_key": "k-1"}`)
		if err == nil || !strings.Contains(err.Error(), `idempotency_key "k-1" was used`) || strings.Count(err.Error(), ". ") > 0 {
			t.Fatalf("other arguments with the key: %v, want one sentence refusing it", err)
		}
		// Every writing tool: the retry writes nothing more.
		for _, c := range []struct{ tool, args string }{
			{"chat_say", `{"text": "hello", "channel": "c1"}`},
			{"chat_reply", `{"item": "is-the-enum-closed", "text": "open"}`},
			{"chat_channel_new", `{"name": "c2", "parties": ["reader"]}`},
			{"chat_channel_leave", `{"name": "c2"}`},
			{"chat_channel_join", `{"name": "c2"}`},
		} {
			keyed := strings.TrimSuffix(c.args, "}") + `, "idempotency_key": "` + c.tool + `"}`
			a, err := callRaw(t, p.writer, c.tool, keyed)
			if err != nil {
				t.Fatalf("%s: %v", c.tool, err)
			}
			state, known := db.State()
			b, err := callRaw(t, p.writer, c.tool, keyed)
			if err != nil {
				t.Fatalf("%s retry: %v", c.tool, err)
			}
			if after, ok := db.State(); known && ok && after != state {
				t.Fatalf("%s retry wrote: %s", c.tool, b.JSON)
			}
			if string(b.JSON) != strings.TrimSuffix(string(a.JSON), "}")+`,"duplicate":true}` {
				t.Fatalf("%s retry = %s, first %s", c.tool, b.JSON, a.JSON)
			}
		}
		for _, c := range []struct{ tool, args string }{
			{"chat_ack", `{"item": "c1:is-the-enum-closed"}`},
			{"chat_resolve", `{"item": "c1:is-the-enum-closed", "answered": true}`},
			{"chat_prune_ok", `{"item": "c1:is-the-enum-closed"}`},
		} {
			keyed := strings.TrimSuffix(c.args, "}") + `, "idempotency_key": "` + c.tool + `"}`
			a, err := callRaw(t, p.reader, c.tool, keyed)
			if err != nil {
				t.Fatalf("%s: %v", c.tool, err)
			}
			b, err := callRaw(t, p.reader, c.tool, keyed)
			if err != nil || string(b.JSON) != strings.TrimSuffix(string(a.JSON), "}")+`,"duplicate":true}` {
				t.Fatalf("%s retry = %s (%v), first %s", c.tool, b.JSON, err, a.JSON)
			}
		}
	})
}

// A key is a string of 1 to 128 characters.
func TestKeyIsBounded(t *testing.T) {
	p := newPair(t)
	for _, key := range []string{`""`, `"` + strings.Repeat("k", 129) + `"`, `7`} {
		_, err := callRaw(t, p.writer, "chat_say", `{"text": "hi", "channel": "c1", "idempotency_key": `+key+`}`)
		if err == nil || !strings.Contains(err.Error(), "idempotency_key") {
			t.Fatalf("key %.20s: %v, want a refusal naming idempotency_key", key, err)
		}
	}
}

// A chat_ask without a key that repeats one of the caller's within a
// minute — a client's retry — is that ask, with "duplicate": true; with a
// key, the key decides.
func TestAskRetriedWithoutAKeyIsThatAsk(t *testing.T) {
	bothStores(t, func(t *testing.T, db *store.DB) {
		p := newPairOn(t, db)
		args := `{"title": "Is the enum closed?", "body": "Asking once.", "channel": "c1"}`
		first, err := callRaw(t, p.writer, "chat_ask", args)
		if err != nil {
			t.Fatal(err)
		}
		retry, err := callRaw(t, p.writer, "chat_ask", args)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSuffix(string(first.JSON), "}") + `,"duplicate":true}`; string(retry.JSON) != want {
			t.Fatalf("retry = %s\nwant   %s", retry.JSON, want)
		}
		if !strings.HasPrefix(retry.Display, "Already raised [is-the-enum-closed]") {
			t.Fatalf("retry display = %q", retry.Display)
		}
		if _, err := callRaw(t, p.writer, "chat_ask", strings.TrimSuffix(args, "}")+`, "idempotency_key": "new"}`); err != nil {
			t.Fatal(err)
		}
		if n := p.asks(); n != 2 {
			t.Fatalf("%d asks, want 2 (one without a key and its retry, one with a new key)", n)
		}
	})
}
