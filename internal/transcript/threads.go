// Package transcript is the conversation as a person reads it: replies
// gathered under the message they answer, items with their state and who
// they wait on, as text for a terminal (mcpp-chat log). The web page
// (internal/web) shares the threads and the wording of states.
package transcript

import (
	"strconv"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
)

// Thread is a message and the replies to it, in order; a reply to a reply
// is a thread of its own under that reply.
type Thread struct {
	Message store.Message
	// Receipt says who has read the message, when it is worth saying
	// (see Threads); "" otherwise.
	Receipt string
	Replies []*Thread
}

// Threads gathers a run of one channel's messages (in seq order) into
// threads: each reply under the message it answers when that message is in
// the run, otherwise on its own, where it was written. A message that a
// seated party has not read carries its receipt ("seen by node-dash · not
// yet read by fw-core"), and so does the newest message of the run once
// everyone has read it ("seen by fw-core, node-dash"); a cursor passes
// every row before the one it is at, so the receipts gather at the end.
func Threads(msgs []store.Message) []*Thread {
	bySeq := make(map[int64]*Thread, len(msgs))
	bySlug := map[string]*Thread{}
	var top []*Thread
	newest := newestWithReceipt(msgs)
	for _, m := range msgs {
		th := &Thread{Message: m}
		if len(m.UnreadBy) > 0 || m.Seq == newest {
			th.Receipt = receipt(m)
		}
		bySeq[m.Seq] = th
		if m.Kind == "ask" && m.Slug != "" {
			bySlug[m.Slug] = th
		}
		if parent := parentOf(m, bySeq, bySlug); parent != nil {
			parent.Replies = append(parent.Replies, th)
			continue
		}
		top = append(top, th)
	}
	return top
}

// newestWithReceipt is the seq of the newest message that has receipts.
func newestWithReceipt(msgs []store.Message) int64 {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].ReadBy != nil {
			return msgs[i].Seq
		}
	}
	return 0
}

// receipt is who has read m and who has not, each with what is known of
// its way there (told, read, acked: Delivery); "" when nobody else sits
// in its channel.
func receipt(m store.Message) string {
	d := DeliveryOf(m)
	var parts []string
	if len(m.ReadBy) > 0 {
		parts = append(parts, "seen by "+d.Recipients(m.ReadBy))
	}
	if len(m.UnreadBy) > 0 {
		parts = append(parts, "not yet read by "+d.Recipients(m.UnreadBy))
	}
	return strings.Join(parts, " · ")
}

func partyList(names []string) string {
	clean := make([]string, len(names))
	for i, n := range names {
		clean[i] = safe.OneLine(n, 64)
	}
	return strings.Join(clean, ", ")
}

// parentOf finds the thread a reply answers among those already seen:
// re is the item's slug, or #seq for any other message.
func parentOf(m store.Message, bySeq map[int64]*Thread, bySlug map[string]*Thread) *Thread {
	if m.Re == "" {
		return nil
	}
	if seq, ok := strings.CutPrefix(m.Re, "#"); ok {
		n, err := strconv.ParseInt(seq, 10, 64)
		if err != nil {
			return nil
		}
		return bySeq[n]
	}
	return bySlug[m.Re]
}

// State is an item's state in words: its status and what it still waits
// for ("ACK · resolve owed by mesh-gw"); "" for a message that is no item.
func State(m store.Message) string {
	if m.Kind != "ask" {
		return ""
	}
	if m.Archived != nil && *m.Archived {
		return "ARCHIVED"
	}
	status := strings.ToUpper(m.Status)
	if owed := m.Owed(); !owed.None() {
		return status + " · " + owed.String()
	}
	return status
}
