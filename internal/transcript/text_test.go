package transcript

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/golden"
	"github.com/mcpp/mcpp-chat/internal/store"
)

func yes() *bool { v := true; return &v }
func no() *bool  { v := false; return &v }

// conversation is the worked example's channel, written by hand so that
// its times are fixed, with a peer's escapes and bidi overrides in it.
func conversation() (store.ChannelView, []store.Message) {
	c := store.ChannelView{Name: "gw--dash", About: "gateway <-> dashboard", LiveItems: 2,
		Seats: []store.Seat{{Party: "mesh-gw"}, {Party: "node-dash", Unread: 1000, Over: true}}}
	at := func(min int) string {
		return time.Date(2026, 11, 29, 18, min, 9, 235092000, time.UTC).Format("2006-01-02T15:04:05.000000") + "+00:00"
	}
	msgs := []store.Message{
		{Seq: 1, Kind: "say", From: "mesh-gw", Body: "gateway firmware 2.3 is flashed\x1b[31m on the bench", At: at(1), Ref: "src/gw.c:120", To: []string{"node-dash"}},
		{Seq: 2, Kind: "ask", From: "mesh-gw", Slug: "chunk-api", Title: "Is the chunk header enum closed?", Body: "I need FRAME_AUX.\nCan your generator emit it?",
			At: at(2), Status: "ack", Archived: no(), Consumers: []store.Consumer{{Party: "mesh-gw", Acked: true}, {Party: "node-dash", Acked: true}}},
		{Seq: 3, Kind: "reply", From: "node-dash", Body: "I own the generator; FRAME_AUX added.", At: at(3), Re: "chunk-api"},
		{Seq: 4, Kind: "ask", From: "mesh-gw", Slug: "uart-baud", Title: "What baud does the bench UART use?", Body: "I see garbage at 115200.",
			At: at(4), Status: "open", Archived: no(), Consumers: []store.Consumer{{Party: "fw-core"}, {Party: "mesh-gw", Acked: true}, {Party: "node-dash"}}},
		{Seq: 5, Kind: "say", From: "node-dash", Body: "innocent \u202egnp.exe", At: at(5)},
		{Seq: 6, Kind: "reply", From: "mesh-gw", Body: "thanks — and a reply to the reply", At: at(6), Re: "#3"},
		{Seq: 7, Kind: "event", From: "node-dash", Body: "[chunk-api] acked by node-dash", At: at(7)},
		{Seq: 8, Kind: "ask", From: "node-dash", Slug: "freeze", Title: "Freeze window", Body: "Done, waiting on prune-oks.", At: at(8),
			Status: "done", Archived: no(), Consumers: []store.Consumer{{Party: "mesh-gw"}, {Party: "node-dash", Acked: true, PruneOK: true}}},
		// Its item is not in this run: it stands where it was written.
		{Seq: 9, Kind: "reply", From: "fw-core", Body: "an answer to something out of view", At: at(9), Re: "old-item"},
	}
	// Read receipts as the store gives them, with mesh-gw's cursor at #6,
	// node-dash's at #8 and fw-core's at #9.
	cursors := map[string]int64{"fw-core": 9, "mesh-gw": 6, "node-dash": 8}
	for i, m := range msgs {
		if m.Kind == "event" {
			continue
		}
		msgs[i].ReadBy, msgs[i].UnreadBy = []string{}, []string{}
		for _, name := range []string{"fw-core", "mesh-gw", "node-dash"} {
			switch {
			case name == m.From:
			case cursors[name] >= m.Seq:
				msgs[i].ReadBy = append(msgs[i].ReadBy, name)
			default:
				msgs[i].UnreadBy = append(msgs[i].UnreadBy, name)
			}
		}
	}
	return c, msgs
}

func render(color bool) string {
	c, msgs := conversation()
	s := Style{Color: color, Loc: time.UTC}
	var b bytes.Buffer
	b.WriteString(Heading(c, false, s))
	Write(&b, Threads(msgs), s)
	b.WriteString("\n--- as --follow shows them, one at a time\n")
	for _, m := range msgs[5:7] {
		b.WriteString(Post(m, s))
	}
	return b.String()
}

func TestLogGolden(t *testing.T) {
	golden.Check(t, "log.golden", render(false))
	golden.Check(t, "log-color.golden", render(true))
}

// Plain text has no escape at all; in colour, every escape is one of ours.
func TestNoEscapeFromMessageText(t *testing.T) {
	if plain := render(false); strings.ContainsAny(plain, "\x1b\u202e") {
		t.Fatalf("plain text holds an escape or an override:\n%q", plain)
	}
	colored := render(true)
	for _, ours := range []string{reset, bold, dim, red, green, yellow, blue, magenta, cyan} {
		colored = strings.ReplaceAll(colored, ours, "")
	}
	if strings.ContainsAny(colored, "\x1b\u202e") {
		t.Fatalf("a peer's escape reached the terminal:\n%q", colored)
	}
}

// A receipt is shown where a party has not read the message, and on the
// newest message once everyone has: the end of what was read.
func TestReceiptsShowWhereReadingStopped(t *testing.T) {
	_, msgs := conversation()
	receipts := map[int64]string{}
	var walk func([]*Thread)
	walk = func(list []*Thread) {
		for _, th := range list {
			if th.Receipt != "" {
				receipts[th.Message.Seq] = th.Receipt
			}
			walk(th.Replies)
		}
	}
	walk(Threads(msgs))
	want := map[int64]string{8: "seen by fw-core · not yet read by mesh-gw", 9: "not yet read by mesh-gw, node-dash"}
	if !reflect.DeepEqual(receipts, want) {
		t.Errorf("receipts %v, want %v", receipts, want)
	}
	read := msgs[:6]
	receipts = map[int64]string{}
	walk(Threads(read))
	if want := map[int64]string{6: "seen by fw-core, node-dash"}; !reflect.DeepEqual(receipts, want) {
		t.Errorf("a run everyone has read: receipts %v, want %v on its newest message", receipts, want)
	}
}

func TestThreadsGatherReplies(t *testing.T) {
	_, msgs := conversation()
	top := Threads(msgs)
	var seqs []int64
	for _, th := range top {
		seqs = append(seqs, th.Message.Seq)
	}
	if want := []int64{1, 2, 4, 5, 7, 8, 9}; !equal(seqs, want) {
		t.Fatalf("top level = %v, want %v", seqs, want)
	}
	chunk := top[1]
	if len(chunk.Replies) != 1 || chunk.Replies[0].Message.Seq != 3 || len(chunk.Replies[0].Replies) != 1 || chunk.Replies[0].Replies[0].Message.Seq != 6 {
		t.Fatalf("chunk-api's thread is not 2 → 3 → 6")
	}
}

func TestStateSaysWhoIsOwed(t *testing.T) {
	_, msgs := conversation()
	for _, c := range []struct {
		i    int
		want string
	}{
		{1, "ACK · resolve owed by mesh-gw"},
		{3, "OPEN · ack owed by fw-core, node-dash"},
		{7, "DONE · prune-ok owed by mesh-gw"},
		{0, ""},
	} {
		if got := State(msgs[c.i]); got != c.want {
			t.Errorf("#%d: %q, want %q", msgs[c.i].Seq, got, c.want)
		}
	}
	msgs[7].Archived = yes()
	if got := State(msgs[7]); got != "ARCHIVED" {
		t.Errorf("archived: %q", got)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// log shows an item's due time, OVERDUE and by how much, and the ladder's
// record under its state.
func TestLogShowsDueTimesAndTheLadder(t *testing.T) {
	at := "2026-07-30T10:45:00.000000+00:00"
	m := store.Message{Seq: 2, Kind: "ask", From: "mesh-gw", Slug: "tls", Title: "TLS 1.3?", Body: "b", At: "2026-07-30T10:00:00.000000+00:00",
		Status: "open", Archived: no(), Consumers: []store.Consumer{{Party: "mesh-gw", Acked: true}, {Party: "node-dash"}},
		Dues:       store.Dues{Due: "2026-07-30T10:30:00.000000+00:00", OverdueBy: "15m", NotAcked: []string{"node-dash"}, Stage: store.StageRaiser},
		Escalation: []store.StageNote{{Stage: store.StageOverdue, At: at, LateBy: "15m", For: []string{"node-dash"}}, {Stage: store.StageRaiser, At: at, For: []string{"mesh-gw"}}}}
	var b bytes.Buffer
	if err := Write(&b, Threads([]store.Message{m}), Style{Loc: time.UTC}); err != nil {
		t.Fatal(err)
	}
	want := "    OPEN · ack owed by node-dash\n" +
		"    OVERDUE by 15m (due 2026-07-30 10:30) · not acked by node-dash\n" +
		"    ⏰ 2026-07-30 10:45 overdue: not acked by node-dash (15m late: no chat process was running)\n" +
		"    ⏰ 2026-07-30 10:45 raiser mesh-gw woken to decide\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("log:\n%s\nwant:\n%s", b.String(), want)
	}
	m.Dues = store.Dues{Due: "2026-07-30T10:30:00.000000+00:00"}
	if due := Due(m, Style{Loc: time.UTC}); due != "due 2026-07-30 10:30" {
		t.Errorf("not overdue: %q", due)
	}
}
