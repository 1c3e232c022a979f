package hook

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/text"
)

// How much of the peers' words a headline quotes.
const (
	headlineNames = 2 // peers named before "and N more"
	headlineWidth = 60
)

// headline is the one line the person at the terminal reads when a Stop
// block or a wake keeps the session going (Claude Code's systemMessage):
// who waits on this session and for what, what is news (fresh, the
// blockingKeys not reported before) first. The model gets the full reason.
//
//	mcpp-chat: mesh-gw is waiting on node-dash: [chunk-api] "Is the enum closed?" needs your ack; 2 unread messages in #gw--dash
func headline(p store.Pending, fresh []string) string {
	news := newSet(fresh)
	if d, ok := toDecide(p, news); ok {
		return fmt.Sprintf("mcpp-chat: %s, your item [%s] %s is OVERDUE by %s: not acked by %s — decide", clean(p.Party, 80),
			clean(d.Item, 60), quote(d.Title, headlineWidth), lateness(d), clean(strings.Join(d.NotAcked, ", "), 80))
	}
	acks := pendingAcks(p, news)
	talk := talkChannels(p, news)
	if n, ok := toClaim(p, news); ok && len(acks)+len(talk) == 0 {
		return fmt.Sprintf("mcpp-chat: %s's claim on %s, which %s was refused, has ended — %s may claim it now", clean(n.Holder, 80),
			clean(n.Resource, headlineWidth), clean(p.Party, 80), clean(p.Party, 80))
	}
	return fmt.Sprintf("mcpp-chat: %s waiting on %s: %s", peersOf(p.Party, acks, talk).subject(), clean(p.Party, 80), waitingFor(acks, talk))
}

// toDecide is the party's own overdue item the ladder woke it for, when
// that is the news.
func toDecide(p store.Pending, news set) (store.WaitingOnMe, bool) {
	for _, w := range p.WaitingOnMe {
		if w.Needs == store.NeedDecide && news[decideKey(w)] {
			return w, true
		}
	}
	return store.WaitingOnMe{}, false
}

// toClaim is a claim the party was refused whose end is the news.
func toClaim(p store.Pending, news set) (store.ClaimEnd, bool) {
	for _, n := range p.ClaimNews {
		if !n.Yours && news[freedKey(n)] {
			return n, true
		}
	}
	return store.ClaimEnd{}, false
}

// pendingAcks lists the items that need the party's ack, news first.
func pendingAcks(p store.Pending, news set) []store.WaitingOnMe {
	var acks []store.WaitingOnMe
	for _, w := range overdueFirst(p.WaitingOnMe) {
		if w.Needs == store.NeedAck {
			acks = append(acks, w)
		}
	}
	isNews := func(w store.WaitingOnMe) bool { return news[ackKey(w)] || news[overdueKey(w)] }
	sort.SliceStable(acks, func(i, j int) bool { return isNews(acks[i]) && !isNews(acks[j]) })
	return acks
}

// talkChannels lists the channels with unread words from a peer, news
// first.
func talkChannels(p store.Pending, news set) []store.ChannelPending {
	var talk []store.ChannelPending
	for _, c := range p.Channels {
		if c.NewestTalk > 0 {
			talk = append(talk, c)
		}
	}
	sort.SliceStable(talk, func(i, j int) bool { return news[talkKey(talk[i])] && !news[talkKey(talk[j])] })
	return talk
}

// peersOf names who waits: the items' authors, then each channel's newest
// speaker (or its seated peers when that message was not fetched).
func peersOf(me string, acks []store.WaitingOnMe, talk []store.ChannelPending) names {
	var who names
	for _, w := range acks {
		who.add(w.From, me)
	}
	for _, c := range talk {
		if m, ok := newestTalk(c); ok {
			who.add(m.From, me)
			continue
		}
		for _, name := range c.Parties {
			who.add(name, me)
		}
	}
	return who
}

// waitingFor says what the peers wait for: the first item to ack, else
// the unread messages and the newest one's words.
func waitingFor(acks []store.WaitingOnMe, talk []store.ChannelPending) string {
	if len(acks) == 0 {
		if len(talk) == 0 {
			return ""
		}
		what := unreadIn(talk)
		if m, ok := newestTalk(talk[0]); ok {
			what += ", newest " + quote(m.Body, headlineWidth)
		}
		return what
	}
	what := fmt.Sprintf("[%s] %s needs your ack", clean(acks[0].Item, 60), quote(acks[0].Title, headlineWidth))
	if overdue(acks[0]) {
		what += ", OVERDUE by " + lateness(acks[0])
	}
	if n := len(acks) - 1; n > 0 {
		what += fmt.Sprintf(" (and %s)", text.Count(n, "more item"))
	}
	if unread := unreadIn(talk); unread != "" {
		what += "; " + unread
	}
	return what
}

// newestTalk finds a channel's newest unread say, ask or reply from a peer
// among the messages fetched.
func newestTalk(c store.ChannelPending) (store.Message, bool) {
	for _, m := range c.Newest {
		if m.Seq == c.NewestTalk {
			return m, true
		}
	}
	return store.Message{}, false
}

// unreadIn counts the unread messages of the channels and names them:
// "3 unread messages in #gw--dash and #ops".
func unreadIn(chans []store.ChannelPending) string {
	total, over := 0, false
	var where []string
	for _, c := range chans {
		if c.Attention == store.AttentionMentions {
			total += c.ForYou // the rest is not for the party: its count line says so
		} else {
			total += c.Unread
			over = over || c.Over
		}
		where = append(where, "#"+clean(c.Channel, 40))
	}
	if total == 0 {
		return ""
	}
	count := text.Count(total, "unread message")
	if over {
		count = "over " + count
	}
	return count + " in " + list(where, headlineNames, "channel")
}

// names lists peers once each, in the order first met.
type names []string

func (n *names) add(name, me string) {
	name = clean(name, 40)
	if name == "" || name == clean(me, 40) {
		return
	}
	for _, have := range *n {
		if have == name {
			return
		}
	}
	*n = append(*n, name)
}

// subject is the names with their verb: "a is", "a and b are".
func (n names) subject() string {
	switch len(n) {
	case 0:
		return "a peer is"
	case 1:
		return n[0] + " is"
	}
	return list(n, headlineNames, "peer") + " are"
}

// list joins words in English, naming at most max of them:
// "a", "a and b", "a, b and 3 more channels".
func list(words []string, max int, more string) string {
	if len(words) > max {
		return strings.Join(words[:max], ", ") + " and " + text.Count(len(words)-max, "more "+more)
	}
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
