package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// bothStores runs body on a fresh SQLite store and a fresh PostgreSQL one.
func bothStores(t *testing.T, body func(t *testing.T, db *store.DB)) {
	for _, engine := range []struct {
		name string
		open func(t *testing.T) (*store.DB, error)
	}{
		{"sqlite", func(t *testing.T) (*store.DB, error) {
			return store.Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"))
		}},
		{"postgres", func(t *testing.T) (*store.DB, error) {
			return store.OpenPostgres(context.Background(), pgtest.URL(t), store.Options{})
		}},
	} {
		t.Run(engine.name, func(t *testing.T) {
			db, err := engine.open(t)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			body(t, db)
		})
	}
}

// refused runs chat_read as s and returns the refusal it must give.
func (p *pair) refused(s *Service, args map[string]any) string {
	p.t.Helper()
	raw, _ := json.Marshal(args)
	res, err := s.Call(context.Background(), "chat_read", raw)
	if err == nil {
		p.t.Fatalf("chat_read %s answered %.300s; want a refusal", raw, res.Display)
	}
	return err.Error()
}

// A body_offset that does not fit the message after the cursor marked a
// 38-character message read with an empty body: it is refused instead,
// and the message stays unread and comes whole at the next read.
func TestBodyOffsetThatFitsNoMessageIsRefused(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, db *store.DB) {
		p := newPairOn(t, db)
		const text = "please run the migration before Friday"
		seq := p.say(text)
		for _, c := range []struct {
			args map[string]any
			says string
		}{
			{map[string]any{"channel": "c1", "body_offset": 100}, "pass since="},
			{map[string]any{"channel": "c1", "since": seq - 1, "body_offset": 100}, "has 38 characters, so body_offset 100 is past its end"},
			{map[string]any{"channel": "c1", "since": seq - 1, "body_offset": 38}, "past its end"},
			{map[string]any{"channel": "c1", "since": seq, "body_offset": 5}, "has no message #2"},
			{map[string]any{"channel": "c1", "since": seq - 1, "body_offset": 5, "archived": true}, "is live, not archived"},
		} {
			if msg := p.refused(p.reader, c.args); !strings.Contains(msg, c.says) {
				t.Errorf("%v: refused with %q, want it to say %q", c.args, msg, c.says)
			}
			if n := p.unread(); n != 1 {
				t.Fatalf("%v: unread %d after a refused read, want 1", c.args, n)
			}
		}
		r, _ := p.read(map[string]any{"channel": "c1"})
		if len(r.Messages) != 1 || r.Messages[0].Body != text || r.Messages[0].Part != nil || r.Cursor != seq {
			t.Fatalf("the read after the refusals: %+v, cursor #%d; want #%d whole", r.Messages, r.Cursor, seq)
		}
		// An offset inside the message goes on with it from there.
		r, _ = p.read(map[string]any{"channel": "c1", "since": seq - 1, "body_offset": 7})
		if len(r.Messages) != 1 || r.Messages[0].Body != text[7:] || r.Messages[0].Part == nil || r.Messages[0].Part.Offset != 7 {
			t.Fatalf("since #%d body_offset 7: %+v", seq-1, r.Messages)
		}
	})
}

// Two sessions of one party read a long message in parts; one finishes it,
// a peer writes, and the other follows the next call its own last answer
// named. Nothing is lost: the next call names the message it goes on with,
// so the peer's message comes whole, and the old form of that call (an
// offset without since) is refused rather than cutting the peer's message.
func TestStaleNextNeverLosesAMessage(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, db *store.DB) {
		p := newPairOn(t, db)
		other := &Service{DB: db, Config: p.reader.Config, Manifest: p.reader.Manifest, Me: p.reader.Me} // the same party, another session
		long := strings.Repeat("forty thousand characters of one decision. ", 1000)[:40000]
		seq := p.say(long)
		first, _ := p.read(map[string]any{"channel": "c1"})
		stale := first.Next["chat_read"]
		if stale == nil || first.Messages[0].Part == nil {
			t.Fatalf("a 40,000-character message came whole: %q", first.Cut)
		}
		if stale["since"] != float64(seq-1) {
			t.Errorf("next %v does not name the message it goes on with (since %d)", stale, seq-1)
		}
		for args := stale; args != nil; {
			var r readReply
			p.call(other, "chat_read", args, &r)
			args = r.Next["chat_read"]
		}
		if n := p.unread(); n != 0 {
			t.Fatalf("unread %d once the other session read the last part", n)
		}
		short := p.say("short and important")
		oldForm := map[string]any{"channel": "c1", "body_offset": stale["body_offset"]}
		p.refused(p.reader, oldForm)
		if n := p.unread(); n != 1 {
			t.Fatalf("unread %d after a refused offset without since, want 1", n)
		}
		r, _ := p.read(stale)
		got := map[int64]string{}
		for _, m := range r.Messages {
			got[m.Seq] = m.Body
		}
		if got[short] != "short and important" || r.Cursor != short {
			t.Fatalf("the stale next delivered %v with the cursor at #%d; want #%d whole and the cursor there", got, r.Cursor, short)
		}
		if want := long[int(stale["body_offset"].(float64)):]; got[seq] != want {
			t.Errorf("the stale next delivered %d characters of #%d, want its last %d", len(got[seq]), seq, len(want))
		}
	})
}
