package store

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Read receipts come from the cursors alone: a party seated in a channel
// has read a row once its cursor there reaches the row's seq. Cursors move
// only forward, so a row once read stays read, and a Python party's reads
// count like ours. Events have none: nobody wrote them as a message.
//
// When a party read a row is the time its cursor moved to or past the
// row's seq: each move is a row of reads (schema version 8, written by
// advanceCursor). A cursor the Python edition, or a version before 8,
// moved has none: its rows are read, at a time not known, and carry no
// read_at.

// How recent a message must be for chat_inbox's unread_by_peers (and the
// hook's summary) to list it: written within ReceiptWindow, and among the
// newest ReceiptRows rows of its channel. The window lets a peer that
// has long gone drop out of the list instead of filling it forever; the
// rows bound what a call reads, however busy the day was.
const (
	ReceiptWindow = 24 * time.Hour
	ReceiptRows   = 50
)

// Receipt is one of the caller's recent messages with who has read it and
// who has not, since the message's time.
type Receipt struct {
	Channel string `json:"channel"`
	Seq     int64  `json:"seq"`
	Kind    string `json:"kind"`
	// Item is an ask's slug.
	Item     string   `json:"item,omitempty"`
	Since    string   `json:"since"`
	ReadBy   []string `json:"read_by"`
	UnreadBy []string `json:"unread_by"`
	// ToldAt says which peers our hook or wake told of the message, when
	// and by which event (told.go).
	ToldAt map[string]Told `json:"told_at,omitempty"`
	// ReadAt says when the peers of ReadBy read it, where that is known.
	ReadAt map[string]string `json:"read_at,omitempty"`
	// To are the parties the message is addressed to, in the hook's
	// view of a channel where the party's attention is mentions
	// (attendReceipts); left out elsewhere.
	To []string `json:"to,omitempty"`
}

// seatCursor is a party seated in a channel and how far it has read there.
type seatCursor struct {
	id     int64
	name   string
	cursor int64
}

// seatCursors lists a channel's seated parties with their cursors, by
// name, in one query.
func (t *tx) seatCursors(channelID int64) ([]seatCursor, error) {
	rows, err := t.query(`SELECT p.id, p.name, coalesce(cu.last_seq, 0)
		FROM channel_parties cp JOIN parties p ON p.id = cp.party_id
		LEFT JOIN cursors cu ON cu.channel_id = cp.channel_id AND cu.party_id = cp.party_id
		WHERE cp.channel_id = ? AND cp.left_at IS NULL`, channelID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []seatCursor
	for rows.Next() {
		var s seatCursor
		if err := rows.Scan(&s.id, &s.name, &s.cursor); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	// By name in Go: the engines' collations may order names differently.
	slices.SortFunc(out, func(a, b seatCursor) int { return strings.Compare(a.name, b.name) })
	return out, rows.Err()
}

// withReceipts sets read_by and unread_by on the messages of list (one
// channel's) that want picks, from the seats' cursors.
func withReceipts(list []Message, seats []seatCursor, want func(Message) bool) {
	for i := range list {
		m := &list[i]
		if m.Kind == "event" || !want(*m) {
			continue
		}
		m.ReadBy, m.UnreadBy = []string{}, []string{}
		for _, s := range seats {
			switch {
			case s.name == m.From:
			case s.cursor >= m.Seq:
				m.ReadBy = append(m.ReadBy, s.name)
			default:
				m.UnreadBy = append(m.UnreadBy, s.name)
			}
		}
	}
}

// ownReceipts gives the messages author wrote in list (one channel's)
// their receipts: one query for the whole answer, none when it holds no
// message of theirs.
func (t *tx) ownReceipts(channelID int64, author string, list []Message) error {
	mine := func(m Message) bool { return m.From == author }
	if !slices.ContainsFunc(list, func(m Message) bool { return m.Kind != "event" && mine(m) }) {
		return nil
	}
	seats, err := t.seatCursors(channelID)
	if err != nil {
		return err
	}
	withReceipts(list, seats, mine)
	return t.withDelivery(channelID, list)
}

// receipts gives every message of list (one channel's) its receipts, as
// the person sees them: who has read it of the parties seated there but
// its author.
func (t *tx) receipts(channelID int64, list []Message) error {
	if len(list) == 0 {
		return nil
	}
	seats, err := t.seatCursors(channelID)
	if err != nil {
		return err
	}
	withReceipts(list, seats, func(Message) bool { return true })
	return t.withDelivery(channelID, list)
}

// withDelivery gives the messages of list (one channel's) that carry
// receipts who was told of them (told_to) and when their readers read
// them (read_at).
func (t *tx) withDelivery(channelID int64, list []Message) error {
	if err := t.withTold(list); err != nil {
		return err
	}
	var lo, hi int64
	for _, m := range list {
		if len(m.ReadBy) > 0 {
			lo, hi = minSeq(lo, m.Seq), max(hi, m.Seq)
		}
	}
	if hi == 0 {
		return nil
	}
	moves, err := t.readMoves(channelID, lo, hi)
	if err != nil {
		return err
	}
	for i := range list {
		list[i].ReadAt = moves.times(list[i].ReadBy, list[i].Seq)
	}
	return nil
}

func minSeq(lo, seq int64) int64 {
	if lo == 0 || seq < lo {
		return seq
	}
	return lo
}

// readMove is a move of a party's cursor: it read up to upto at at.
type readMove struct {
	upto int64
	at   string
}

// moves are a channel's cursor moves, per party name, in order of seq.
type moves map[string][]readMove

// at is when party read the row seq: the time of its first move that
// reached it; "" when no move says.
func (ms moves) at(party string, seq int64) string {
	list := ms[party]
	i, _ := slices.BinarySearchFunc(list, seq, func(m readMove, seq int64) int { return cmp.Compare(m.upto, seq) })
	if i == len(list) {
		return ""
	}
	return list[i].at
}

// times are the read times of the row seq by readers, nil when none is
// known.
func (ms moves) times(readers []string, seq int64) map[string]string {
	var out map[string]string
	for _, name := range readers {
		if at := ms.at(name, seq); at != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = at
		}
	}
	return out
}

// readMoves reads the cursor moves of a channel's seated parties that say
// when its rows lo to hi were read: per party those from lo up to its
// first at or past hi — a range of the key per party, whatever the
// channel's history.
func (t *tx) readMoves(channelID, lo, hi int64) (moves, error) {
	rows, err := t.query(`SELECT p.name, r.upto_seq, r.read_at
		FROM channel_parties cp JOIN parties p ON p.id = cp.party_id
		JOIN reads r ON r.channel_id = cp.channel_id AND r.party_id = cp.party_id
		WHERE cp.channel_id = ?1 AND cp.left_at IS NULL AND r.upto_seq >= ?2
		  AND r.upto_seq <= coalesce((SELECT min(f.upto_seq) FROM reads f
		      WHERE f.channel_id = cp.channel_id AND f.party_id = cp.party_id AND f.upto_seq >= ?3), ?3)`, channelID, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := moves{}
	for rows.Next() {
		var name string
		var m readMove
		if err := rows.Scan(&name, &m.upto, &m.at); err != nil {
			return nil, err
		}
		out[name] = append(out[name], m)
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b readMove) int { return cmp.Compare(a.upto, b.upto) })
	}
	return out, rows.Err()
}

// unreadByPeers lists p's recent live messages (ReceiptWindow,
// ReceiptRows) that a party seated in the channel has not read, by
// channel and seq, in one query whose cost follows the channels p sits
// in, not the history: per channel it walks only the rows after both the
// window's start and the slowest seated peer's cursor (every peer has
// read what lies before it), so where the peers keep up it reads next to
// nothing. The CROSS JOINs fix SQLite's order of loops — p's seats, each
// channel's rows in that range, then the peers of p's messages among them
// (left free, its planner scans every message for p's); the range has
// both its ends so that PostgreSQL, planning for any values, prices it as
// the few rows it is and walks the index too.
//
// readTimes adds when each reader read (chat_inbox says it; the hook,
// which tells receipts as they change, does not read them).
func (t *tx) unreadByPeers(p party, readTimes bool) ([]Receipt, error) {
	rows, err := t.query(`SELECT m.id, c.id, c.name, m.seq, m.kind, coalesce(m.slug, ''), m.created_at, peer.name, coalesce(cu.last_seq, 0)
		FROM (SELECT cp.channel_id,
		             (SELECT coalesce(max(seq), 0) FROM messages WHERE channel_id = cp.channel_id) AS top,
		             (SELECT min(coalesce(pc.last_seq, 0)) FROM channel_parties ps
		              LEFT JOIN cursors pc ON pc.channel_id = ps.channel_id AND pc.party_id = ps.party_id
		              WHERE ps.channel_id = cp.channel_id AND ps.left_at IS NULL AND ps.party_id <> ?1) AS read_to
		      FROM channel_parties cp WHERE cp.party_id = ?1 AND cp.left_at IS NULL) AS mine
		CROSS JOIN messages m
		CROSS JOIN channel_parties seat
		JOIN channels c ON c.id = mine.channel_id
		JOIN parties peer ON peer.id = seat.party_id
		LEFT JOIN cursors cu ON cu.channel_id = seat.channel_id AND cu.party_id = seat.party_id
		WHERE m.channel_id = mine.channel_id AND m.seq > max(mine.top - ?2, mine.read_to) AND m.seq <= mine.top
		  AND m.author_id = ?1 AND m.is_archived = 0 AND m.kind <> 'event'
		  AND seat.channel_id = mine.channel_id AND seat.left_at IS NULL AND seat.party_id <> ?1`, p.id, ReceiptRows)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	recent := recentSince(t.now)
	type message struct {
		channel string
		seq     int64
	}
	byMessage := map[message]*Receipt{}
	var list []*Receipt
	ids := map[message]int64{}
	channels := map[string]int64{}
	for rows.Next() {
		var u Receipt
		var id, channelID int64
		var peer string
		var cursor int64
		if err := rows.Scan(&id, &channelID, &u.Channel, &u.Seq, &u.Kind, &u.Item, &u.Since, &peer, &cursor); err != nil {
			return nil, err
		}
		channels[u.Channel] = channelID
		if !recent(u.Since) {
			continue
		}
		key := message{u.Channel, u.Seq}
		e, ok := byMessage[key]
		if !ok {
			u.ReadBy, u.UnreadBy = []string{}, []string{}
			e = &u
			byMessage[key] = e
			ids[key] = id
			list = append(list, e)
		}
		if cursor >= e.Seq {
			e.ReadBy = append(e.ReadBy, peer)
		} else {
			e.UnreadBy = append(e.UnreadBy, peer)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := []Receipt{}
	var unread []int64
	for _, e := range list {
		if len(e.UnreadBy) == 0 {
			continue // read by all (the range starts at the slowest cursor, so none is)
		}
		slices.Sort(e.ReadBy)
		slices.Sort(e.UnreadBy)
		out = append(out, *e)
		unread = append(unread, ids[message{e.Channel, e.Seq}])
	}
	told, err := t.toldOf(unread)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].ToldAt = told[ids[message{out[i].Channel, out[i].Seq}]]
	}
	if readTimes {
		if err := t.receiptReadTimes(out, channels); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b Receipt) int {
		return cmp.Or(strings.Compare(a.Channel, b.Channel), cmp.Compare(a.Seq, b.Seq))
	})
	return out, nil
}

// recentSince tells whether a stored time lies within ReceiptWindow of
// now. Times are compared in Go, not in SQL: they are text, which the
// engines may collate differently. A time that cannot be read is old.
func recentSince(now string) func(at string) bool {
	from, err := time.Parse(time.RFC3339Nano, now)
	if err != nil {
		from = time.Now()
	}
	from = from.Add(-ReceiptWindow)
	return func(at string) bool {
		t, err := time.Parse(time.RFC3339Nano, at)
		return err == nil && !t.Before(from)
	}
}

// receiptReadTimes gives the receipts of list when their readers read
// them, a query per channel that has a receipt read by someone.
func (t *tx) receiptReadTimes(list []Receipt, channels map[string]int64) error {
	type span struct{ lo, hi int64 }
	spans := map[string]span{}
	for _, u := range list {
		if len(u.ReadBy) > 0 {
			sp := spans[u.Channel]
			spans[u.Channel] = span{minSeq(sp.lo, u.Seq), max(sp.hi, u.Seq)}
		}
	}
	for name, sp := range spans {
		ms, err := t.readMoves(channels[name], sp.lo, sp.hi)
		if err != nil {
			return err
		}
		for i := range list {
			if list[i].Channel == name {
				list[i].ReadAt = ms.times(list[i].ReadBy, list[i].Seq)
			}
		}
	}
	return nil
}
