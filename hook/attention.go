package hook

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// Attention in the hook's notes (docs/protocol.md, Attention): in a
// channel where the party's attention is "mentions", the store's Pending
// quotes only what is addressed to the party, and the channel's head is a
// count line — "#all-hands: 12 new, none for you" — told once per read
// position, never blocking a Stop, never waking. A post whose chain went
// attention.max_hops agent-only hops is named once per chain, with why it
// woke no one.

// attend fills in a channel block what the party's attention adds: the
// count line's key in mentions mode, and the line that says, once per
// chain, that a chain's posts no longer wake anyone.
func attend(b *channelBlock, c store.ChannelPending) {
	if c.Attention == store.AttentionMentions {
		b.countKey = fmt.Sprintf("n/%s/%d", c.Channel, c.Cursor)
		b.forYou = c.ForYou
	}
	if h := c.Halted; h != nil && h.Chain != "" {
		b.msgs = append(b.msgs, line{key: "h/" + h.Chain, text: haltedLine(c.Channel, *h)})
	}
}

// haltedLine says why a chain's posts woke no one.
func haltedLine(channel string, h store.Waker) string {
	return fmt.Sprintf("- #%s: %s #%d woke no one, nor will the posts after it in its chain: it is %d agent-only hops from the prompt a person typed (attention.max_hops); a person's next prompt starts a new chain",
		clean(channel, 80), clean(h.From, 80), h.Seq, h.Hop)
}

// mentionsHead is a mentions-mode channel's head: how many are new, how
// many of them for the party, and how many of those are quoted below.
func mentionsHead(c channelBlock, count string, shown int) string {
	h := fmt.Sprintf("#%s: %s new, ", c.name, count)
	switch {
	case c.forYou == 0:
		h += "none for you"
	case shown == 0:
		h += fmt.Sprintf("%d for you", c.forYou)
	case shown >= c.forYou:
		h += fmt.Sprintf("%d for you:", c.forYou)
	default:
		h += fmt.Sprintf("%d for you, newest %d:", c.forYou, shown)
	}
	return h
}

// quietLines reports news that is only count lines and receipts of
// channels in mentions mode: no peer's words, nothing waiting on the
// party. Such a note needs no summary around it.
func (r report) quietLines(chans []channelBlock, receipts []line) bool {
	for _, c := range chans {
		if c.countKey == "" || len(c.msgs) > 0 {
			return false
		}
	}
	for _, u := range receipts {
		if parts := strings.Split(u.key, "/"); len(parts) < 3 || !r.mentions[parts[1]] { // r/<channel>/<seq>/…
			return false
		}
	}
	return len(chans)+len(receipts) > 0
}

// countLines is a note of count lines and receipts alone, a line each:
// what a party in mentions mode is told of a channel's talk that is not
// for it, and of who of those it addressed read its words.
func countLines(chans []channelBlock, receipts []line, shown []string) (string, []string) {
	var b strings.Builder
	for _, c := range chans {
		fmt.Fprintf(&b, "mcpp-chat: %s (chat_read shows them)\n", channelHead(c, 0))
		shown = append(shown, c.countKey)
	}
	for _, u := range receipts[:min(len(receipts), receiptsShown)] {
		fmt.Fprintf(&b, "mcpp-chat: your %s\n", strings.TrimPrefix(u.text, "- "))
		shown = append(shown, u.key)
	}
	return b.String(), shown
}

// toWords names whom a message is addressed to, the reader as "you":
// " to you, fw-core"; "" for a message addressed to nobody.
func toWords(to []string, party string) string {
	if len(to) == 0 {
		return ""
	}
	words := make([]string, 0, len(to))
	if slices.Contains(to, party) {
		words = append(words, "you")
	}
	for _, name := range to {
		if name != party {
			words = append(words, clean(name, 80))
		}
	}
	if len(words) > headlineNames+2 {
		words = append(words[:headlineNames+2], strconv.Itoa(len(words)-headlineNames-2)+" more")
	}
	return " to " + strings.Join(words, ", ")
}
