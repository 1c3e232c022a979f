package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// target is a message an item address points at.
type target struct {
	id       int64
	ch       channel
	seq      int64
	kind     string
	slug     string
	status   string
	authorID int64
	archived bool
}

// label names the message in an error: [slug] for items, #seq in 'channel' otherwise.
func (x target) label() string {
	if x.slug != "" {
		return "[" + x.slug + "]"
	}
	return fmt.Sprintf("#%d in '%s'", x.seq, x.ch.name)
}

// re is how a reply names its parent: the item's slug, else #seq.
func (x target) re() string {
	if x.kind == "ask" && x.slug != "" {
		return x.slug
	}
	return "#" + strconv.FormatInt(x.seq, 10)
}

const targetColumns = `m.id, m.channel_id, c.name, m.seq, m.kind, coalesce(m.slug, ''), m.status, m.author_id, m.is_archived`

func scanTarget(s interface{ Scan(...any) error }) (target, error) {
	var x target
	err := s.Scan(&x.id, &x.ch.id, &x.ch.name, &x.seq, &x.kind, &x.slug, &x.status, &x.authorID, &x.archived)
	return x, err
}

// findMessage resolves an address: slug, seq, #seq, channel:seq or
// channel:slug. A bare seq means a seq in your channel (the channel choice
// rule); a bare slug is looked up in the channels you sit in or consume
// items of. #seq is always a seq. Digits alone are a seq, unless a slug of
// digits (which only the Python edition creates) exists too: then the
// address must name exactly one message, or it is refused as ambiguous.
func (t *tx) findMessage(p party, addr, defaultChannel string) (target, error) {
	x, err := t.locate(p, addr, defaultChannel)
	if err != nil {
		return x, err
	}
	// A call that acts on the message holds its channel's lock; if it
	// was not held while the message was found, its state is read again.
	fresh, err := t.lockChannel(x.ch.id)
	if err != nil || !fresh {
		return x, err
	}
	return scanTarget(t.row(`SELECT `+targetColumns+` FROM messages m JOIN channels c ON c.id = m.channel_id WHERE m.id = ?`, x.id))
}

// locate is findMessage before the lock.
func (t *tx) locate(p party, addr, defaultChannel string) (target, error) {
	raw := strings.TrimSpace(addr)
	ref := strings.ToLower(raw)
	var chName string
	if i := strings.Index(ref, ":"); i >= 0 {
		chName, ref = ref[:i], ref[i+1:]
	}
	ref = strings.TrimSpace(ref)
	hashed := strings.HasPrefix(ref, "#")
	seq, seqErr := strconv.ParseInt(strings.TrimPrefix(ref, "#"), 10, 64)
	isSeq := seqErr == nil && seq > 0
	if ref == "" || (hashed && !isSeq) {
		return target{}, userErrorf("item %q is not an address — use a slug, a seq, #seq, channel:seq or channel:slug", raw)
	}
	if chName != "" {
		c, err := t.channelByName(chName)
		if err != nil {
			return target{}, err
		}
		x, err := t.findInChannel(c, raw, ref, seq, isSeq, hashed)
		return t.visibleTo(p, c, raw, x, err)
	}
	if !isSeq {
		found, err := t.findSlug(p, ref)
		if err != nil {
			return target{}, err
		}
		return oneSlug(found, raw, ref)
	}
	var legacy []target // items whose slug is these digits
	if !hashed {
		var err error
		if legacy, err = t.findSlug(p, ref); err != nil {
			return target{}, err
		}
	}
	c, err := t.seatedChannel(p, "", defaultChannel)
	if err != nil {
		if len(legacy) == 0 {
			return target{}, err
		}
		// No channel to read the seq in: the slug alone would be a guess.
		return target{}, ambiguous(raw, legacy, seq)
	}
	x, ok, err := t.messageAt(c, seq)
	if err != nil {
		return target{}, err
	}
	if ok {
		legacy = append([]target{x}, legacy...)
	}
	switch found := distinct(legacy); len(found) {
	case 0:
		return target{}, userErrorf("there is no message %q in '%s' — check the seq or slug with chat_read(channel=%q)", raw, c.name, c.name)
	case 1:
		return found[0], nil
	default:
		return target{}, ambiguous(raw, found, 0)
	}
}

// findInChannel resolves the part after "channel:".
func (t *tx) findInChannel(c channel, raw, ref string, seq int64, isSeq, hashed bool) (target, error) {
	var found []target
	if isSeq {
		x, ok, err := t.messageAt(c, seq)
		if err != nil {
			return target{}, err
		}
		if ok {
			found = append(found, x)
		}
	}
	if !hashed {
		x, err := scanTarget(t.row(`SELECT `+targetColumns+` FROM messages m JOIN channels c ON c.id = m.channel_id WHERE m.channel_id = ? AND m.slug = ?`, c.id, ref))
		switch {
		case err == nil:
			found = append(found, x)
		case !errors.Is(err, sql.ErrNoRows):
			return target{}, err
		}
	}
	switch found = distinct(found); len(found) {
	case 0:
		return target{}, userErrorf("there is no message %q in '%s' — check the seq or slug with chat_read(channel=%q)", raw, c.name, c.name)
	case 1:
		return found[0], nil
	}
	return target{}, ambiguous(raw, found, 0)
}

// visibleTo lets p address x, found in c at raw, only if p sits in c or
// consumes x (it may have left c): anything else, even that x exists or
// what its slug (its title's words) is, belongs to the parties there.
func (t *tx) visibleTo(p party, c channel, raw string, x target, found error) (target, error) {
	seated, err := t.seated(c.id, p.id)
	if err != nil || seated {
		return x, cmp.Or(err, found)
	}
	if found == nil && x.kind == "ask" {
		_, consumes, err := t.consumerRow(x.id, p.id)
		if err != nil || consumes {
			return x, err
		}
	}
	return target{}, userErrorf("you are not in '%s', and not a consumer of %q — join the channel with chat_channel_join to read its messages", c.name, raw)
}

// messageAt is the message with seq in channel c, if there is one.
func (t *tx) messageAt(c channel, seq int64) (target, bool, error) {
	x, err := scanTarget(t.row(`SELECT `+targetColumns+` FROM messages m JOIN channels c ON c.id = m.channel_id WHERE m.channel_id = ? AND m.seq = ?`, c.id, seq))
	if errors.Is(err, sql.ErrNoRows) {
		return x, false, nil
	}
	return x, err == nil, err
}

// distinct drops repeats of a message (a legacy slug "3" on seq 3 is one).
func distinct(list []target) []target {
	var out []target
	for _, x := range list {
		if !slices.ContainsFunc(out, func(y target) bool { return y.id == x.id }) {
			out = append(out, x)
		}
	}
	return out
}

// ambiguous refuses digits that are a seq and also the slug of an item
// (made by the Python edition), offering the channel:#seq form of each
// message, which cannot be mistaken; seq > 0 adds the form for a seq whose
// channel is unknown.
func ambiguous(raw string, found []target, seq int64) error {
	var choices []string
	for _, x := range found {
		choices = append(choices, fmt.Sprintf("%s for %s", x.address(), x.label()))
	}
	if seq > 0 {
		choices = append(choices, fmt.Sprintf("<channel>:#%d for message #%d of a channel", seq, seq))
	}
	return userErrorf("item %q is ambiguous: its digits are a seq and also the slug of an item an older edition made — pass %s", raw, strings.Join(choices, ", or "))
}

// address is the unambiguous address of a message: channel:#seq.
func (x target) address() string {
	return fmt.Sprintf("%s:#%d", x.ch.name, x.seq)
}

// findSlug lists the items with slug in the channels p sits in or
// consumes items of, by channel name.
func (t *tx) findSlug(p party, slug string) ([]target, error) {
	rows, err := t.query(`SELECT `+targetColumns+` FROM messages m JOIN channels c ON c.id = m.channel_id
		WHERE m.slug = ?1 AND (
			m.channel_id IN (SELECT channel_id FROM channel_parties WHERE party_id = ?2 AND left_at IS NULL)
			OR EXISTS (SELECT 1 FROM item_consumers ic WHERE ic.message_id = m.id AND ic.party_id = ?2))
		ORDER BY c.name`, slug, p.id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []target
	for rows.Next() {
		x, err := scanTarget(rows)
		if err != nil {
			return nil, err
		}
		found = append(found, x)
	}
	return found, rows.Err()
}

// oneSlug picks the one item a bare slug names.
func oneSlug(found []target, raw, slug string) (target, error) {
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return target{}, userErrorf("no item %q in your channels — check the slug with chat_inbox, or pass channel:slug", raw)
	}
	names := make([]string, len(found))
	for i, x := range found {
		names[i] = x.ch.name + ":" + slug
	}
	return target{}, userErrorf("item %q exists in several channels — pass one of: %s", raw, quoteList(names))
}

// findItem is findMessage for the item tools: the message must be an ask.
func (t *tx) findItem(p party, addr, defaultChannel string) (target, error) {
	x, err := t.findMessage(p, addr, defaultChannel)
	if err != nil {
		return x, err
	}
	if x.kind != "ask" {
		return x, userErrorf("%s is a %s, not an item — only items raised with chat_ask are acked, resolved and prune-ok'd", x.label(), x.kind)
	}
	return x, nil
}

// errArchived refuses to change an archived item.
func errArchived(x target) error {
	return userErrorf("%s is archived (done, and every consumer gave prune-ok) — nothing is left to do; raise a new item with chat_ask if needed", x.label())
}

// consumer is one row of item_consumers.
type consumer struct {
	acked, pruneOK bool
}

func (t *tx) consumerRow(itemID, partyID int64) (consumer, bool, error) {
	var acked, pruned sql.NullString
	err := t.row(`SELECT acked_at, prune_ok_at FROM item_consumers WHERE message_id = ? AND party_id = ?`, itemID, partyID).Scan(&acked, &pruned)
	if errors.Is(err, sql.ErrNoRows) {
		return consumer{}, false, nil
	}
	return consumer{acked: acked.Valid, pruneOK: pruned.Valid}, err == nil, err
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// Slugify derives an item handle: lowercase, runs of anything but a-z0-9
// become -, trimmed, cut to 40, trimmed again; empty becomes "item". Digits
// alone would read as a seq in an address ("c2:1" would name the item [1]
// and seq 1 at once), so they become item-<digits>.
func Slugify(s string) string {
	slug := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	if slug == "" {
		return "item"
	}
	if allDigits(slug) {
		slug = "item-" + slug
		slug = slug[:min(len(slug), 40)]
	}
	return slug
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// AskArgs are chat_ask's arguments.
type AskArgs struct {
	Title, Body, Channel, Slug, Ref string
	Consumers                       []string
	Announce                        bool
	DefaultChannel                  string
	// SameWithin, when set, makes a repeat of a live ask of the caller's
	// — the same channel, title and body (and slug, when one is given),
	// raised within SameWithin — that ask, answered with Duplicate (a client's retry of a call that
	// timed out, made without an idempotency key).
	SameWithin time.Duration
	// Due is by when each consumer must ack: a duration from now or an
	// RFC 3339 time (ParseDue); "" sets none.
	Due string
	// To are parties seated in the channel the item is addressed to,
	// besides its @names (mentions.go); its consumers are its own.
	To []string
}

// AskResult is chat_ask's result.
type AskResult struct {
	Channel         string   `json:"channel"`
	Seq             int64    `json:"seq"`
	Slug            string   `json:"slug"`
	Status          string   `json:"status"`
	Title           string   `json:"title"`
	Consumers       []string `json:"consumers"`
	AwaitingAckFrom []string `json:"awaiting_ack_from"`
	// Duplicate says the call repeated an ask raised moments before
	// (AskArgs.SameWithin): this is that ask, and nothing was written.
	Duplicate bool `json:"duplicate,omitempty"`
	// Due is the due time the ask set, if any.
	Due string `json:"due,omitempty"`
	Addressing
}

// Ask raises an item. Its consumers are the named parties (seated in the
// channel) or every seated party; the author is always one and is acked at once.
func (d *DB) Ask(ctx context.Context, me Identity, a AskArgs) (AskResult, error) {
	var out AskResult
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		due, err := t.askDue(a)
		if err != nil {
			return err
		}
		c, err := t.seatedChannel(p, a.Channel, a.DefaultChannel)
		if err != nil {
			return err
		}
		title, body := strings.TrimSpace(a.Title), strings.TrimSpace(a.Body)
		if a.SameWithin > 0 {
			if _, err := t.lockChannel(c.id); err != nil {
				return err
			}
			var found bool
			asked := ""
			if strings.TrimSpace(a.Slug) != "" {
				asked = Slugify(a.Slug)
			}
			if out, found, err = t.sameAsk(c, p, title, body, asked, a.SameWithin); err != nil || found {
				return err
			}
		}
		consumers, err := t.chooseConsumers(c, p, a.Consumers)
		if err != nil {
			return err
		}
		slug, err := t.freeSlug(c, Slugify(firstNonEmpty(a.Slug, a.Title)))
		if err != nil {
			return err
		}
		status := "open"
		if a.Announce {
			status = "done"
		}
		id, seq, err := t.post(c, p, post{kind: "ask", body: body, slug: slug, title: title, ref: strings.TrimSpace(a.Ref), status: status, to: a.To})
		if err != nil {
			return err
		}
		out = AskResult{Channel: c.name, Seq: seq, Slug: slug, Status: status, Title: title, Consumers: []string{}, AwaitingAckFrom: []string{}, Addressing: t.attended.answer()}
		for _, q := range consumers {
			var acked any
			if q.id == p.id {
				acked = t.now
			} else if !a.Announce { // an announcement is done: nobody acks it
				out.AwaitingAckFrom = append(out.AwaitingAckFrom, q.name)
			}
			if _, err := t.exec(`INSERT INTO item_consumers (message_id, party_id, acked_at) VALUES (?, ?, ?)`, id, q.id, acked); err != nil {
				return err
			}
			out.Consumers = append(out.Consumers, q.name)
		}
		if !due.IsZero() {
			if err := t.setDue(id, due); err != nil {
				return err
			}
			out.Due = Timestamp(due)
		}
		return t.followOwnPost(c, p, seq)
	})
	return out, err
}

func firstNonEmpty(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

// chooseConsumers returns an item's consumers in the Python edition's
// order, which is the order of item_consumers' rows: the named parties as
// given and then the author, or every seated party in seating order.
func (t *tx) chooseConsumers(c channel, author party, named []string) ([]party, error) {
	seated, err := t.names(`SELECT p.name FROM channel_parties cp JOIN parties p ON p.id = cp.party_id
		WHERE cp.channel_id = ? AND cp.left_at IS NULL ORDER BY cp.rowid`, c.id)
	if err != nil {
		return nil, err
	}
	want := seated
	if len(named) > 0 {
		want = nil
		for _, n := range named {
			n = strings.TrimSpace(n)
			if !contains(seated, n) {
				return nil, userErrorf("consumer '%s' does not sit in '%s' — name parties seated there (%s) or leave consumers out", n, c.name, quoteList(seated))
			}
			if !contains(want, n) {
				want = append(want, n)
			}
		}
		if !contains(want, author.name) {
			want = append(want, author.name)
		}
	}
	var out []party
	for _, n := range want {
		q, err := t.partyByName(n, false) // seated, so it exists
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	switch {
	case len(out) >= 2:
		return out, nil
	case len(named) > 0 && len(seated) > 1:
		return nil, userErrorf("consumers names only you, and an item needs a consumer besides you — name a party seated in '%s' (%s), or leave consumers out to ask every one of them", c.name, quoteList(without(seated, author.name)))
	}
	return nil, userErrorf("an item needs a consumer besides you and nobody else sits in '%s' — seat a peer with chat_channel_new or ask it to chat_channel_join", c.name)
}

// without is list without name.
func without(list []string, name string) []string {
	var out []string
	for _, x := range list {
		if x != name {
			out = append(out, x)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// freeSlug appends -2, -3, ... until the slug is unused in the channel.
func (t *tx) freeSlug(c channel, slug string) (string, error) {
	candidate := slug
	for n := 2; ; n++ {
		var taken int
		if err := t.row(`SELECT count(*) FROM messages WHERE channel_id = ? AND slug = ?`, c.id, candidate).Scan(&taken); err != nil {
			return "", err
		}
		if taken == 0 {
			return candidate, nil
		}
		candidate = fmt.Sprintf("%s-%d", slug, n)
	}
}

// ItemState is what ack, resolve and prune_ok return: the item in message
// shape plus who it still waits on.
type ItemState struct {
	Message
	AwaitingAckFrom     []string `json:"awaiting_ack_from"`
	AwaitingPruneOKFrom []string `json:"awaiting_prune_ok_from"`
	ArchivedNow         *bool    `json:"archived_now,omitempty"`
	// Unchanged is true when the call found nothing to change (an item
	// already acked by you, already done).
	Unchanged bool `json:"-"`
}

func (t *tx) itemState(id int64) (ItemState, error) {
	msgs, err := t.loadMessages(`WHERE m.id = ?`, id)
	if err != nil {
		return ItemState{}, err
	}
	if len(msgs) != 1 {
		return ItemState{}, errors.New("item vanished inside its own transaction")
	}
	// The message shape lists the consumers by name, as reads do and as the
	// Python edition's item states do; only an ask's own result keeps the
	// order the item named them.
	st := ItemState{Message: msgs[0], AwaitingAckFrom: []string{}, AwaitingPruneOKFrom: []string{}}
	for _, c := range st.Consumers {
		if !c.Acked {
			st.AwaitingAckFrom = append(st.AwaitingAckFrom, c.Party)
		}
		if !c.PruneOK {
			st.AwaitingPruneOKFrom = append(st.AwaitingPruneOKFrom, c.Party)
		}
	}
	return st, nil
}

// notAConsumer explains who may act on an item.
func (t *tx) notAConsumer(x target, action string) error {
	names, err := t.names(`SELECT p.name FROM item_consumers ic JOIN parties p ON p.id = ic.party_id WHERE ic.message_id = ? ORDER BY p.name`, x.id)
	if err != nil {
		return err
	}
	return userErrorf("you are not a consumer of %s — only its consumers (%s) %s it; use chat_reply to comment", x.label(), quoteList(names), action)
}

// Ack stamps the caller's ack; the first ack moves an open item to ack.
func (d *DB) Ack(ctx context.Context, me Identity, item, note, defaultChannel string) (ItemState, error) {
	var out ItemState
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		x, err := t.findItem(p, item, defaultChannel)
		if err != nil {
			return err
		}
		row, ok, err := t.consumerRow(x.id, p.id)
		if err != nil {
			return err
		}
		if !ok {
			return t.notAConsumer(x, "ack")
		}
		if x.archived {
			// A retry after a lost answer gets the item's state, as from
			// the Python edition; a note would go into an archived thread.
			if strings.TrimSpace(note) != "" {
				return errArchived(x)
			}
			out, err = t.itemState(x.id)
			out.Unchanged = true
			return err
		}
		if !row.acked {
			if _, err := t.exec(`UPDATE item_consumers SET acked_at = ? WHERE message_id = ? AND party_id = ?`, t.now, x.id, p.id); err != nil {
				return err
			}
			if _, err := t.exec(`UPDATE messages SET status = 'ack', updated_at = ? WHERE id = ? AND status = 'open'`, t.now, x.id); err != nil {
				return err
			}
			if _, _, err := t.post(x.ch, p, post{kind: "event", body: fmt.Sprintf("[%s] acked by %s", x.slug, p.name)}); err != nil {
				return err
			}
		}
		if err := t.note(x, p, note); err != nil {
			return err
		}
		out, err = t.itemState(x.id)
		out.Unchanged = row.acked && strings.TrimSpace(note) == ""
		return err
	})
	return out, err
}

// note posts an optional note as a reply to the item.
func (t *tx) note(x target, p party, note string) error {
	note = strings.TrimSpace(note)
	if note == "" {
		return nil
	}
	_, _, err := t.post(x.ch, p, post{kind: "reply", body: note, parentID: x.id})
	return err
}

// Resolve marks an item done: the raiser at any time, a consumer only
// after acking and with answered=true.
func (d *DB) Resolve(ctx context.Context, me Identity, item, note string, answered bool, defaultChannel string) (ItemState, error) {
	var out ItemState
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		x, err := t.findItem(p, item, defaultChannel)
		if err != nil {
			return err
		}
		if x.archived {
			return errArchived(x) // deliberately unlike the Python edition: docs/protocol.md
		}
		if x.status == "done" {
			out, err = t.itemState(x.id)
			out.Unchanged = true
			return err
		}
		role := "raiser"
		if x.authorID != p.id {
			role = "answerer"
			if err := t.mayAnswer(x, p, answered); err != nil {
				return err
			}
		}
		if _, err := t.exec(`UPDATE messages SET status = 'done', updated_at = ? WHERE id = ?`, t.now, x.id); err != nil {
			return err
		}
		if _, _, err := t.post(x.ch, p, post{kind: "event", body: fmt.Sprintf("[%s] resolved by %s (%s)", x.slug, p.name, role)}); err != nil {
			return err
		}
		// The claims that served it end with it (claims.go).
		if _, err := t.endClaims(endResolved, p.id, `c.item_id = ?2`, x.id); err != nil {
			return err
		}
		if err := t.note(x, p, note); err != nil {
			return err
		}
		out, err = t.itemState(x.id)
		return err
	})
	return out, err
}

// mayAnswer is the second resolve gate: a consumer who acked and says it answered.
func (t *tx) mayAnswer(x target, p party, answered bool) error {
	var raiser string
	if err := t.row(`SELECT name FROM parties WHERE id = ?`, x.authorID).Scan(&raiser); err != nil {
		return err
	}
	row, ok, err := t.consumerRow(x.id, p.id)
	if err != nil {
		return err
	}
	switch {
	case !ok:
		return userErrorf("only the raiser (%s) resolves %s — you are not one of its consumers", raiser, x.label())
	case !row.acked:
		return userErrorf("you have not acked %s — ack it first (chat_ack); only then may you resolve it, with answered=true, if you answered it", x.label())
	case !answered:
		return userErrorf("only the raiser (%s) confirms satisfaction of %s — if you answered it yourself, call chat_resolve again with answered=true; otherwise leave it to %s", raiser, x.label(), raiser)
	}
	return nil
}

// PruneOK records the caller's own prune-ok and runs the archive sweep.
func (d *DB) PruneOK(ctx context.Context, me Identity, item, defaultChannel string) (ItemState, error) {
	var out ItemState
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		x, err := t.findItem(p, item, defaultChannel)
		if err != nil {
			return err
		}
		row, ok, err := t.consumerRow(x.id, p.id)
		if err != nil {
			return err
		}
		if !ok {
			return t.notAConsumer(x, "give prune-ok on")
		}
		if !row.pruneOK && !x.archived {
			if _, err := t.exec(`UPDATE item_consumers SET prune_ok_at = ? WHERE message_id = ? AND party_id = ?`, t.now, x.id, p.id); err != nil {
				return err
			}
			t.touch(x.ch.name, x.seq, p.name)
		}
		swept, err := t.sweep(p)
		if err != nil {
			return err
		}
		out, err = t.itemState(x.id)
		now := false
		for _, s := range swept {
			now = now || s.id == x.id
		}
		out.ArchivedNow = &now
		out.Unchanged = row.pruneOK
		return err
	})
	return out, err
}

// archived is an item the sweep archived.
type archived struct {
	id        int64
	channelID int64
	slug      string
}

// sweep archives every done item whose consumers all gave prune-ok, with
// its replies, and posts an event for each.
func (t *tx) sweep(p party) ([]archived, error) {
	rows, err := t.query(`SELECT m.id, m.channel_id, c.name, coalesce(m.slug, '') FROM messages m JOIN channels c ON c.id = m.channel_id
		WHERE m.kind = 'ask' AND m.status = 'done' AND m.is_archived = 0
		  AND NOT EXISTS (SELECT 1 FROM item_consumers ic WHERE ic.message_id = m.id AND ic.prune_ok_at IS NULL)
		ORDER BY m.id`)
	if err != nil {
		return nil, err
	}
	var found []archived
	var chans []channel
	for rows.Next() {
		var a archived
		var c channel
		if err := rows.Scan(&a.id, &a.channelID, &c.name, &a.slug); err != nil {
			rows.Close()
			return nil, err
		}
		c.id = a.channelID
		found = append(found, a)
		chans = append(chans, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var done []archived
	for i, a := range found {
		if ok, err := t.stillArchivable(a); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if _, err := t.exec(`WITH RECURSIVE thread(id) AS (
				SELECT CAST(?1 AS BIGINT) UNION SELECT m.id FROM messages m JOIN thread ON m.parent_id = thread.id)
			UPDATE messages SET is_archived = 1, updated_at = CASE WHEN id = ?1 THEN ?2 ELSE updated_at END WHERE id IN (SELECT id FROM thread)`, a.id, t.now); err != nil {
			return nil, err
		}
		if _, _, err := t.post(chans[i], p, post{kind: "event", body: fmt.Sprintf("[%s] archived (done + unanimous prune-ok)", a.slug)}); err != nil {
			return nil, err
		}
		done = append(done, a)
	}
	return done, nil
}

// stillArchivable takes the lock of a's channel, without waiting for it,
// and says whether a is still to be archived. Another call may hold the
// channel (then a is left to a later sweep: waiting there could close a
// circle of calls waiting for each other) or, on an engine whose writing
// calls run beside each other, may have archived a since the sweep looked
// (recheck).
func (t *tx) stillArchivable(a archived) (bool, error) {
	got, recheck, err := t.tryLockChannel(a.channelID)
	if err != nil || !got || !recheck {
		return got, err
	}
	var ok bool
	err = t.row(`SELECT EXISTS (SELECT 1 FROM messages m WHERE m.id = ? AND m.kind = 'ask' AND m.status = 'done' AND m.is_archived = 0
		AND NOT EXISTS (SELECT 1 FROM item_consumers ic WHERE ic.message_id = m.id AND ic.prune_ok_at IS NULL))`, a.id).Scan(&ok)
	return ok, err
}
