package store

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiptsOf finds message seq in list and returns its receipts.
func receiptsOf(t *testing.T, list []Message, seq int64) (readBy, unreadBy []string) {
	t.Helper()
	for _, m := range list {
		if m.Seq == seq {
			return m.ReadBy, m.UnreadBy
		}
	}
	t.Fatalf("#%d is not in the answer", seq)
	return nil, nil
}

// chat_read gives the caller's own messages read_by and unread_by — the
// seated parties but the author whose cursor has, or has not, passed
// them — and they move when a peer reads. Others' messages and events
// carry neither key.
func TestReadReceiptsOnOwnMessages(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash")) // #1, an event of fw-core's
		mine := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Text: "flashed", Channel: "gw--dash"}))
		theirs := must2[SayResult](t)(db.Say(ctx, dash, SayArgs{Text: "seen it", Channel: "gw--dash"}))
		zero := int64(0)
		read := func(who Identity) ReadResult {
			t.Helper()
			return must2[ReadResult](t)(db.Read(ctx, who, ReadArgs{Channel: "gw--dash", Limit: 50, Since: &zero, Peek: true}))
		}
		check := func(step string, wantRead, wantUnread []string) {
			t.Helper()
			r := read(gw)
			readBy, unreadBy := receiptsOf(t, r.Messages, mine.Seq)
			if !reflect.DeepEqual(readBy, wantRead) || !reflect.DeepEqual(unreadBy, wantUnread) {
				t.Fatalf("%s: #%d read_by %q, unread_by %q; want %q, %q", step, mine.Seq, readBy, unreadBy, wantRead, wantUnread)
			}
			for _, m := range r.Messages {
				data, _ := json.Marshal(m)
				has := strings.Contains(string(data), `"read_by"`) || strings.Contains(string(data), `"unread_by"`)
				if m.Seq != mine.Seq && has {
					t.Errorf("%s: #%d (%s by %s) carries receipts: %s", step, m.Seq, m.Kind, m.From, data)
				}
				if m.Seq == mine.Seq && !strings.Contains(string(data), `"read_by":[]`) && len(wantRead) == 0 {
					t.Errorf("%s: an empty read_by must be there as []: %s", step, data)
				}
			}
		}
		check("nobody read it", []string{}, []string{"fw-core", "node-dash"})
		must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 50}))
		check("node-dash read it", []string{"node-dash"}, []string{"fw-core"})
		must(t)(db.Read(ctx, fw, ReadArgs{Channel: "gw--dash", Limit: 1, Since: &zero, Peek: true}))
		check("a peek moves nothing", []string{"node-dash"}, []string{"fw-core"})
		must(t)(db.ChannelLeave(ctx, fw, "gw--dash"))
		check("only seated parties count", []string{"node-dash"}, []string{})

		// node-dash's answer carries receipts on its own message only.
		r := read(dash)
		if readBy, unreadBy := receiptsOf(t, r.Messages, theirs.Seq); !reflect.DeepEqual(readBy, []string{}) || !reflect.DeepEqual(unreadBy, []string{"mesh-gw"}) {
			t.Errorf("node-dash's own #%d: read_by %q, unread_by %q", theirs.Seq, readBy, unreadBy)
		}
		if readBy, unreadBy := receiptsOf(t, r.Messages, mine.Seq); readBy != nil || unreadBy != nil {
			t.Errorf("mesh-gw's #%d read by node-dash carries receipts %q, %q", mine.Seq, readBy, unreadBy)
		}
	})
}

// chat_inbox lists the caller's recent messages that a seated peer has
// not read, with who has and who has not and since when; they leave the
// list as the peers read them.
func TestInboxListsOwnMessagesUnreadByPeers(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		say := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Text: "flashed", Channel: "gw--dash"}))
		ask := must2[AskResult](t)(db.Ask(ctx, gw, AskArgs{Title: "Baud?", Body: "115200?", Channel: "gw--dash", Slug: "baud"}))
		must(t)(db.Say(ctx, dash, SayArgs{Text: "not mine to list", Channel: "gw--dash"}))
		unread := func() []Receipt {
			t.Helper()
			return must2[Inbox](t)(db.Inbox(ctx, gw)).UnreadByPeers
		}
		got := unread()
		if len(got) != 2 || got[0].Seq != say.Seq || got[1].Seq != ask.Seq {
			t.Fatalf("unread_by_peers %+v; want #%d and #%d", got, say.Seq, ask.Seq)
		}
		want := Receipt{Channel: "gw--dash", Seq: ask.Seq, Kind: "ask", Item: "baud", Since: got[1].Since,
			ReadBy: []string{}, UnreadBy: []string{"fw-core", "node-dash"}}
		if !reflect.DeepEqual(got[1], want) {
			t.Errorf("the ask: %+v, want %+v", got[1], want)
		}
		if _, err := time.Parse(time.RFC3339Nano, got[0].Since); err != nil || got[0].Kind != "say" || got[0].Item != "" {
			t.Errorf("the say: %+v (since: %v)", got[0], err)
		}
		must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: int(say.Seq)})) // up to the say only
		got = unread()
		if len(got) != 2 || !reflect.DeepEqual(got[0].ReadBy, []string{"node-dash"}) || !reflect.DeepEqual(got[0].UnreadBy, []string{"fw-core"}) {
			t.Fatalf("after node-dash read the say: %+v", got)
		}
		must(t)(db.Read(ctx, fw, ReadArgs{Channel: "gw--dash", Limit: 50}))
		must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 50}))
		if got = unread(); len(got) != 0 {
			t.Fatalf("after everyone read: %+v", got)
		}
		if got == nil {
			t.Error("an empty list must be [] in the JSON, not null")
		}
		if others := must2[Inbox](t)(db.Inbox(ctx, dash)).UnreadByPeers; len(others) != 1 || others[0].UnreadBy[0] != "mesh-gw" {
			t.Errorf("node-dash's list holds its own message only, unread by mesh-gw: %+v", others)
		}
	})
}

// The list is bounded: a message leaves it once it is older than
// ReceiptWindow, or no longer among its channel's newest ReceiptRows rows,
// so a peer that never reads again does not fill it forever.
func TestUnreadByPeersIsBounded(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		var mu sync.Mutex
		now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		}
		advance := func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(d)
		}
		db := worldWith(t, Options{Clock: clock})
		ctx := context.Background()
		must(t)(db.ChannelNew(ctx, gw, "gw--fw", "", []string{"fw-core"}))
		old := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Text: "yesterday", Channel: "gw--fw"}))
		advance(ReceiptWindow - time.Minute)
		fresh := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Text: "today", Channel: "gw--fw"}))
		seqs := func() []int64 {
			t.Helper()
			var out []int64
			for _, u := range must2[Inbox](t)(db.Inbox(ctx, gw)).UnreadByPeers {
				out = append(out, u.Seq)
			}
			return out
		}
		if got := seqs(); !reflect.DeepEqual(got, []int64{old.Seq, fresh.Seq}) {
			t.Fatalf("within the window: %v", got)
		}
		advance(2 * time.Minute)
		if got := seqs(); !reflect.DeepEqual(got, []int64{fresh.Seq}) {
			t.Fatalf("a minute past the window of #%d: %v, want only #%d", old.Seq, got, fresh.Seq)
		}
		for i := range ReceiptRows - 1 {
			must(t)(db.Say(ctx, fw, SayArgs{Text: "chatter " + string(rune('a'+i%26)), Channel: "gw--fw"}))
		}
		if got := seqs(); !reflect.DeepEqual(got, []int64{fresh.Seq}) {
			t.Fatalf("#%d among the newest %d rows: %v", fresh.Seq, ReceiptRows, got)
		}
		must(t)(db.Say(ctx, fw, SayArgs{Text: "one more", Channel: "gw--fw"}))
		if got := seqs(); len(got) != 0 {
			t.Fatalf("#%d behind the newest %d rows: %v", fresh.Seq, ReceiptRows, got)
		}
	})
}

// The hook's read-only handle and the person's view see the receipts too:
// the hook the list chat_inbox gives, the view every message's.
func TestReadOnlyReceipts(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		mine := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Text: "flashed", Channel: "gw--dash"}))
		must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 50}))
		theirs := must2[SayResult](t)(db.Say(ctx, dash, SayArgs{Text: "ok", Channel: "gw--dash"}))
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		r := openRO(t, db.Path())
		p := must2[Pending](t)(r.Pending(ctx, gw.Workspace, 3))
		if len(p.UnreadByPeers) != 1 || p.UnreadByPeers[0].Seq != mine.Seq ||
			!reflect.DeepEqual(p.UnreadByPeers[0].ReadBy, []string{"node-dash"}) || !reflect.DeepEqual(p.UnreadByPeers[0].UnreadBy, []string{"fw-core"}) {
			t.Fatalf("pending's unread_by_peers: %+v", p.UnreadByPeers)
		}
		if len(p.Channels) != 1 || p.Channels[0].ReadByAll != 0 {
			t.Fatalf("before fw-core read: %+v, want gw--dash read by all up to #0", p.Channels)
		}
		conv := must2[Conversation](t)(r.Conversation(ctx, ConversationArgs{Channel: "gw--dash"}))
		for _, c := range []struct {
			seq              int64
			readBy, unreadBy []string
		}{
			{mine.Seq, []string{"node-dash"}, []string{"fw-core"}},
			{theirs.Seq, []string{}, []string{"fw-core", "mesh-gw"}},
		} {
			readBy, unreadBy := receiptsOf(t, conv.Messages, c.seq)
			if !reflect.DeepEqual(readBy, c.readBy) || !reflect.DeepEqual(unreadBy, c.unreadBy) {
				t.Errorf("view of #%d: read_by %q, unread_by %q; want %q, %q", c.seq, readBy, unreadBy, c.readBy, c.unreadBy)
			}
		}
		for _, m := range conv.Messages {
			if m.Kind == "event" && (m.ReadBy != nil || m.UnreadBy != nil) {
				t.Errorf("event #%d carries receipts", m.Seq)
			}
		}
		must(t)(db.Read(ctx, fw, ReadArgs{Channel: "gw--dash", Limit: 50}))
		p = must2[Pending](t)(r.Pending(ctx, gw.Workspace, 3))
		if len(p.UnreadByPeers) != 0 || p.Channels[0].ReadByAll < mine.Seq {
			t.Fatalf("once every peer read #%d: unread_by_peers %+v, channels %+v", mine.Seq, p.UnreadByPeers, p.Channels)
		}
	})
}
