// Package transcript is the conversation as a person reads it: replies
// gathered under the message they answer, items with their state and who
// they wait on, as text for a terminal (mcpp-chat log). The web page
// (internal/web) shares the threads and the wording of states.
package transcript

import (
	"strconv"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// Thread is a message and the replies to it, in order; a reply to a reply
// is a thread of its own under that reply.
type Thread struct {
	Message store.Message
	Replies []*Thread
}

// Threads gathers a run of one channel's messages (in seq order) into
// threads: each reply under the message it answers when that message is in
// the run, otherwise on its own, where it was written.
func Threads(msgs []store.Message) []*Thread {
	bySeq := make(map[int64]*Thread, len(msgs))
	bySlug := map[string]*Thread{}
	var top []*Thread
	for _, m := range msgs {
		th := &Thread{Message: m}
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
