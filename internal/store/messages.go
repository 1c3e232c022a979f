package store

import (
	"context"
	"strings"
)

// post is a message about to be written.
type post struct {
	kind     string // say, ask, reply, event
	body     string
	slug     string
	title    string
	ref      string
	parentID int64
	status   string
	// to are the parties the post names besides its @words (mentions.go).
	to []string
}

// post writes a message with the channel's next seq. seq is max+1 inside the
// write transaction, so concurrent writers never share one.
func (t *tx) post(c channel, author party, m post) (id, seq int64, err error) {
	if _, err = t.lockChannel(c.id); err != nil {
		return 0, 0, err
	}
	if err = t.row(`SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE channel_id = ?`, c.id).Scan(&seq); err != nil {
		return 0, 0, err
	}
	// No cursor may stand past the newest row, or the rows written below it
	// would count as read by a party that never saw them. Reads here never
	// put one there, but a database an earlier version or the Python
	// edition wrote may hold one (a read with a far since): bring such a
	// cursor back before the new row lands.
	if _, err = t.exec(`UPDATE cursors SET last_seq = ?2 WHERE channel_id = ?1 AND last_seq > ?2`, c.id, seq-1); err != nil {
		return 0, 0, err
	}
	status := m.status
	if status == "" {
		status = "none"
	}
	var parent any
	if m.parentID != 0 {
		parent = m.parentID
	}
	if err = t.insert(&id, `INSERT INTO messages (channel_id, seq, kind, parent_id, slug, title, body, ref, author_id, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		c.id, seq, m.kind, parent, nullable(m.slug), nullable(m.title), m.body, nullable(m.ref), author.id, status, t.now, t.now); err != nil {
		return 0, 0, err
	}
	if m.kind != "event" {
		if err = t.attend(c, author, id, m); err != nil {
			return 0, 0, err
		}
	}
	t.touch(c.name, seq, author.name)
	return id, seq, nil
}

// followOwnPost moves the author's cursor onto its own new message, but only
// when no peer's message is unread before it: a post must never mark a
// peer's words as read.
func (t *tx) followOwnPost(c channel, author party, seq int64) error {
	// EXISTS, not count(*): it stops at the first unread peer row instead
	// of walking everything the author posted since its cursor.
	var skipped bool
	err := t.row(`SELECT EXISTS (SELECT 1 FROM messages m
		WHERE m.channel_id = ?1 AND m.seq < ?3 AND m.is_archived = 0 AND m.author_id <> ?2
		  AND m.seq > coalesce((SELECT last_seq FROM cursors WHERE channel_id = ?1 AND party_id = ?2), 0))`,
		c.id, author.id, seq).Scan(&skipped)
	if err != nil || skipped {
		return err
	}
	return t.advanceCursor(c.id, author.id, seq)
}

// SayArgs are chat_say's arguments.
type SayArgs struct {
	Text, Channel, ReplyTo, Ref string
	// To are parties seated in the channel the post is addressed to,
	// besides those its text names as @name (mentions.go).
	To             []string
	DefaultChannel string
}

// SayResult is chat_say's result; a say with reply_to is a reply and also
// carries the reply's keys.
type SayResult struct {
	Channel   string   `json:"channel"`
	Seq       int64    `json:"seq"`
	Kind      string   `json:"kind"`
	To        []string `json:"to"`
	Re        string   `json:"re,omitempty"`
	AutoAcked *bool    `json:"auto_acked,omitempty"`
	Addressing
}

// Addressing is what the answer of a post says of its attention: the
// parties it is addressed to, and why it wakes no one when its chain went
// too many hops. Both keys are left out when there is nothing to say.
type Addressing struct {
	Addressed []string `json:"addressed,omitempty"`
	Halted    string   `json:"halted,omitempty"`
}

func (a attended) answer() Addressing {
	return Addressing{Addressed: a.addressed, Halted: a.halted}
}

// Say posts chatter, or a reply when ReplyTo is set.
func (d *DB) Say(ctx context.Context, me Identity, a SayArgs) (SayResult, error) {
	var out SayResult
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		if a.ReplyTo != "" {
			addr := a.ReplyTo
			if ch := strings.TrimSpace(a.Channel); ch != "" && !strings.Contains(addr, ":") {
				addr = ch + ":" + addr // the channel was given: reply_to is in it
			}
			r, err := t.reply(p, ReplyArgs{Item: addr, Text: a.Text, Ref: a.Ref, To: a.To, DefaultChannel: a.DefaultChannel})
			if err != nil {
				return err
			}
			out = SayResult{Channel: r.Channel, Seq: r.Seq, Kind: "reply", Re: r.Re, AutoAcked: &r.AutoAcked, Addressing: r.Addressing}
			out.To, err = t.peers(r.channelID, p)
			return err
		}
		c, err := t.seatedChannel(p, a.Channel, a.DefaultChannel)
		if err != nil {
			return err
		}
		_, seq, err := t.post(c, p, post{kind: "say", body: strings.TrimSpace(a.Text), ref: strings.TrimSpace(a.Ref), to: a.To})
		if err != nil {
			return err
		}
		if err := t.followOwnPost(c, p, seq); err != nil {
			return err
		}
		out = SayResult{Channel: c.name, Seq: seq, Kind: "say", Addressing: t.attended.answer()}
		out.To, err = t.peers(c.id, p)
		return err
	})
	return out, err
}

// peers lists the other parties seated in a channel.
func (t *tx) peers(channelID int64, me party) ([]string, error) {
	return t.names(`SELECT p.name FROM channel_parties cp JOIN parties p ON p.id = cp.party_id
		WHERE cp.channel_id = ? AND cp.left_at IS NULL AND p.id <> ? ORDER BY p.name`, channelID, me.id)
}

// ReplyResult is chat_reply's result.
type ReplyResult struct {
	Channel   string `json:"channel"`
	Seq       int64  `json:"seq"`
	Re        string `json:"re"`
	AutoAcked bool   `json:"auto_acked"`
	Addressing
	channelID int64
	to        int64 // the author of what it answers
}

// Reply answers an item or a message.
func (d *DB) Reply(ctx context.Context, me Identity, item, text, defaultChannel string) (ReplyResult, error) {
	return d.ReplyWith(ctx, me, ReplyArgs{Item: item, Text: text, DefaultChannel: defaultChannel})
}

// ReplyArgs are chat_reply's arguments.
type ReplyArgs struct {
	Item, Text, Ref string
	// To are parties seated in the item's channel the reply is addressed
	// to, besides its @names and its thread's parties (mentions.go).
	To             []string
	DefaultChannel string
}

// ReplyWith answers an item or a message.
func (d *DB) ReplyWith(ctx context.Context, me Identity, a ReplyArgs) (ReplyResult, error) {
	var out ReplyResult
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		out, err = t.reply(p, a)
		return err
	})
	return out, err
}

// reply posts a reply; replying to an ask you consume and have not acked
// counts as your ack (no event: the reply itself shows it).
func (t *tx) reply(p party, a ReplyArgs) (ReplyResult, error) {
	addr, text, ref := a.Item, a.Text, a.Ref
	target, err := t.findMessage(p, addr, a.DefaultChannel)
	if err != nil {
		return ReplyResult{}, err
	}
	if target.archived {
		return ReplyResult{}, userErrorf("%s is archived — raise a new item with chat_ask if it needs more", target.label())
	}
	ok, err := t.seated(target.ch.id, p.id)
	if err != nil {
		return ReplyResult{}, err
	}
	if !ok {
		return ReplyResult{}, userErrorf("you are not in '%s' — join it with chat_channel_join first", target.ch.name)
	}
	_, seq, err := t.post(target.ch, p, post{kind: "reply", body: strings.TrimSpace(text), ref: strings.TrimSpace(ref), parentID: target.id, to: a.To})
	if err != nil {
		return ReplyResult{}, err
	}
	if err := t.followOwnPost(target.ch, p, seq); err != nil {
		return ReplyResult{}, err
	}
	out := ReplyResult{Channel: target.ch.name, Seq: seq, Re: target.re(), channelID: target.ch.id, to: target.authorID, Addressing: t.attended.answer()}
	if target.kind == "ask" && target.status != "done" {
		res, err := t.exec(`UPDATE item_consumers SET acked_at = ? WHERE message_id = ? AND party_id = ? AND acked_at IS NULL`, t.now, target.id, p.id)
		if err != nil {
			return out, err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			out.AutoAcked = true
			if _, err := t.exec(`UPDATE messages SET status = 'ack', updated_at = ? WHERE id = ? AND status = 'open'`, t.now, target.id); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}
