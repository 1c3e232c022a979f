package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Message is a row as the tools report it. Items (asks) add status,
// archived and consumers; replies add re (the item's slug or #seq).
type Message struct {
	Channel   string     `json:"channel"`
	Seq       int64      `json:"seq"`
	Kind      string     `json:"kind"`
	From      string     `json:"from"`
	Body      string     `json:"body"`
	At        string     `json:"at"`
	Slug      string     `json:"slug,omitempty"`
	Title     string     `json:"title,omitempty"`
	Ref       string     `json:"ref,omitempty"`
	Status    string     `json:"status,omitempty"`
	Archived  *bool      `json:"archived,omitempty"`
	Consumers []Consumer `json:"consumers,omitempty"`
	// Dues and Escalation are an item's due time and what its ladder
	// recorded (due.go); an item without them carries none of their keys.
	Dues
	Escalation []StageNote `json:"escalation,omitempty"`
	Re         string      `json:"re,omitempty"`
	// ReadBy and UnreadBy are the read receipts (receipts.go): the seated
	// parties but the author whose cursor has, or has not, passed the
	// message. Only some answers carry them (chat_read on the caller's
	// own messages, the person's view); nil leaves both keys out.
	ReadBy   []string `json:"read_by,omitzero"`
	UnreadBy []string `json:"unread_by,omitzero"`
	// ToldTo says which parties our hook or wake told of the message,
	// when and by which event (told.go); it rides with the receipts.
	ToldTo map[string]Told `json:"told_to,omitempty"`
	// ReadAt says when the parties of ReadBy read the message, where
	// that is known (receipts.go, read times); it rides with the receipts.
	ReadAt map[string]string `json:"read_at,omitempty"`
	// To are the parties the message is addressed to (mentions.go), by
	// name: those its to named, its @names and an @here's seated parties.
	To []string `json:"to,omitempty"`
	id int64
}

// Consumer is one party an item waits on.
type Consumer struct {
	Party   string `json:"party"`
	Acked   bool   `json:"acked"`
	PruneOK bool   `json:"prune_ok"`
	// AckedAt is when it acked (a key the Python edition does not have).
	AckedAt string `json:"acked_at,omitempty"`
}

const messageColumns = `
	SELECT m.id, c.name, m.seq, m.kind, a.name, m.body, m.created_at,
	       coalesce(m.slug, ''), coalesce(m.title, ''), coalesce(m.ref, ''), m.status, m.is_archived,
	       coalesce(par.kind, ''), coalesce(par.slug, ''), coalesce(par.seq, 0)
	FROM messages m
	JOIN channels c ON c.id = m.channel_id
	JOIN parties a ON a.id = m.author_id
	LEFT JOIN messages par ON par.id = m.parent_id `

// loadMessages runs messageColumns with a WHERE/ORDER/LIMIT tail and loads
// the consumers of every ask in one more query.
func (t *tx) loadMessages(tail string, args ...any) ([]Message, error) {
	rows, err := t.query(messageColumns+tail, args...)
	if err != nil {
		return nil, err
	}
	out := []Message{}
	var asks []int64
	for rows.Next() {
		var m Message
		var status, parKind, parSlug string
		var archived bool
		var parSeq int64
		if err := rows.Scan(&m.id, &m.Channel, &m.Seq, &m.Kind, &m.From, &m.Body, &m.At,
			&m.Slug, &m.Title, &m.Ref, &status, &archived, &parKind, &parSlug, &parSeq); err != nil {
			rows.Close()
			return nil, err
		}
		if m.Kind == "ask" {
			m.Status = status
			m.Archived = &archived
			asks = append(asks, m.id)
		} else {
			m.Re = parentRef(parKind, parSlug, parSeq)
		}
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := t.loadTo(out); err != nil {
		return nil, err
	}
	if len(asks) == 0 {
		return out, nil
	}
	byItem, err := t.consumersOf(asks)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Kind == "ask" {
			out[i].Consumers = byItem[out[i].id]
		}
	}
	return out, t.attachDues(out, asks)
}

// parentRef names a reply's parent: an item by its slug, any other row by #seq;
// "" for a row that is no reply.
func parentRef(parKind, parSlug string, parSeq int64) string {
	switch {
	case parKind == "ask" && parSlug != "":
		return parSlug
	case parKind != "":
		return "#" + strconv.FormatInt(parSeq, 10)
	}
	return ""
}

// consumersOf loads the consumers of many items at once, sorted by name
// (in Go: an ORDER BY here costs a temporary b-tree of every row).
func (t *tx) consumersOf(ids []int64) (map[int64][]Consumer, error) {
	list, _ := json.Marshal(ids)
	rows, err := t.query(`SELECT ic.message_id, p.name, coalesce(ic.acked_at, ''), ic.prune_ok_at IS NOT NULL
		FROM item_consumers ic JOIN parties p ON p.id = ic.party_id
		WHERE ic.message_id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64][]Consumer, len(ids))
	for rows.Next() {
		var id int64
		var c Consumer
		if err := rows.Scan(&id, &c.Party, &c.AckedAt, &c.PruneOK); err != nil {
			return nil, err
		}
		c.Acked = c.AckedAt != ""
		out[id] = append(out[id], c)
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b Consumer) int { return strings.Compare(a.Party, b.Party) })
	}
	return out, rows.Err()
}

// ReadArgs are chat_read's arguments; Since is nil for "from my cursor".
type ReadArgs struct {
	Channel        string
	Limit          int
	Since          *int64
	Peek, Archived bool
	// BodyOffset goes on with the message right after Since, from this
	// character of its body: the rest of a message an earlier answer
	// delivered in part. The read is refused, and moves nothing, unless
	// Since is given and that message is the first row read and longer
	// than BodyOffset — an offset meant for one message never cuts
	// another.
	BodyOffset     int
	DefaultChannel string
	// Fit says how many of the loaded messages the answer carries whole
	// (the tools' answer budget); the cursor moves over those only. It is
	// given the result with every loaded row in Messages, and may run more
	// than once (a view can retry). nil means all of them.
	Fit func(ReadResult) int
}

// ReadResult is chat_read's result.
type ReadResult struct {
	ArchivedByThisRead []string  `json:"archived_by_this_read"`
	Channel            string    `json:"channel"`
	Cursor             int64     `json:"cursor"`
	FromSeq            int64     `json:"from_seq"`
	Messages           []Message `json:"messages"`
	More               int       `json:"more"`
	Parties            []string  `json:"parties"`
}

// Read returns a channel's live (or archived) messages after the cursor
// or since. Unless peek or archived, the cursor moves forward over the
// messages returned — never past one that was not, so never past the
// newest row, and never over unread rows between the cursor and a later
// since.
func (d *DB) Read(ctx context.Context, me Identity, a ReadArgs) (ReadResult, error) {
	out, _, err := readAnswer(ctx, d, readCall{me: me}, func(t *tx, p party, swept []archived) (ReadResult, error) {
		return t.read(p, a, swept)
	})
	return out, err
}

// read is Read inside its transaction, once the sweep has run.
func (t *tx) read(p party, a ReadArgs, swept []archived) (ReadResult, error) {
	c, err := t.seatedChannel(p, a.Channel, a.DefaultChannel)
	if err != nil {
		return ReadResult{}, err
	}
	out := ReadResult{Channel: c.name, ArchivedByThisRead: []string{}}
	for _, s := range swept {
		if s.channelID == c.id {
			out.ArchivedByThisRead = append(out.ArchivedByThisRead, s.slug)
		}
	}
	cursor, err := t.cursor(c.id, p.id)
	if err != nil {
		return out, err
	}
	out.FromSeq = cursor
	if a.Archived {
		out.FromSeq = 0 // archived rows lie behind every cursor
	}
	if a.Since != nil {
		out.FromSeq = *a.Since
	}
	if out.Messages, err = t.loadMessages(`WHERE m.channel_id = ? AND m.is_archived = ? AND m.seq > ? ORDER BY m.seq LIMIT ?`,
		c.id, a.Archived, out.FromSeq, a.Limit); err != nil {
		return out, err
	}
	if err := t.continuation(c, a, out.Messages); err != nil {
		return out, err
	}
	if out.Parties, err = t.seatedNames(c.id); err != nil {
		return out, err
	}
	if err := t.ownReceipts(c.id, p.name, out.Messages); err != nil {
		return out, err
	}
	if a.Fit != nil {
		out.Messages = out.Messages[:min(max(a.Fit(out), 0), len(out.Messages))]
	}
	last := out.FromSeq
	if n := len(out.Messages); n > 0 {
		last = out.Messages[n-1].Seq
	}
	if err := t.row(`SELECT count(*) FROM messages WHERE channel_id = ? AND is_archived = ? AND seq > ?`, c.id, a.Archived, last).Scan(&out.More); err != nil {
		return out, err
	}
	out.Cursor = out.FromSeq
	if a.Peek || a.Archived {
		return out, nil
	}
	out.Cursor = cursor
	if len(out.Messages) == 0 || last <= cursor {
		return out, nil
	}
	if out.FromSeq > cursor {
		// A read from a later since returned nothing of what lies
		// between the cursor and since: the cursor may pass it only
		// if none of it is unread.
		if skipped, err := t.unreadBetween(c.id, p.id, cursor, out.FromSeq); err != nil || skipped {
			return out, err
		}
	}
	if err := t.advanceCursor(c.id, p.id, last); err != nil {
		return out, err
	}
	out.Cursor = last
	return out, nil
}

// continuation refuses a body_offset that does not go on with the first
// message read, the one right after since.
func (t *tx) continuation(c channel, a ReadArgs, msgs []Message) error {
	if a.BodyOffset == 0 {
		return nil
	}
	if a.Since == nil {
		return userErrorf("body_offset goes on with the message right after since — pass since=<the seq just before that message> too, as a cut answer's next does; your cursor did not move")
	}
	seq := *a.Since + 1
	if len(msgs) == 0 || msgs[0].Seq != seq {
		return t.notContinued(c, a, seq)
	}
	if total := utf8.RuneCountInString(msgs[0].Body); a.BodyOffset >= total {
		return userErrorf("message #%d has %d characters, so body_offset %d is past its end — pass a body_offset below %d, or leave it out to read #%d whole; your cursor did not move",
			seq, total, a.BodyOffset, total, seq)
	}
	return nil
}

// notContinued says why message seq, which a body_offset goes on with, is
// not the first row of the read.
func (t *tx) notContinued(c channel, a ReadArgs, seq int64) error {
	var archived bool
	err := t.row(`SELECT is_archived FROM messages WHERE channel_id = ? AND seq = ?`, c.id, seq).Scan(&archived)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return userErrorf("'%s' has no message #%d for body_offset to go on with — leave body_offset out; your cursor did not move", c.name, seq)
	case err != nil:
		return err
	case archived:
		return userErrorf("message #%d is archived — add archived=true to go on with it at body_offset %d, or leave body_offset out; your cursor did not move", seq, a.BodyOffset)
	}
	return userErrorf("message #%d is live, not archived — leave archived out to go on with it at body_offset %d; nothing was read", seq, a.BodyOffset)
}

// unreadBetween reports whether a live peer row lies in (after, upTo]: a
// message party p has not read.
func (t *tx) unreadBetween(channelID, partyID, after, upTo int64) (bool, error) {
	var found bool
	err := t.row(`SELECT EXISTS (SELECT 1 FROM messages WHERE channel_id = ? AND is_archived = 0 AND author_id <> ? AND seq > ? AND seq <= ?)`,
		channelID, partyID, after, upTo).Scan(&found)
	return found, err
}

// Inbox is what waits on the caller and on its peers.
type Inbox struct {
	Me            string          `json:"me"`
	Workspace     string          `json:"workspace"`
	Channels      []ChannelUnread `json:"channels"`
	UnreadTotal   int             `json:"unread_total"`
	WaitingOnMe   []WaitingOnMe   `json:"waiting_on_me"`
	WaitingOnPeer []WaitingOnPeer `json:"waiting_on_peer"`
	// UnreadByPeers are the caller's recent messages a seated peer has
	// not read yet (receipts.go).
	UnreadByPeers []Receipt `json:"unread_by_peers"`
	// ClaimsHeld are the caller's live claims, and ClaimsAwaited the live
	// claims it was refused and is told of when they end (claims.go):
	// what it must release, and what holds up its work. Left out when
	// there are none.
	ClaimsHeld    []Claim `json:"claims_held,omitempty"`
	ClaimsAwaited []Claim `json:"claims_awaited,omitempty"`
	// State names the database state the inbox was read at (its
	// Fingerprint), "" when unknown: one party's inboxes with the same
	// State are the same.
	State string `json:"-"`
}

// ChannelUnread is one of the caller's channels in the inbox.
type ChannelUnread struct {
	Channel string   `json:"channel"`
	Parties []string `json:"parties"`
	Unread  int      `json:"unread"`
}

// ItemRef names a live item in the inbox.
type ItemRef struct {
	Channel string `json:"channel"`
	From    string `json:"from"`
	Item    string `json:"item"`
	Mine    bool   `json:"mine"`
	Seq     int64  `json:"seq"`
	Status  string `json:"status"`
	Title   string `json:"title"`
	// Dues is the item's due time, if it has one (due.go).
	Dues
}

// WaitingOnMe is an item that needs the caller's ack, resolve or prune-ok.
type WaitingOnMe struct {
	ItemRef
	Needs Need `json:"needs"`
}

// WaitingOnPeer is a live item the caller sees that waits on others.
type WaitingOnPeer struct {
	ItemRef
	WaitingOn []string `json:"waiting_on"`
}

// Inbox reports the caller's channels, unread counts and live items. The
// lists it returns may be shared with other calls (answerMemo): callers
// must not change them.
func (d *DB) Inbox(ctx context.Context, me Identity) (Inbox, error) {
	c := readCall{me: me, key: "inbox\x00" + me.Workspace, ownView: true}
	out, state, err := readAnswer(ctx, d, c, func(t *tx, p party, _ []archived) (Inbox, error) {
		in, err := t.inbox(p, me.Workspace)
		if err != nil {
			return in, err
		}
		if in.UnreadByPeers, err = t.unreadByPeers(p, true); err != nil {
			return in, err
		}
		in.ClaimsHeld, in.ClaimsAwaited, err = t.inboxClaims(p, me.Team)
		return in, err
	})
	if timely(out) {
		state = "" // the clock changes it: answer it anew each time
	}
	out.State = state
	return out, err
}

// inbox only reads, so the hook's read-only handle shares it.
func (t *tx) inbox(p party, workspace string) (Inbox, error) {
	out := Inbox{Me: p.name, Workspace: workspace, Channels: []ChannelUnread{}, WaitingOnMe: []WaitingOnMe{}, WaitingOnPeer: []WaitingOnPeer{}}
	seats, err := t.seatsWithUnread(p.id)
	if err != nil {
		return out, err
	}
	names, err := t.seatedNamesByChannel(p.id)
	if err != nil {
		return out, err
	}
	for _, c := range seats {
		cu := ChannelUnread{Channel: c.name, Parties: names[c.id], Unread: c.unread}
		if cu.Parties == nil {
			cu.Parties = []string{}
		}
		out.UnreadTotal += cu.Unread
		out.Channels = append(out.Channels, cu)
	}
	err = t.inboxItems(p, &out.WaitingOnMe, &out.WaitingOnPeer)
	return out, err
}

// inboxItems sorts the live items p sees into what waits on p and what
// waits on a peer; the hook's read-only handle shares it.
func (t *tx) inboxItems(p party, onMe *[]WaitingOnMe, onPeer *[]WaitingOnPeer) error {
	items, err := t.liveItemsOf(p)
	if err != nil {
		return err
	}
	for _, m := range items {
		ref := ItemRef{Channel: m.Channel, From: m.From, Item: m.Slug, Mine: m.From == p.name, Seq: m.Seq, Status: m.Status, Title: m.Title, Dues: m.Dues}
		needs := needsFrom(m, p.name)
		if decides(m, p.name) {
			needs = NeedDecide
		}
		if needs != NeedNothing {
			*onMe = append(*onMe, WaitingOnMe{ItemRef: ref, Needs: needs})
			continue
		}
		*onPeer = append(*onPeer, WaitingOnPeer{ItemRef: ref, WaitingOn: waitingOn(m)})
	}
	overdueFirst(*onMe, func(w WaitingOnMe) Dues { return w.Dues })
	overdueFirst(*onPeer, func(w WaitingOnPeer) Dues { return w.Dues })
	return nil
}

// liveItemsOf loads the live items p sees — in the channels p sits in, or
// that p consumes — with what needsFrom and waitingOn read (no bodies, no
// parents). It walks the live items only: the membership test on
// item_consumers is a probe per live item, never a list of every item p
// ever consumed, so the cost does not grow with the archive.
func (t *tx) liveItemsOf(p party) ([]Message, error) {
	// Driven from the party's seats, so only the live items of its own
	// channels are read. A consumer is always seated when the item is
	// raised and leaving keeps the seat's row (left_at set), so the items
	// of channels it left are found through those rows.
	rows, err := t.query(`SELECT m.id, c.name, m.seq, a.name, coalesce(m.slug, ''), coalesce(m.title, ''), m.status,
		       coalesce(d.due_at, ''), coalesce(d.stage, '')
		FROM channel_parties cp
		JOIN messages m ON m.channel_id = cp.channel_id
		JOIN channels c ON c.id = m.channel_id JOIN parties a ON a.id = m.author_id
		LEFT JOIN item_due d ON d.message_id = m.id
		WHERE cp.party_id = ?1 AND m.kind = 'ask' AND m.is_archived = 0 AND m.status IN ('open', 'ack', 'done') AND (
			cp.left_at IS NULL
			OR EXISTS (SELECT 1 FROM item_consumers ic WHERE ic.message_id = m.id AND ic.party_id = ?1))`, p.id)
	if err != nil {
		return nil, err
	}
	out := []Message{}
	ids := []int64{}
	due := map[int64]dueRow{} // the items with a due time (due.go)
	for rows.Next() {
		m := Message{Kind: "ask"}
		var r dueRow
		if err := rows.Scan(&m.id, &m.Channel, &m.Seq, &m.From, &m.Slug, &m.Title, &m.Status, &r.due, &r.stage); err != nil {
			rows.Close()
			return nil, err
		}
		if r.due != "" {
			due[m.id] = r
		}
		out = append(out, m)
		ids = append(ids, m.id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return out, err
	}
	// By channel name, then seq: sorted here, not by the query, for the
	// same reason as in consumersOf.
	slices.SortFunc(out, func(a, b Message) int {
		return cmp.Or(strings.Compare(a.Channel, b.Channel), cmp.Compare(a.Seq, b.Seq))
	})
	byItem, err := t.consumersOf(ids)
	now := t.nowTime()
	for i := range out {
		out[i].Consumers = byItem[out[i].id]
		if r, ok := due[out[i].id]; ok {
			out[i].Dues = dues(r, out[i].Status, out[i].Consumers, now)
		}
	}
	return out, err
}

// needsFrom says what a live item needs from party me.
func needsFrom(m Message, me string) Need {
	var mine *Consumer
	for i := range m.Consumers {
		if m.Consumers[i].Party == me {
			mine = &m.Consumers[i]
		}
	}
	switch {
	case m.From == me && m.Status == "ack":
		return NeedResolve
	case mine != nil && !mine.Acked && m.Status != "done":
		return NeedAck
	case mine != nil && !mine.PruneOK && m.Status == "done":
		return NeedPruneOK
	}
	return NeedNothing
}

// waitingOn names who must act next on an item that does not wait on the caller.
func waitingOn(m Message) []string {
	out := []string{}
	for _, c := range m.Consumers {
		switch m.Status {
		case "done":
			if !c.PruneOK {
				out = append(out, c.Party)
			}
		default:
			if !c.Acked || (m.Status == "ack" && c.Party == m.From) {
				out = append(out, c.Party)
			}
		}
	}
	return out
}

// Whoami is chat_whoami's result, in the Python edition's shape: who you
// are, your channels, how much is unread, how many items wait on you
// (chat_inbox lists them) and the known parties. Me repeats Name for the
// clients of our earlier releases.
type Whoami struct {
	Name         string          `json:"name"`
	Me           string          `json:"me"`
	Workspace    string          `json:"workspace"`
	About        *string         `json:"about"`
	OSUser       *string         `json:"os_user"`
	Channels     []ChannelUnread `json:"channels"`
	UnreadTotal  int             `json:"unread_total"`
	WaitingOnMe  int             `json:"waiting_on_me"`
	KnownParties []PartyInfo     `json:"known_parties"`
	// State is as in Inbox.
	State string `json:"-"`
}

// Whoami reports identity, channels, what waits, and the known parties;
// a non-empty about updates the caller's self-description.
func (d *DB) Whoami(ctx context.Context, me Identity, about string) (Whoami, error) {
	c := readCall{me: me, write: about != "", key: "whoami\x00" + me.Workspace}
	if c.write {
		c.key = "" // its own commit changes the state: nothing to keep
	}
	out, state, err := readAnswer(ctx, d, c, func(t *tx, p party, _ []archived) (Whoami, error) {
		return t.whoami(p, me, about)
	})
	out.State = state
	return out, err
}

// whoami is Whoami inside its transaction, once the sweep has run.
func (t *tx) whoami(p party, me Identity, about string) (Whoami, error) {
	if about != "" {
		if _, err := t.exec(`UPDATE parties SET about = ? WHERE id = ?`, about, p.id); err != nil {
			return Whoami{}, err
		}
	}
	in, err := t.inbox(p, me.Workspace)
	if err != nil {
		return Whoami{}, err
	}
	out := Whoami{Name: in.Me, Me: in.Me, Workspace: in.Workspace, Channels: in.Channels,
		UnreadTotal: in.UnreadTotal, WaitingOnMe: len(in.WaitingOnMe)}
	var a, osUser sql.NullString
	if err := t.row(`SELECT about, os_user FROM parties WHERE id = ?`, p.id).Scan(&a, &osUser); err != nil {
		return out, err
	}
	if a.Valid && a.String != "" {
		out.About = &a.String
	}
	if osUser.Valid {
		out.OSUser = &osUser.String
	}
	out.KnownParties, err = t.knownParties(me.Team)
	return out, err
}
