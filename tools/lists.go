package tools

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
)

// The answers that list (inbox, whoami, wait, channel_list) keep what fits
// the budget in a stated order — what waits on you first, then your
// channels, then what waits on peers, each list in its usual order (by
// channel, oldest first) — count what they leave out, and name the call
// that shows it. Each list keeps a prefix, so that call's skip goes on
// exactly where the answer stopped.

// section is one list of an answer: what each entry costs, and how many
// entries a fill keeps.
type section struct {
	costs []int
	keep  int
}

// sectionOf costs a list's entries: each one's share of the list's JSON
// (the list encoded once, measured element by element) and its display line.
func sectionOf[T any](list []T, line func(T) string) *section {
	data, _ := encodeJSON(list)
	costs := elementSizes(data)
	for i, e := range list {
		costs[i] += len(line(e))
	}
	return &section{costs: costs}
}

func (s *section) n() int { return len(s.costs) }

// total is what every entry of the section costs.
func (s *section) total() int {
	sum := 0
	for _, c := range s.costs {
		sum += c
	}
	return sum
}

// fill keeps the entries of each section in turn, in order, while they fit.
func fill(room int, secs ...*section) {
	for _, s := range secs {
		for s.keep < s.n() && s.costs[s.keep] <= room {
			room -= s.costs[s.keep]
			s.keep++
		}
	}
}

// elementSizes measures each element of an encoded JSON array as jsonSize
// does, plus the separator json.dumps writes after it.
func elementSizes(array []byte) []int {
	var out []int
	depth, start := 0, 0
	inString, escaped := false, false
	for i, c := range array {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth == 1 {
				start = i + 1
			}
		case (c == ']' || c == '}') && depth == 1 && i > start, c == ',' && depth == 1:
			out = append(out, jsonSize(array[start:i])+2)
			start = i + 1
		}
		if !inString && (c == ']' || c == '}') {
			depth--
		}
	}
	return out
}

// listHeads bounds the section headings a list display adds.
const listHeads = 96

// shortChars is the length of a title or about in a cut list; the item's
// own message, or the party's, holds it in full.
const shortChars = 200

func short(s string) string {
	head, rest := runePrefix(s, shortChars)
	if rest == "" {
		return s
	}
	return head + "…"
}

func shortPtr(s *string) *string {
	if s == nil {
		return nil
	}
	v := short(*s)
	return &v
}

// omitted counts what a cut inbox left out, skipped entries included.
type omitted struct {
	WaitingOnMe   int `json:"waiting_on_me"`
	Channels      int `json:"channels"`
	WaitingOnPeer int `json:"waiting_on_peer"`
	UnreadByPeers int `json:"unread_by_peers"`
	Claims        int `json:"claims,omitempty"`
}

func (o omitted) any() bool {
	return o.WaitingOnMe+o.Channels+o.WaitingOnPeer+o.UnreadByPeers+o.Claims > 0
}

// inboxAnswer is chat_inbox's result, and the heart of wait's: the store's
// inbox with its lists cut to the answer budget.
type inboxAnswer struct {
	Cut string `json:"cut,omitempty"`
	store.Inbox
	Omitted *omitted       `json:"omitted,omitempty"`
	Next    map[string]any `json:"next,omitempty"`
}

// cutInbox keeps what fits budget of in's lists, after skip items: what
// waits on you, your channels, what waits on peers, then your messages a
// peer has not read (a bounded list that skip does not page: the next
// page shows them again). size is the whole answer's size around a given
// inbox answer.
func cutInbox(in store.Inbox, skip int, size func(inboxAnswer) int, budget int) inboxAnswer {
	skipMe := min(skip, len(in.WaitingOnMe))
	skipPeer := min(skip-skipMe, len(in.WaitingOnPeer))
	in.WaitingOnMe, in.WaitingOnPeer = in.WaitingOnMe[skipMe:], in.WaitingOnPeer[skipPeer:]
	ans := inboxAnswer{Inbox: in}
	skipped := omitted{WaitingOnMe: skipMe, WaitingOnPeer: skipPeer}
	secs := inboxSections(in)
	whole := size(emptyInbox(ans)) + listHeads
	for _, sec := range secs {
		whole += sec.total()
	}
	if whole <= budget && !skipped.any() {
		return ans
	}
	if whole > budget && hasLongTitles(in) {
		ans.Inbox = shortInbox(in)
		secs = inboxSections(ans.Inbox)
	}
	return fitInbox(ans, secs, skipped, size, budget)
}

// inboxSections are the inbox's lists in the order of priority.
func inboxSections(in store.Inbox) [6]*section {
	return [6]*section{
		sectionOf(in.WaitingOnMe, waitingOnMeLine),
		sectionOf(in.Channels, channelUnreadLine),
		sectionOf(in.WaitingOnPeer, waitingOnPeerLine),
		sectionOf(in.UnreadByPeers, unreadByPeerLine),
		sectionOf(in.ClaimsHeld, heldClaimLine),
		sectionOf(in.ClaimsAwaited, awaitedClaimLine),
	}
}

// emptyInbox is a with its lists empty.
func emptyInbox(a inboxAnswer) inboxAnswer {
	a.Channels, a.WaitingOnMe, a.WaitingOnPeer = []store.ChannelUnread{}, []store.WaitingOnMe{}, []store.WaitingOnPeer{}
	a.UnreadByPeers = []store.Receipt{}
	a.ClaimsHeld, a.ClaimsAwaited = nil, nil
	return a
}

// fitInbox fills the inbox's lists in the order of priority.
func fitInbox(ans inboxAnswer, secs [6]*section, skipped omitted, size func(inboxAnswer) int, budget int) inboxAnswer {
	in := ans.Inbox
	me, chans, peer, unseen, held, awaited := secs[0], secs[1], secs[2], secs[3], secs[4], secs[5]
	worst := emptyInbox(ans)
	worstOmitted := omitted{math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt}
	worst.Cut, worst.Next = inboxCutLine(worstOmitted, span{math.MaxInt, math.MaxInt, math.MaxInt})
	worst.Omitted = &worstOmitted
	fill(budget-size(worst)-listHeads, me, chans, peer, unseen, held, awaited)
	if me.keep < me.n() {
		peer.keep = 0 // items stay a prefix, so that skip goes on from here
	}
	ans.Channels, ans.WaitingOnMe, ans.WaitingOnPeer = in.Channels[:chans.keep], in.WaitingOnMe[:me.keep], in.WaitingOnPeer[:peer.keep]
	ans.UnreadByPeers = in.UnreadByPeers[:unseen.keep]
	ans.ClaimsHeld, ans.ClaimsAwaited = keepOrNil(in.ClaimsHeld, held.keep), keepOrNil(in.ClaimsAwaited, awaited.keep)
	left := omitted{
		WaitingOnMe:   skipped.WaitingOnMe + me.n() - me.keep,
		Channels:      chans.n() - chans.keep,
		WaitingOnPeer: skipped.WaitingOnPeer + peer.n() - peer.keep,
		UnreadByPeers: unseen.n() - unseen.keep,
		Claims:        held.n() - held.keep + awaited.n() - awaited.keep,
	}
	if left.any() {
		ans.Omitted = &left
		items := span{first: skipped.WaitingOnMe + skipped.WaitingOnPeer, shown: me.keep + peer.keep}
		items.total = items.first + me.n() + peer.n()
		ans.Cut, ans.Next = inboxCutLine(left, items)
	}
	return ans
}

// keepOrNil is list's first n, nil for none (the inbox leaves an empty
// list of claims out).
func keepOrNil[T any](list []T, n int) []T {
	if n == 0 {
		return nil
	}
	return list[:n]
}

// span is the part of a list an answer shows: entries first+1 to
// first+shown of total.
type span struct{ first, shown, total int }

// rest is the skip that shows what comes after the span, or 0 for none.
func (s span) rest() int {
	if s.first+s.shown < s.total {
		return s.first + s.shown
	}
	return 0
}

// inboxCutLine says what a cut inbox left out and which calls show it.
func inboxCutLine(left omitted, items span) (string, map[string]any) {
	var b strings.Builder
	next := map[string]any{}
	fmt.Fprintf(&b, "%s: ", cutNote)
	if left.WaitingOnMe+left.WaitingOnPeer > 0 {
		fmt.Fprintf(&b, "items %d–%d of %d are here (%d waiting on you and %d waiting on peers are not)", items.first+1, items.first+items.shown, items.total, left.WaitingOnMe, left.WaitingOnPeer)
		if rest := items.rest(); rest > 0 {
			b.WriteString("; " + nextCall(next, "chat_inbox", map[string]any{"skip": rest}) + " shows the next")
		}
		if items.first > 0 {
			b.WriteString("; chat_inbox shows the first")
		}
		b.WriteString(". ")
	}
	if left.Channels > 0 {
		fmt.Fprintf(&b, "%s not listed: %s lists them. ", safe.Count(left.Channels, "channel"), nextCall(next, "chat_channel_list", map[string]any{}))
	}
	if left.UnreadByPeers > 0 {
		fmt.Fprintf(&b, "%s of yours that a peer has not read are not listed: chat_read shows each of your messages with its read_by and unread_by. ",
			safe.Count(left.UnreadByPeers, "more message"))
	}
	if left.Claims > 0 {
		fmt.Fprintf(&b, "%s not listed: %s lists them.", safe.Count(left.Claims, "claim"), nextCall(next, "chat_claims", map[string]any{}))
	}
	return strings.TrimSpace(b.String()), next
}

// nextCall records a call that shows the rest of an answer in next (tool
// name → arguments) and writes it as the cut line names it.
func nextCall(next map[string]any, tool string, args map[string]any) string {
	next[tool] = args
	data, _ := encodeJSON(args)
	return tool + " " + string(data)
}

// hasLongTitles reports whether a title would be shortened.
func hasLongTitles(in store.Inbox) bool {
	for _, w := range in.WaitingOnMe {
		if long(w.Title) {
			return true
		}
	}
	for _, w := range in.WaitingOnPeer {
		if long(w.Title) {
			return true
		}
	}
	return false
}

func long(s string) bool { return len(s) > shortChars && utf8.RuneCountInString(s) > shortChars }

// shortInbox is in with long titles shortened.
func shortInbox(in store.Inbox) store.Inbox {
	me := make([]store.WaitingOnMe, len(in.WaitingOnMe))
	for i, w := range in.WaitingOnMe {
		w.Title = short(w.Title)
		me[i] = w
	}
	peer := make([]store.WaitingOnPeer, len(in.WaitingOnPeer))
	for i, w := range in.WaitingOnPeer {
		w.Title = short(w.Title)
		peer[i] = w
	}
	in.WaitingOnMe, in.WaitingOnPeer = me, peer
	return in
}

// shortParties is list with long abouts shortened.
func shortParties(list []store.PartyInfo) []store.PartyInfo {
	if list == nil {
		return nil
	}
	out := make([]store.PartyInfo, len(list))
	for i, p := range list {
		p.About = shortPtr(p.About)
		out[i] = p
	}
	return out
}

// sizeOf is an answer's size.
func sizeOf(display string, value any) int {
	data, _ := encodeJSON(value)
	return answerSize(display, data)
}
