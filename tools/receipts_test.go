package tools

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// unreadByPeersReply is the part of chat_inbox's JSON about read receipts.
type unreadByPeersReply struct {
	Cut           string
	UnreadByPeers []struct {
		Channel  string
		Seq      int64
		Kind     string
		Since    string
		ReadBy   []string `json:"read_by"`
		UnreadBy []string `json:"unread_by"`
	} `json:"unread_by_peers"`
	Omitted *omitted
}

// The writer's chat_read carries read_by and unread_by on its own
// messages, and its chat_inbox lists the ones the reader has not read,
// in the JSON and the display, until the reader reads them.
func TestReceiptsInReadAndInbox(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	seq := p.say("flashed")
	var in unreadByPeersReply
	res := p.call(p.writer, "chat_inbox", map[string]any{}, &in)
	if len(in.UnreadByPeers) != 1 || in.UnreadByPeers[0].Seq != seq || !reflect.DeepEqual(in.UnreadByPeers[0].UnreadBy, []string{"reader"}) ||
		in.UnreadByPeers[0].ReadBy == nil || in.UnreadByPeers[0].Since == "" {
		t.Fatalf("unread_by_peers %+v", in.UnreadByPeers)
	}
	if want := fmt.Sprintf("- #c1 #%d say, ", seq); !strings.Contains(res.Display, "**Not yet read by a peer**") || !strings.Contains(res.Display, want) ||
		!strings.Contains(res.Display, "— not yet read by reader") {
		t.Errorf("the inbox display does not show it:\n%s", res.Display)
	}

	receipts := func(who *Service) map[string]any {
		t.Helper()
		var r struct{ Messages []map[string]any }
		p.call(who, "chat_read", map[string]any{"channel": "c1", "since": 0, "peek": true}, &r)
		if len(r.Messages) != 1 {
			t.Fatalf("read %+v", r.Messages)
		}
		return r.Messages[0]
	}
	if m := receipts(p.writer); !reflect.DeepEqual(m["read_by"], []any{}) || !reflect.DeepEqual(m["unread_by"], []any{"reader"}) {
		t.Errorf("the writer's own message: %v", m)
	}
	if m := receipts(p.reader); m["read_by"] != nil || m["unread_by"] != nil {
		t.Errorf("a peer's message carries receipts: %v", m)
	}

	// The display says it too (call --display chat_read, the client's
	// first text content), on the writer's own message only.
	readDisplay := func(who *Service) string {
		var r struct{ Messages []map[string]any }
		return p.call(who, "chat_read", map[string]any{"channel": "c1", "since": 0, "peek": true}, &r).Display
	}
	if d := readDisplay(p.writer); !strings.Contains(d, "\n  _not yet read by reader_") {
		t.Errorf("the writer's chat_read display shows no receipt:\n%s", d)
	}
	if d := readDisplay(p.reader); strings.Contains(d, "read by") {
		t.Errorf("the reader's display shows a receipt on a peer's message:\n%s", d)
	}

	p.read(map[string]any{"channel": "c1"})
	if m := receipts(p.writer); !reflect.DeepEqual(m["read_by"], []any{"reader"}) || !reflect.DeepEqual(m["unread_by"], []any{}) {
		t.Errorf("once read: %v", m)
	}
	if d := readDisplay(p.writer); !strings.Contains(d, "\n  _seen by reader (read ") {
		t.Errorf("once read, the display:\n%s", d)
	}
	in = unreadByPeersReply{}
	res = p.call(p.writer, "chat_inbox", map[string]any{}, &in)
	if in.UnreadByPeers == nil || len(in.UnreadByPeers) != 0 || strings.Contains(res.Display, "Not yet read") {
		t.Errorf("once read, the inbox still lists it: %+v\n%s", in.UnreadByPeers, res.Display)
	}
}

// The list is cut to the inbox's budget like the others: a prefix of it,
// the rest counted in omitted and named in the cut line.
func TestUnreadByPeersCutToTheBudget(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	var seqs []int64
	for i := range 40 {
		seqs = append(seqs, p.say(fmt.Sprintf("status %d", i)))
	}
	p.writer.Config.Chat.AnswerBudget = 4000
	var in unreadByPeersReply
	p.call(p.writer, "chat_inbox", map[string]any{}, &in)
	kept := len(in.UnreadByPeers)
	if kept == 0 || kept == len(seqs) {
		t.Fatalf("%d of %d listed in a 4,000-character answer: want some, cut", kept, len(seqs))
	}
	for i, u := range in.UnreadByPeers {
		if u.Seq != seqs[i] {
			t.Fatalf("entry %d is #%d, want #%d: the kept ones are the list's start", i, u.Seq, seqs[i])
		}
	}
	if in.Omitted == nil || in.Omitted.UnreadByPeers != len(seqs)-kept {
		t.Errorf("omitted %+v, want unread_by_peers %d", in.Omitted, len(seqs)-kept)
	}
	if want := fmt.Sprintf("%d more messages of yours that a peer has not read are not listed", len(seqs)-kept); !strings.Contains(in.Cut, want) {
		t.Errorf("cut line %q lacks %q", in.Cut, want)
	}
}
