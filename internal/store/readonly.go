package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// ReadOnly is a handle that can only read: the hook's, the page's, log's
// and search's. It never moves a cursor, never acks, never sweeps, never
// creates a party; on SQLite it changes no byte of the database or its
// -wal (sqlite.Reader).
type ReadOnly struct {
	eng engine.Engine
	att attention
}

// Path names the store: the database file, or a team store's URL without
// its password.
func (r *ReadOnly) Path() string { return r.eng.Where() }

// Close releases the handle.
func (r *ReadOnly) Close() error { return r.eng.Close() }

// view runs fn in a read-only transaction.
func (r *ReadOnly) view(ctx context.Context, fn func(*tx) error) error {
	_, err := r.eng.Run(ctx, engine.Read, func(et engine.Tx) (*Change, error) {
		return nil, fn(&tx{et: et, ctx: ctx, now: Now(), att: r.att})
	})
	return wrap(r.eng, err)
}

// read is view: a ReadOnly handle has no other way to read.
func (r *ReadOnly) read(ctx context.Context, fn func(*tx) error) error { return r.view(ctx, fn) }

// CommitMark names the store's last commit (see the function of that
// name) for a database file; a team store announces each commit once, so
// there ok is false: every announcement is a change.
func (r *ReadOnly) CommitMark() (mark string, ok bool) {
	if m, can := r.eng.(interface{ CommitMark() (string, bool) }); can {
		return m.CommitMark()
	}
	return "", false
}

// PartyState names the state of what the party id sees on a team store;
// ok is false on a database file, for a party not made yet, or when the
// store cannot be asked.
func (r *ReadOnly) PartyState(id Identity) (state string, ok bool) {
	ps, can := r.eng.(engine.PartyStates)
	if !can {
		return "", false
	}
	state, _, ok = ps.PartyState(context.Background(), id.who())
	return state, ok
}

// longView is view as a long read of party (engine.Turns): a team store
// bounds the share of its connections such reads hold.
func (r *ReadOnly) longView(ctx context.Context, party string, fn func(*tx) error) error {
	ctx, done, err := longRead(ctx, r.eng, party)
	if err != nil {
		return err
	}
	defer done()
	return r.view(ctx, fn)
}

// UnreadCountCap is where the read-only handle stops counting a channel's
// unread messages: an exact count walks every unread row, and "over 1000"
// says enough while keeping the hook's cost flat however much is unread.
const UnreadCountCap = 1000

// Pending is what waits on a party, as the hook reports it: per-channel
// unread counts with the newest few unread messages, and the inbox's items.
type Pending struct {
	Party         string
	Workspace     string
	Channels      []ChannelPending
	WaitingOnMe   []WaitingOnMe
	WaitingOnPeer []WaitingOnPeer
	// UnreadByPeers are the party's recent messages a seated peer has not
	// read yet, as chat_inbox lists them.
	UnreadByPeers []Receipt
	// Claims are the live claims the party sees, ClaimNews those that
	// ended and concern it (claims.go).
	Claims    []Claim    `json:",omitempty"`
	ClaimNews []ClaimEnd `json:",omitempty"`
}

// Unread sums the channels' unread counts; over says a channel had more
// than UnreadCountCap.
func (p Pending) Unread() (n int, over bool) {
	for _, c := range p.Channels {
		n += c.Unread
		over = over || c.Over
	}
	return n, over
}

// ChannelPending is one of the party's channels.
type ChannelPending struct {
	Channel string
	Parties []string
	// Unread counts the live rows after the party's cursor that a peer
	// wrote, up to UnreadCountCap; Over says there are more than that.
	Unread int
	Over   bool
	// NewestTalk is the seq of the newest unread say, ask or reply from a
	// peer that may wake the party (Wakers); 0 when nothing unread may:
	// only events (acks, archives, joins), in mentions mode nothing
	// addressed to the party, or only posts of a chain that went
	// attention.max_hops agent-only hops.
	NewestTalk int64
	// Attention is the party's attention here: "all", or "mentions",
	// where Newest holds only what is addressed to it, ForYou counts it,
	// and the rest is one count line that never wakes.
	Attention string
	ForYou    int
	// Cursor is the party's read position in the channel.
	Cursor int64
	// Wakers are, per peer, its newest unread talk that may wake the
	// party, oldest first; Halted is the newest unread talk that may not
	// because of its chain (nil: none). Both stop at the newest
	// UnreadCountCap unread rows.
	Wakers []Waker `json:",omitempty"`
	Halted *Waker  `json:",omitempty"`
	// Newest are the newest few unread messages, oldest first.
	Newest []Message
	// ReadByAll is the seq up to which every other seated party has read
	// the channel (the slowest one's cursor): the party's messages up to
	// it are read by all. 0 when nobody else sits there.
	ReadByAll int64
}

// Pending reports what waits on the party rooted at workspace, fetching at
// most newest unread messages per channel. Its cost follows the number of
// channels and live items, not the number of unread messages. An unknown
// root gives ErrUnknownParty.
func (r *ReadOnly) Pending(ctx context.Context, workspace string, newest int) (Pending, error) {
	return r.PendingFor(ctx, Identity{Workspace: workspace}, newest)
}

// PendingFor is Pending for any caller: a team party is found by name.
func (r *ReadOnly) PendingFor(ctx context.Context, id Identity, newest int) (Pending, error) {
	var out Pending
	err := r.view(ctx, func(t *tx) error {
		p, err := t.existingParty(id)
		if err != nil {
			return err
		}
		out, err = t.pending(p, id, newest)
		return err
	})
	return out, err
}

func (t *tx) pending(p party, id Identity, newest int) (Pending, error) {
	out := Pending{Party: p.name, Workspace: id.Workspace, Channels: []ChannelPending{},
		WaitingOnMe: []WaitingOnMe{}, WaitingOnPeer: []WaitingOnPeer{}, UnreadByPeers: []Receipt{}}
	seats, err := t.seats(p.id)
	if err != nil {
		return out, err
	}
	for _, c := range seats {
		cp, err := t.channelPending(c, p.id, newest)
		if err != nil {
			return out, err
		}
		out.Channels = append(out.Channels, cp)
	}
	if err := t.inboxItems(p, &out.WaitingOnMe, &out.WaitingOnPeer); err != nil {
		return out, err
	}
	if out.UnreadByPeers, err = t.unreadByPeers(p, false); err != nil {
		return out, err
	}
	if err := t.pendingClaims(p, id.Team, &out); err != nil {
		return out, err
	}
	return out, t.attendReceipts(p, &out)
}

// Seen is what a party can see, read at one moment: what waits on it,
// and the newest message it can read (its own included). A hub names a
// party's state by it, so that the name moves at a change that concerns
// the party and at no other.
type Seen struct {
	Pending Pending
	Newest  int64
}

// SeenBy reads what the party id can see, with at most newest unread
// messages per channel. An unknown party gives ErrUnknownParty.
func (r *ReadOnly) SeenBy(ctx context.Context, id Identity, newest int) (Seen, error) {
	var out Seen
	err := r.view(ctx, func(t *tx) error {
		p, err := t.existingParty(id)
		if err != nil {
			return err
		}
		if out.Pending, err = t.pending(p, id, newest); err != nil {
			return err
		}
		out.Newest, err = t.newestReadable(p)
		return err
	})
	return out, err
}

// channelPending counts a channel's unread rows (up to the cap) and loads
// the newest n; every query walks the channel's index from one end.
func (t *tx) channelPending(c channel, partyID int64, n int) (ChannelPending, error) {
	cp := ChannelPending{Channel: c.name, Parties: []string{}, Newest: []Message{}}
	seats, err := t.seatCursors(c.id)
	if err != nil {
		return cp, err
	}
	cp.ReadByAll = -1
	for _, s := range seats {
		cp.Parties = append(cp.Parties, s.name)
		if s.id != partyID && (cp.ReadByAll < 0 || s.cursor < cp.ReadByAll) {
			cp.ReadByAll = s.cursor
		}
	}
	cp.ReadByAll = max(cp.ReadByAll, 0)
	cursor, err := t.cursor(c.id, partyID)
	if err != nil {
		return cp, err
	}
	cp.Cursor = cursor
	att, err := t.attentionIn(c, partyID, len(seats))
	if err != nil {
		return cp, err
	}
	cp.Attention = att.Attention
	if err := t.row(`SELECT count(*) FROM (SELECT 1 FROM messages
		WHERE channel_id = ?1 AND is_archived = 0 AND seq > ?3 AND author_id <> ?2 LIMIT ?4) AS unread`,
		c.id, partyID, cursor, UnreadCountCap+1).Scan(&cp.Unread); err != nil {
		return cp, err
	}
	if cp.Unread > UnreadCountCap {
		cp.Unread, cp.Over = UnreadCountCap, true
	}
	if cp.Unread == 0 {
		return cp, nil
	}
	return cp, t.talkPending(c, partyID, cursor, &cp, n)
}

// Version reads the database's schema version.
func (r *ReadOnly) Version(ctx context.Context) (int, error) {
	v, err := r.eng.Version(ctx)
	return v, wrap(r.eng, err)
}

// NameFor is the name a root has on the chat or, when known is false, the
// name its first call would give it (see DB.NameFor).
func (r *ReadOnly) NameFor(ctx context.Context, id Identity) (name string, known bool, err error) {
	err = r.view(ctx, func(t *tx) error {
		p, err := t.existingParty(id)
		if errors.Is(err, ErrUnknownParty) {
			name, err = t.freeName(id.Name)
			return err
		}
		name, known = p.name, err == nil
		return err
	})
	return name, known, err
}

// existingParty finds the caller's party without creating it.
func (t *tx) existingParty(id Identity) (party, error) {
	if err := id.check(); err != nil {
		return party{}, err
	}
	p := party{}
	key, by := id.Workspace, "workspace_path"
	if id.Team {
		key, by = id.Name, "name"
	}
	err := t.row(`SELECT id, name, last_seen FROM parties WHERE `+by+` = ?`, key).Scan(&p.id, &p.name, &p.lastSeen)
	if errors.Is(err, sql.ErrNoRows) {
		return p, ErrUnknownParty
	}
	return p, err
}
