package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// The person's view of the chat (mcpp-chat log, search and ui): every
// channel, every party, read through the read-only handle. It never moves
// a cursor, never sweeps, never creates a party, and writes nothing.

// ChannelView is a channel as the person sees it.
type ChannelView struct {
	Name      string `json:"channel"`
	About     string `json:"about,omitempty"`
	CreatedAt string `json:"created_at"`
	Closed    bool   `json:"closed"`
	// Newest is the seq of the channel's newest row, live or archived.
	Newest    int64 `json:"newest"`
	LiveItems int   `json:"live_items"`
	// Seats are the parties seated there, by name, each with its unread count.
	Seats []Seat `json:"seats"`
	id    int64
}

// Seat is a party seated in a channel and how much it has not read there.
type Seat struct {
	Party string `json:"party"`
	// Unread counts the live rows after its cursor that others wrote, up
	// to UnreadCountCap; Over says there are more.
	Unread int  `json:"unread"`
	Over   bool `json:"over,omitempty"`
}

// Channels lists every channel by name, with its seats and their unread counts.
func (r *ReadOnly) Channels(ctx context.Context) ([]ChannelView, error) {
	var out []ChannelView
	err := r.view(ctx, func(t *tx) error {
		var err error
		out, err = t.channelViews(0)
		return err
	})
	return out, err
}

// channelViews reports every channel, or only channel only when it is not 0.
func (t *tx) channelViews(only int64) ([]ChannelView, error) {
	rows, err := t.query(`SELECT c.id, c.name, coalesce(c.about, ''), c.created_at, c.is_closed,
			coalesce((SELECT max(seq) FROM messages m WHERE m.channel_id = c.id), 0),
			(SELECT count(*) FROM messages m WHERE m.channel_id = c.id AND m.kind = 'ask' AND m.is_archived = 0)
		FROM channels c WHERE ?1 = 0 OR c.id = ?1 ORDER BY c.name`, only)
	if err != nil {
		return nil, err
	}
	out := []ChannelView{}
	for rows.Next() {
		var c ChannelView
		if err := rows.Scan(&c.id, &c.Name, &c.About, &c.CreatedAt, &c.Closed, &c.Newest, &c.LiveItems); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Seats, err = t.seatViews(out[i].id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// seatViews lists a channel's seated parties with their unread counts,
// each count capped like the hook's so that a party that never reads a
// long channel costs no more than one that does.
func (t *tx) seatViews(channelID int64) ([]Seat, error) {
	rows, err := t.query(`SELECT p.id, p.name, coalesce((SELECT last_seq FROM cursors WHERE channel_id = ?1 AND party_id = p.id), 0)
		FROM channel_parties cp JOIN parties p ON p.id = cp.party_id
		WHERE cp.channel_id = ?1 AND cp.left_at IS NULL ORDER BY p.name`, channelID)
	if err != nil {
		return nil, err
	}
	type seat struct {
		id, cursor int64
		name       string
	}
	var seats []seat
	for rows.Next() {
		var s seat
		if err := rows.Scan(&s.id, &s.name, &s.cursor); err != nil {
			rows.Close()
			return nil, err
		}
		seats = append(seats, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := []Seat{}
	for _, s := range seats {
		v := Seat{Party: s.name}
		if err := t.row(`SELECT count(*) FROM (SELECT 1 FROM messages
			WHERE channel_id = ?1 AND is_archived = 0 AND seq > ?3 AND author_id <> ?2 LIMIT ?4) AS unread`,
			channelID, s.id, s.cursor, UnreadCountCap+1).Scan(&v.Unread); err != nil {
			return nil, err
		}
		if v.Unread > UnreadCountCap {
			v.Unread, v.Over = UnreadCountCap, true
		}
		out = append(out, v)
	}
	return out, nil
}

// Parties lists every party by name with its folder, about and last
// activity (its presence).
func (r *ReadOnly) Parties(ctx context.Context) ([]PartyInfo, error) {
	var out []PartyInfo
	err := r.view(ctx, func(t *tx) error {
		var err error
		out, err = t.knownParties(false)
		return err
	})
	return out, err
}

// ConversationArgs picks the part of a channel to show.
type ConversationArgs struct {
	Channel string
	// Since shows only rows after this seq; Before (when not 0) only rows
	// before it.
	Since, Before int64
	// Archived shows the archived threads instead of the live rows.
	Archived bool
	// Newest, when not 0, keeps only the newest this many rows of the range.
	Newest int
}

// Conversation is a channel and a run of its rows, in seq order, each
// message with its read receipts (read_by, unread_by).
type Conversation struct {
	Channel  ChannelView `json:"channel"`
	Messages []Message   `json:"messages"`
	// Earlier counts the rows of the range before the first one shown
	// (Newest cut them).
	Earlier int `json:"earlier"`
}

// Conversation reads a channel's rows as the person sees them.
func (r *ReadOnly) Conversation(ctx context.Context, a ConversationArgs) (Conversation, error) {
	var out Conversation
	err := r.longView(ctx, "", func(t *tx) error {
		c, err := t.viewedChannel(a.Channel)
		if err != nil {
			return err
		}
		views, err := t.channelViews(c.id)
		if err != nil || len(views) != 1 {
			return errors.Join(err, errors.New("the channel vanished inside its own read"))
		}
		out.Channel = views[0]
		before := a.Before
		if before <= 0 {
			before = 1 << 62
		}
		limit := a.Newest
		if limit <= 0 {
			limit = 1 << 62 // no limit (PostgreSQL refuses SQLite's -1)
		}
		// The newest rows of the range, walked from the top of the
		// channel's index, then put back in order.
		out.Messages, err = t.loadMessages(`WHERE m.channel_id = ? AND m.is_archived = ? AND m.seq > ? AND m.seq < ? ORDER BY m.seq DESC LIMIT ?`,
			c.id, a.Archived, a.Since, before, limit)
		if err != nil {
			return err
		}
		reverse(out.Messages)
		if err := t.receipts(c.id, out.Messages); err != nil {
			return err
		}
		if a.Newest > 0 && len(out.Messages) == a.Newest {
			return t.row(`SELECT count(*) FROM messages WHERE channel_id = ? AND is_archived = ? AND seq > ? AND seq < ?`,
				c.id, a.Archived, a.Since, out.Messages[0].Seq).Scan(&out.Earlier)
		}
		return nil
	})
	return out, err
}

func reverse[T any](list []T) {
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
}

// viewedChannel finds a channel by name for the person, whose fix is
// another name, not a tool call.
func (t *tx) viewedChannel(raw string) (channel, error) {
	c, err := t.lookupChannel(raw)
	if errors.Is(err, sql.ErrNoRows) {
		names, lerr := t.names(`SELECT name FROM channels ORDER BY name`)
		if lerr != nil {
			return c, lerr
		}
		return c, userErrorf("there is no channel named '%s' — name one of: %s", c.name, quoteList(names))
	}
	return c, err
}

// Owed is what a live item still waits for, and from whom.
type Owed struct {
	// Ack lists the consumers who have not acked an open or acked item.
	Ack []string `json:"ack,omitempty"`
	// Resolve is the raiser, once the item is acked and until it is done.
	Resolve string `json:"resolve,omitempty"`
	// PruneOK lists the consumers who have not given prune-ok on a done item.
	PruneOK []string `json:"prune_ok,omitempty"`
}

// None reports that nothing is owed (no item, or an archived one).
func (o Owed) None() bool { return len(o.Ack) == 0 && o.Resolve == "" && len(o.PruneOK) == 0 }

// Owed says what the item m still waits for (as chat_inbox sorts it);
// nothing for a message that is no item, or an archived item.
func (m Message) Owed() Owed {
	var o Owed
	if m.Kind != "ask" || (m.Archived != nil && *m.Archived) {
		return o
	}
	for _, c := range m.Consumers {
		switch {
		case m.Status == "done" && !c.PruneOK:
			o.PruneOK = append(o.PruneOK, c.Party)
		case m.Status != "done" && !c.Acked:
			o.Ack = append(o.Ack, c.Party)
		}
	}
	if m.Status == "ack" {
		o.Resolve = m.From
	}
	return o
}

// String is the item's state in words: "ack owed by a, b · resolve owed by c".
func (o Owed) String() string {
	var parts []string
	if len(o.Ack) > 0 {
		parts = append(parts, "ack owed by "+quoteList(o.Ack))
	}
	if o.Resolve != "" {
		parts = append(parts, "resolve owed by "+o.Resolve)
	}
	if len(o.PruneOK) > 0 {
		parts = append(parts, "prune-ok owed by "+quoteList(o.PruneOK))
	}
	return strings.Join(parts, " · ")
}
