package store

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// A sender sees, per recipient, when each message was read and when an
// item was acked: a read time is when the reader's cursor first reached the
// message; a cursor the person brings back makes what it passes unread, with
// no read time, until it is read again.
func TestReadAndAckTimesPerRecipient(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		db, clock := clockedWorld(t, start)
		ctx := context.Background()
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		for _, text := range []string{"one", "two", "three"} {
			must(t)(db.Say(ctx, gw, SayArgs{Channel: "gw--dash", Text: text}))
		}
		at := func(d time.Duration) string { return Timestamp(start.Add(d)) }
		clock.advance(2 * time.Minute)
		must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 3})) // the join event, "one", "two"
		clock.advance(time.Minute)
		must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 50}))
		readAt := func() []map[string]string {
			t.Helper()
			var out []map[string]string
			for _, m := range readAll(t, db, gw, "gw--dash").Messages {
				if m.Kind == "say" && m.From == "mesh-gw" {
					out = append(out, m.ReadAt)
				}
			}
			return out
		}
		want := []map[string]string{{"node-dash": at(2 * time.Minute)}, {"node-dash": at(2 * time.Minute)}, {"node-dash": at(3 * time.Minute)}}
		if got := readAt(); !reflect.DeepEqual(got, want) {
			t.Errorf("read times\n got %v\nwant %v", got, want)
		}
		// fw-core has read nothing: chat_inbox's receipts say when
		// node-dash read.
		in := must2[Inbox](t)(db.Inbox(ctx, gw))
		if len(in.UnreadByPeers) != 3 || in.UnreadByPeers[2].ReadAt["node-dash"] != at(3*time.Minute) || in.UnreadByPeers[2].ReadAt["fw-core"] != "" {
			t.Errorf("unread_by_peers = %+v", in.UnreadByPeers)
		}

		// The person makes "two" and "three" unread again: no read time
		// until node-dash reads them again.
		var seqOne int64
		for _, m := range readAll(t, db, gw, "gw--dash").Messages {
			if m.Body == "one" {
				seqOne = m.Seq
			}
		}
		must(t)(db.SetCursor(ctx, "node-dash", "gw--dash", seqOne))
		if got := readAt(); got[0]["node-dash"] != at(2*time.Minute) || got[1] != nil || got[2] != nil {
			t.Errorf("after the cursor went back: %v", got)
		}
		clock.advance(time.Minute)
		must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 50}))
		if got := readAt(); got[1]["node-dash"] != at(4*time.Minute) || got[2]["node-dash"] != at(4*time.Minute) {
			t.Errorf("read again: %v", got)
		}

		// An ack's time is the consumer's.
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "enum?", Body: "b", Slug: "enum"}))
		clock.advance(time.Minute)
		must(t)(db.Ack(ctx, dash, "enum", "", ""))
		for _, m := range readAll(t, db, gw, "gw--dash").Messages {
			if m.Slug != "enum" {
				continue
			}
			for _, c := range m.Consumers {
				if want := map[string]string{"mesh-gw": at(4 * time.Minute), "node-dash": at(5 * time.Minute), "fw-core": ""}[c.Party]; c.AckedAt != want || c.Acked != (want != "") {
					t.Errorf("consumer %+v, want acked at %q", c, want)
				}
			}
		}
	})
}
