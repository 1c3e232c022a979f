package tools

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"

	"github.com/mcpp/mcpp-chat/internal/transcript"
)

// Clean removes escape sequences and control characters from message text,
// keeping newlines and tabs (shared with the hook through package text).
func Clean(s string) string { return safe.Clean(s) }

// OneLine cleans s, folds it onto one line and cuts it to n runes.
func OneLine(s string, n int) string { return safe.OneLine(s, n) }

func names(list []string) string {
	if len(list) == 0 {
		return "nobody"
	}
	return strings.Join(list, ", ")
}

// itemLine is the one-line form of an item: [slug] **title** · STATUS.
func itemLine(slug, title, status string) string {
	return fmt.Sprintf("[%s] **%s** · %s", slug, OneLine(title, 120), strings.ToUpper(status))
}

// indent quotes a (cleaned) body under its heading line.
func indent(body string) string {
	lines := strings.Split(strings.TrimRight(Clean(body), "\n"), "\n")
	return "  " + strings.Join(lines, "\n  ")
}

// renderMessage is one message of a read: chatter as **from** #seq, items
// with their status and who must still ack, events in italics.
func renderMessage(m store.Message) string {
	switch m.Kind {
	case "event":
		return fmt.Sprintf("_#%d %s_", m.Seq, OneLine(m.Body, 200))
	case "ask":
		var b strings.Builder
		fmt.Fprintf(&b, "**%s** #%d %s%s", m.From, m.Seq, itemLine(m.Slug, m.Title, m.Status), toLine(m))
		if waiting := awaitingAck(m); len(waiting) > 0 && m.Status != "done" {
			fmt.Fprintf(&b, " — awaiting ack from %s", names(waiting))
		}
		b.WriteString(dueLine(m.Dues))
		if m.Ref != "" {
			fmt.Fprintf(&b, " (ref %s)", OneLine(m.Ref, 80))
		}
		for _, n := range m.Escalation {
			b.WriteString("\n" + stageLine(n))
		}
		b.WriteString("\n" + indent(m.Body))
		return b.String()
	}
	head := fmt.Sprintf("**%s** #%d", m.From, m.Seq)
	if m.Re != "" {
		head += " ↳ re " + m.Re
	}
	head += toLine(m)
	if m.Ref != "" {
		head += fmt.Sprintf(" (ref %s)", OneLine(m.Ref, 80))
	}
	return head + "\n" + indent(m.Body)
}

// toLine names the parties a message is addressed to: " → to a, b".
func toLine(m store.Message) string {
	if len(m.To) == 0 {
		return ""
	}
	return " → to " + OneLine(names(m.To), 300)
}

func awaitingAck(m store.Message) []string {
	var out []string
	for _, c := range m.Consumers {
		if !c.Acked {
			out = append(out, c.Party)
		}
	}
	return out
}

// renderInbox is the inbox: unread counts, then Waiting on YOU, then
// Waiting on a peer.
func renderInbox(in store.Inbox) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Inbox of %s** — %s\n", in.Me, safe.Count(in.UnreadTotal, "unread message"))
	if len(in.Channels) == 0 {
		b.WriteString("You are in no channel yet — create one with chat_channel_new or join one with chat_channel_join.\n")
	}
	for _, c := range in.Channels {
		b.WriteString(channelUnreadLine(c))
	}
	b.WriteString("\n")
	if len(in.WaitingOnMe) == 0 {
		b.WriteString("Nothing waiting on you.\n")
	} else {
		b.WriteString("**Waiting on YOU**\n")
		for _, w := range in.WaitingOnMe {
			b.WriteString(waitingOnMeLine(w))
		}
	}
	if len(in.WaitingOnPeer) > 0 {
		b.WriteString("\n**Waiting on a peer**\n")
		for _, w := range in.WaitingOnPeer {
			b.WriteString(waitingOnPeerLine(w))
		}
	}
	if len(in.UnreadByPeers) > 0 {
		b.WriteString("\n**Not yet read by a peer** (your recent messages)\n")
		for _, u := range in.UnreadByPeers {
			b.WriteString(unreadByPeerLine(u))
		}
	}
	if len(in.ClaimsHeld) > 0 {
		b.WriteString("\n**Your claims** (they renew while you work; chat_release each when done)\n")
		for _, c := range in.ClaimsHeld {
			b.WriteString(heldClaimLine(c))
		}
	}
	if len(in.ClaimsAwaited) > 0 {
		b.WriteString("\n**Claims you wait for** (you are told when each ends)\n")
		for _, c := range in.ClaimsAwaited {
			b.WriteString(awaitedClaimLine(c))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// heldClaimLine is one of the caller's claims: what, until when, why.
func heldClaimLine(c store.Claim) string { return claimLine(c, c.Holder) + "\n" }

// awaitedClaimLine is a claim the caller was refused: who holds it.
func awaitedClaimLine(c store.Claim) string { return claimLine(c, "") + "\n" }

func channelUnreadLine(c store.ChannelUnread) string {
	return fmt.Sprintf("- #%s: %d unread · %s\n", c.Channel, c.Unread, names(c.Parties))
}

// waitingOnMeLine names what the item needs as the call that gives it:
// the Python edition's "— it is unattended", which the JSON keeps word
// for word, reads to a person as if the session were.
func waitingOnMeLine(w store.WaitingOnMe) string {
	return fmt.Sprintf("- %s (#%s #%d, from %s) — needs %s%s\n", itemLine(w.Item, w.Title, w.Status), w.Channel, w.Seq, w.From, w.Needs.Action(), dueLine(w.Dues))
}

func waitingOnPeerLine(w store.WaitingOnPeer) string {
	return fmt.Sprintf("- %s (#%s #%d, from %s) — waiting on %s%s\n", itemLine(w.Item, w.Title, w.Status), w.Channel, w.Seq, w.From, names(w.WaitingOn), dueLine(w.Dues))
}

// unreadByPeerLine is one of your messages that a peer has not read, and
// when our hook or wake told the peer of it:
// - #gw--dash #12 say, 2026-11-29 18:09 UTC — not yet read by fw-core (told 2026-11-29 18:10 UTC by wake); seen by node-dash
func unreadByPeerLine(u store.Receipt) string {
	what := u.Kind
	if u.Item != "" {
		what = "[" + u.Item + "]"
	}
	d := transcript.Delivery{Told: u.ToldAt, Read: u.ReadAt}
	line := fmt.Sprintf("- #%s #%d %s, %s — not yet read by %s", u.Channel, u.Seq, what, utcMinute(u.Since), d.Recipients(u.UnreadBy))
	if len(u.ReadBy) > 0 {
		line += "; seen by " + d.Recipients(u.ReadBy)
	}
	return line + "\n"
}

// utcMinute is a stored time to the minute, in UTC.
func utcMinute(at string) string {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return OneLine(at, 40)
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// renderItemState shows an item after ack, resolve or prune-ok: its status
// and who is still awaited.
func renderItemState(verb string, st store.ItemState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s in #%s #%d", verb, itemLine(st.Slug, st.Title, st.Status), st.Channel, st.Seq)
	switch {
	case st.ArchivedNow != nil && *st.ArchivedNow:
		b.WriteString("\nArchived now: done and every consumer gave prune-ok (see chat_read archived=true).")
	case st.Status == "done":
		fmt.Fprintf(&b, "\nAwaiting prune-ok from %s.", names(st.AwaitingPruneOKFrom))
	case len(st.AwaitingAckFrom) > 0:
		fmt.Fprintf(&b, "\nAwaiting ack from %s; the raiser %s resolves it when satisfied.", names(st.AwaitingAckFrom), st.From)
		b.WriteString(dueSentence(st.Dues))
	default:
		fmt.Fprintf(&b, "\nEveryone acked; the raiser %s resolves it when satisfied.", st.From)
	}
	return b.String()
}
