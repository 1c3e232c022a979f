package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// A party's attention in a channel: with "all" its hooks tell it every
// message in full and any peer's words wake it; with "mentions" only what
// is addressed to it (mentions.go) is told in full and wakes it, and the
// rest is one count line. Reading is never filtered: chat_read, cursors
// and receipts are the same in both.
const (
	AttentionAll      = "all"
	AttentionMentions = "mentions"
)

// Attention are the rules of who is told what (config attention.*).
type Attention struct {
	// MaxBroadcast is how many parties @here and @all may address.
	MaxBroadcast int
	// DefaultAbove: a channel where more parties sit defaults to
	// mentions, one of this many or fewer to all.
	DefaultAbove int
	// MaxHops is the hop from which a post wakes no one (Chain).
	MaxHops int
}

// DefaultAttention are config.yaml's defaults.
func DefaultAttention() Attention {
	return Attention{MaxBroadcast: 8, DefaultAbove: 3, MaxHops: 6}
}

// attention is a handle's rules: nil means the defaults.
type attention struct{ rules *Attention }

func (a attention) get() Attention {
	if a.rules == nil {
		return DefaultAttention()
	}
	return *a.rules
}

func (a attention) maxBroadcast() int { return max(a.get().MaxBroadcast, 1) }
func (a attention) maxHops() int      { return max(a.get().MaxHops, 1) }

// defaultMode is a channel's attention for a party that chose none.
func (a attention) defaultMode(seated int) string {
	if seated > a.get().DefaultAbove {
		return AttentionMentions
	}
	return AttentionAll
}

// SetAttention sets the rules the read-only handle applies (the hook's,
// the hub's); the defaults until then.
func (r *ReadOnly) SetAttention(a Attention) { r.att = attention{rules: &a} }

// AttentionMode checks a mode a call gives: "all" or "mentions".
func AttentionMode(raw string) (string, error) {
	switch mode := strings.ToLower(strings.TrimSpace(raw)); mode {
	case AttentionAll, AttentionMentions:
		return mode, nil
	}
	return "", userErrorf("attention %q is not a mode — pass all (told every message, woken by any) or mentions (only what is addressed to you)", raw)
}

// ChannelAttention is a party's attention in one of its channels.
type ChannelAttention struct {
	Channel   string `json:"channel"`
	Attention string `json:"attention"`
	// Chosen says the party set it; otherwise the channel's size decided.
	Chosen  bool `json:"chosen"`
	Parties int  `json:"parties"`
}

// attentionIn is party p's attention in channel c, where seated parties sit.
func (t *tx) attentionIn(c channel, partyID int64, seated int) (ChannelAttention, error) {
	out := ChannelAttention{Channel: c.name, Parties: seated}
	err := t.row(`SELECT mode FROM attention WHERE channel_id = ? AND party_id = ?`, c.id, partyID).Scan(&out.Attention)
	switch {
	case err == nil:
		out.Chosen = true
	case errors.Is(err, sql.ErrNoRows):
		out.Attention = t.att.defaultMode(seated)
	default:
		return out, err
	}
	return out, nil
}

// setAttention keeps p's choice of mode in channel c.
func (t *tx) setAttention(c channel, p party, mode string) error {
	_, err := t.exec(`INSERT INTO attention (channel_id, party_id, mode, updated_at) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (channel_id, party_id) DO UPDATE SET mode = excluded.mode, updated_at = excluded.updated_at`, c.id, p.id, mode, t.now)
	return err
}

// AttentionArgs are chat_attention's arguments: without Mode it reports.
type AttentionArgs struct {
	Channel, Mode  string
	DefaultChannel string
}

// AttentionResult is chat_attention's result.
type AttentionResult struct {
	Channels []ChannelAttention `json:"channels"`
}

// SetAttention sets the caller's attention in a channel (the channel
// choice rule picks it) with a Mode; without one it reports the caller's
// attention in that channel, or in every channel it sits in when it names
// none.
func (d *DB) SetAttention(ctx context.Context, me Identity, a AttentionArgs) (AttentionResult, error) {
	out := AttentionResult{Channels: []ChannelAttention{}}
	mode := ""
	if strings.TrimSpace(a.Mode) != "" {
		var err error
		if mode, err = AttentionMode(a.Mode); err != nil {
			return out, err
		}
	}
	err := d.update(ctx, func(t *tx) error {
		out.Channels = []ChannelAttention{}
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		var chans []channel
		if mode == "" && strings.TrimSpace(a.Channel) == "" {
			if chans, err = t.seats(p.id); err != nil {
				return err
			}
		} else {
			c, err := t.seatedChannel(p, a.Channel, a.DefaultChannel)
			if err != nil {
				return err
			}
			chans = []channel{c}
		}
		for _, c := range chans {
			if mode != "" {
				if err := t.setAttention(c, p, mode); err != nil {
					return err
				}
			}
			ca, err := t.channelAttention(c, p.id)
			if err != nil {
				return err
			}
			out.Channels = append(out.Channels, ca)
		}
		return nil
	})
	return out, err
}

// channelAttention is p's attention in c, counting who sits there.
func (t *tx) channelAttention(c channel, partyID int64) (ChannelAttention, error) {
	var seated int
	if err := t.row(`SELECT count(*) FROM channel_parties WHERE channel_id = ? AND left_at IS NULL`, c.id).Scan(&seated); err != nil {
		return ChannelAttention{}, err
	}
	return t.attentionIn(c, partyID, seated)
}

// Waker is a peer's newest unread talk in a channel that may wake the
// party (or, as ChannelPending.Halted, that may not), with its chain.
type Waker struct {
	From  string
	Seq   int64
	Chain string `json:",omitempty"`
	Hop   int    `json:",omitempty"`
}

// recentTalk is the channel's newest unread talk from peers, at most
// UnreadCountCap rows read from the newest end, so that what follows costs
// the same however much is unread: ?1 channel, ?2 party, ?3 cursor, ?4 the
// cap.
const recentTalk = `SELECT m.id, m.seq, m.author_id FROM messages m
	WHERE m.channel_id = ?1 AND m.is_archived = 0 AND m.seq > ?3 AND m.author_id <> ?2 AND m.kind <> 'event'
	ORDER BY m.seq DESC LIMIT ?4`

// forParty keeps, in mentions mode (?5 = 1), the rows addressed to the
// party; wakes keeps the rows fewer than ?6 hops into their chain.
const (
	forParty = `(?5 = 0 OR EXISTS (SELECT 1 FROM mentions mn WHERE mn.message_id = r.id AND mn.party_id = ?2))`
	wakes    = `NOT EXISTS (SELECT 1 FROM chains k WHERE k.message_id = r.id AND k.hop >= ?6)`
)

// talkPending reads what of a channel's unread talk concerns the party
// at its attention: who may wake it (NewestTalk, Wakers), what is
// addressed to it (ForYou, and in mentions mode the Newest it quotes), and
// the newest post that no longer wakes anyone (Halted).
func (t *tx) talkPending(c channel, partyID, cursor int64, cp *ChannelPending, n int) error {
	mentions := 0
	if cp.Attention == AttentionMentions {
		mentions = 1
	}
	args := []any{c.id, partyID, cursor, UnreadCountCap, mentions, t.att.maxHops()}
	rows, err := t.query(`SELECT a.name, w.seq, coalesce(k.chain, ''), coalesce(k.hop, 0) FROM (
			SELECT r.author_id, max(r.seq) AS seq FROM (`+recentTalk+`) AS r
			WHERE `+forParty+` AND `+wakes+` GROUP BY r.author_id) AS w
		JOIN parties a ON a.id = w.author_id
		JOIN messages m ON m.channel_id = ?1 AND m.seq = w.seq
		LEFT JOIN chains k ON k.message_id = m.id
		ORDER BY w.seq`, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var w Waker
		if err := rows.Scan(&w.From, &w.Seq, &w.Chain, &w.Hop); err != nil {
			rows.Close()
			return err
		}
		cp.Wakers = append(cp.Wakers, w)
		cp.NewestTalk = max(cp.NewestTalk, w.Seq)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var halted Waker
	err = t.row(`SELECT r.seq, a.name, k.chain, k.hop FROM (`+recentTalk+`) AS r
		JOIN chains k ON k.message_id = r.id AND k.hop >= ?6 JOIN parties a ON a.id = r.author_id
		WHERE `+forParty+` ORDER BY r.seq DESC LIMIT 1`, args...).Scan(&halted.Seq, &halted.From, &halted.Chain, &halted.Hop)
	switch {
	case err == nil:
		cp.Halted = &halted
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if mentions == 0 {
		return t.newestUnread(c, partyID, cursor, cp, n)
	}
	if err := t.row(`SELECT count(*) FROM (`+recentTalk+`) AS r WHERE `+forParty, args[:5]...).Scan(&cp.ForYou); err != nil {
		return err
	}
	if cp.ForYou == 0 || n <= 0 {
		return nil
	}
	list, err := t.loadMessages(`WHERE m.id IN (SELECT r.id FROM (SELECT m2.id FROM messages m2
			WHERE m2.channel_id = ? AND m2.is_archived = 0 AND m2.seq > ? AND m2.author_id <> ? AND m2.kind <> 'event'
			ORDER BY m2.seq DESC LIMIT ?) AS r
		WHERE EXISTS (SELECT 1 FROM mentions mn WHERE mn.message_id = r.id AND mn.party_id = ?))
		ORDER BY m.seq DESC LIMIT ?`, c.id, cursor, partyID, UnreadCountCap, partyID, n)
	if err != nil {
		return err
	}
	reverse(list)
	cp.Newest = list
	return nil
}

// newestUnread loads the newest n unread rows, oldest first.
func (t *tx) newestUnread(c channel, partyID, cursor int64, cp *ChannelPending, n int) error {
	if n <= 0 {
		return nil
	}
	list, err := t.loadMessages(`WHERE m.channel_id = ? AND m.is_archived = 0 AND m.seq > ? AND m.author_id <> ?
		ORDER BY m.seq DESC LIMIT ?`, c.id, cursor, partyID, n)
	if err != nil {
		return err
	}
	reverse(list)
	cp.Newest = list
	return nil
}
