package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"maps"
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

// wakerWindow is how many of a channel's newest unread posts from peers
// decide, in all mode, who may wake the party: a sender whose newest post
// lies further back was there at earlier looks already.
const wakerWindow = 50

// The unread posts from peers that concern a party, newest first: ?1
// channel, ?2 party, ?3 its cursor, ?4 how many at most; ?5, for
// mentionedTalk, the id of the message at the cursor.
const (
	// recentTalk is the newest of them (all mode).
	recentTalk = `SELECT r.seq, a.name, coalesce(k.chain, ''), coalesce(k.hop, 0) FROM (
			SELECT m.id, m.seq, m.author_id FROM messages m
			WHERE m.channel_id = ?1 AND m.is_archived = 0 AND m.seq > ?3 AND m.author_id <> ?2 AND m.kind <> 'event'
			ORDER BY m.seq DESC LIMIT ?4) AS r
		JOIN parties a ON a.id = r.author_id LEFT JOIN chains k ON k.message_id = r.id
		ORDER BY r.seq DESC`
	// mentionedTalk is those addressed to the party (mentions mode).
	mentionedTalk = `SELECT m.seq, a.name, coalesce(k.chain, ''), coalesce(k.hop, 0)
		FROM mentions mn JOIN messages m ON m.id = mn.message_id
		JOIN parties a ON a.id = m.author_id LEFT JOIN chains k ON k.message_id = m.id
		WHERE mn.party_id = ?2 AND mn.message_id > ?5 AND m.channel_id = ?1 AND m.seq > ?3 AND m.is_archived = 0 AND m.author_id <> ?2
		ORDER BY mn.message_id DESC LIMIT ?4`
)

// talkPending reads what of a channel's unread talk concerns the party
// at its attention: who may wake it (NewestTalk, Wakers), what is
// addressed to it (ForYou, and in mentions mode the Newest it quotes), and
// the newest post that wakes no one for its chain (Halted). Its reads are
// bounded whatever the history: the newest wakerWindow unread posts in all
// mode, the party's mentions since its cursor in mentions mode.
func (t *tx) talkPending(c channel, partyID, cursor int64, cp *ChannelPending, n int) error {
	if cp.Attention != AttentionMentions {
		if err := t.talkRows(cp, recentTalk, c.id, partyID, cursor, wakerWindow); err != nil {
			return err
		}
		return t.newestUnread(c, partyID, cursor, cp, n)
	}
	// The party's mentions are a range of (party_id, message_id) from the
	// message at its cursor on.
	var from int64
	if err := t.row(`SELECT coalesce((SELECT id FROM messages WHERE channel_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1), 0)`, c.id, cursor).Scan(&from); err != nil {
		return err
	}
	seqs, err := t.talkRowsSeqs(cp, mentionedTalk, c.id, partyID, cursor, UnreadCountCap, from)
	if err != nil {
		return err
	}
	cp.ForYou = len(seqs)
	if len(seqs) == 0 || n <= 0 {
		return nil
	}
	list, _ := json.Marshal(seqs[:min(n, len(seqs))])
	newest, err := t.loadMessages(`WHERE m.channel_id = ? AND m.seq IN (SELECT value FROM json_each(?)) ORDER BY m.seq`, c.id, string(list))
	cp.Newest = newest
	return err
}

// talkRows reads unread posts from peers, newest first, as seq, author,
// chain and hop: per author the newest that may wake the party is a
// Waker, and the newest that may not, for its chain, is Halted.
func (t *tx) talkRows(cp *ChannelPending, query string, args ...any) error {
	_, err := t.talkRowsSeqs(cp, query, args...)
	return err
}

// talkRowsSeqs is talkRows that also returns the seqs it read.
func (t *tx) talkRowsSeqs(cp *ChannelPending, query string, args ...any) ([]int64, error) {
	rows, err := t.query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var seqs []int64
	seen := map[string]bool{}
	maxHops := t.att.maxHops()
	for rows.Next() {
		var w Waker
		if err := rows.Scan(&w.Seq, &w.From, &w.Chain, &w.Hop); err != nil {
			return nil, err
		}
		seqs = append(seqs, w.Seq)
		switch {
		case w.Hop >= maxHops:
			if cp.Halted == nil {
				h := w
				cp.Halted = &h
			}
		case !seen[w.From]:
			seen[w.From] = true
			cp.Wakers = append(cp.Wakers, w)
			cp.NewestTalk = max(cp.NewestTalk, w.Seq)
		}
	}
	slices.SortFunc(cp.Wakers, func(a, b Waker) int { return cmp.Compare(a.Seq, b.Seq) })
	return seqs, rows.Err()
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

// attendReceipts keeps, of the receipts in a channel where the party's
// attention is mentions, those of its messages addressed to someone, and
// of them only what the parties addressed did: in a channel of many, who
// of everyone has read a status line is noise, while whether the party
// it was for has read it is news.
func (t *tx) attendReceipts(p party, out *Pending) error {
	mentions := map[string]bool{}
	for _, c := range out.Channels {
		mentions[c.Channel] = c.Attention == AttentionMentions
	}
	to := map[string]map[int64][]string{}
	kept := out.UnreadByPeers[:0]
	for _, u := range out.UnreadByPeers {
		if !mentions[u.Channel] {
			kept = append(kept, u)
			continue
		}
		if _, ok := to[u.Channel]; !ok {
			var err error
			if to[u.Channel], err = t.addressedIn(u.Channel, p.id); err != nil {
				return err
			}
		}
		names := to[u.Channel][u.Seq]
		if len(names) == 0 {
			continue
		}
		u.To = names
		u.ReadBy = slices.DeleteFunc(u.ReadBy, func(n string) bool { return !slices.Contains(names, n) })
		u.UnreadBy = slices.DeleteFunc(u.UnreadBy, func(n string) bool { return !slices.Contains(names, n) })
		maps.DeleteFunc(u.ReadAt, func(n, _ string) bool { return !slices.Contains(names, n) })
		maps.DeleteFunc(u.ToldAt, func(n string, _ Told) bool { return !slices.Contains(names, n) })
		kept = append(kept, u)
	}
	out.UnreadByPeers = kept
	return nil
}

// addressedIn maps the party's recent messages in channel (the newest
// ReceiptRows rows) to the parties they name.
func (t *tx) addressedIn(name string, partyID int64) (map[int64][]string, error) {
	c, err := t.lookupChannel(name)
	if err != nil {
		return nil, err
	}
	rows, err := t.query(`SELECT m.seq, p.name FROM messages m
		JOIN mentions mn ON mn.message_id = m.id JOIN parties p ON p.id = mn.party_id
		WHERE m.channel_id = ?1 AND m.author_id = ?2 AND mn.via <> 'thread'
		  AND m.seq > (SELECT coalesce(max(seq), 0) FROM messages WHERE channel_id = ?1) - ?3`, c.id, partyID, ReceiptRows)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64][]string{}
	for rows.Next() {
		var seq int64
		var who string
		if err := rows.Scan(&seq, &who); err != nil {
			return nil, err
		}
		out[seq] = append(out[seq], who)
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out, rows.Err()
}
