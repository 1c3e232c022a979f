package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/text"
)

// The operations here are for the person who runs the chat, from a shell
// (mcpp-chat parties ...), never for an agent: no tool calls them. Each is
// one transaction and writes nothing when it refuses.

// PartyRecord is a party as the person sees it: where it lives, when it was
// last active, and what ties it to the conversation.
type PartyRecord struct {
	Name      string   `json:"name"`
	Workspace string   `json:"workspace"`
	About     string   `json:"about,omitempty"`
	OSUser    string   `json:"os_user,omitempty"`
	FirstSeen string   `json:"first_seen"`
	LastSeen  string   `json:"last_seen"`
	Channels  []string `json:"channels"`
	Wrote     int      `json:"wrote"`
	// Owes lists the live items waiting on the party, as label: need.
	Owes []string `json:"owes"`
}

// Parties lists every party, by name.
func (d *DB) Parties(ctx context.Context) ([]PartyRecord, error) {
	var out []PartyRecord
	err := d.view(ctx, func(t *tx) error {
		rows, err := t.query(`SELECT p.id, p.name, p.workspace_path, coalesce(p.about, ''), coalesce(p.os_user, ''), p.first_seen, p.last_seen,
				(SELECT count(*) FROM messages m WHERE m.author_id = p.id)
			FROM parties p ORDER BY p.name`)
		if err != nil {
			return err
		}
		var ids []int64
		out = nil // a retry of fn starts afresh
		for rows.Next() {
			var r PartyRecord
			var id int64
			if err := rows.Scan(&id, &r.Name, &r.Workspace, &r.About, &r.OSUser, &r.FirstSeen, &r.LastSeen, &r.Wrote); err != nil {
				rows.Close()
				return err
			}
			ids, out = append(ids, id), append(out, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i, id := range ids {
			p := party{id: id, name: out[i].Name}
			if out[i].Owes, err = t.owes(p); err != nil {
				return err
			}
			seats, err := t.seats(id)
			if err != nil {
				return err
			}
			out[i].Channels = []string{}
			for _, c := range seats {
				out[i].Channels = append(out[i].Channels, c.name)
			}
		}
		return nil
	})
	return out, err
}

// owes lists what the live items need from p, as "#channel [slug]: need".
func (t *tx) owes(p party) ([]string, error) {
	items, err := t.liveItemsOf(p)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, m := range items {
		if needs := needsFrom(m, p.name); needs != NeedNothing {
			out = append(out, fmt.Sprintf("%s on #%s [%s]", needs.Owed(), m.Channel, m.Slug))
		}
	}
	return out, nil
}

// adminParty finds a party, and its folder, by its exact name for a shell
// command.
func (t *tx) adminParty(name string) (p party, workspace string, err error) {
	p.name = name
	err = t.row(`SELECT id, workspace_path FROM parties WHERE name = ?`, name).Scan(&p.id, &workspace)
	if errors.Is(err, sql.ErrNoRows) {
		return p, "", userErrorf("there is no party named %s — run `mcpp-chat parties` to see their names", name)
	}
	return p, workspace, err
}

// MoveResult says what MoveParty did.
type MoveResult struct {
	Name   string `json:"name"`
	From   string `json:"from"`
	To     string `json:"to"`
	Merged string `json:"merged,omitempty"` // the party that lived at To, folded in
}

// MoveParty makes name the party of the folder root: its repository moved
// there. A session started there is then name again, and what waits on name
// waits on that session. When another party already lives at root (the
// moved repository's sessions became name~2), it is refused unless merge:
// that party is folded into name — its messages, seats, cursors and items
// become name's — and removed.
func (d *DB) MoveParty(ctx context.Context, name, root string, merge bool) (MoveResult, error) {
	var out MoveResult
	if err := (Identity{Workspace: root}).check(); err != nil {
		return out, err
	}
	err := d.exclusive(ctx, func(t *tx) error {
		p, from, err := t.adminParty(name)
		if err != nil {
			return err
		}
		out = MoveResult{Name: name, From: from, To: root}
		if from == root {
			return userErrorf("%s already lives at %s — nothing to move", name, root)
		}
		var other party
		err = t.row(`SELECT id, name FROM parties WHERE workspace_path = ?`, root).Scan(&other.id, &other.name)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case !merge:
			return userErrorf("%s is already the folder of party %s — run again with --merge to fold %s into %s (its messages, seats and items become %s's), or forget %s first if it holds nothing (mcpp-chat parties forget %s)",
				root, other.name, other.name, name, name, other.name, other.name)
		default:
			if err := t.mergeParty(p, other); err != nil {
				return err
			}
			out.Merged = other.name
		}
		_, err = t.exec(`UPDATE parties SET workspace_path = ? WHERE id = ?`, root, p.id)
		return err
	})
	return out, err
}

// mergeParty folds party b into party a and deletes b. Where both hold a
// row of the same thing (a seat, a cursor, an item), the rows combine: a
// seat is taken if either sits, a cursor is the further one, an ack or a
// prune-ok given by either counts.
func (t *tx) mergeParty(a, b party) error {
	if err := t.mergeMentions(a, b); err != nil {
		return err
	}
	steps := []string{
		`UPDATE messages SET author_id = ?1 WHERE author_id = ?2`,
		`UPDATE channels SET created_by = ?1 WHERE created_by = ?2`,
		`UPDATE channel_parties SET left_at = NULL WHERE party_id = ?1 AND left_at IS NOT NULL
			AND channel_id IN (SELECT channel_id FROM channel_parties WHERE party_id = ?2 AND left_at IS NULL)`,
		`UPDATE channel_parties SET party_id = ?1 WHERE party_id = ?2
			AND channel_id NOT IN (SELECT channel_id FROM channel_parties WHERE party_id = ?1)`,
		`DELETE FROM channel_parties WHERE party_id = ?2`,
		`INSERT INTO cursors (channel_id, party_id, last_seq, updated_at)
			SELECT channel_id, ?1, last_seq, updated_at FROM cursors WHERE party_id = ?2
			ON CONFLICT (channel_id, party_id) DO UPDATE SET last_seq = max(cursors.last_seq, excluded.last_seq), updated_at = excluded.updated_at`,
		`DELETE FROM cursors WHERE party_id = ?2`,
		// Read times (channels.go) go with the party, a's kept where
		// both moved to the same seq.
		`INSERT INTO reads (channel_id, party_id, upto_seq, read_at) SELECT channel_id, ?1, upto_seq, read_at FROM reads WHERE party_id = ?2
			ON CONFLICT (channel_id, party_id, upto_seq) DO NOTHING`,
		`DELETE FROM reads WHERE party_id = ?2`,
		`UPDATE item_consumers AS x SET acked_at = coalesce(x.acked_at, y.acked_at), prune_ok_at = coalesce(x.prune_ok_at, y.prune_ok_at)
			FROM item_consumers AS y WHERE x.party_id = ?1 AND y.party_id = ?2 AND y.message_id = x.message_id`,
		`UPDATE item_consumers SET party_id = ?1 WHERE party_id = ?2
			AND message_id NOT IN (SELECT message_id FROM item_consumers WHERE party_id = ?1)`,
		`DELETE FROM item_consumers WHERE party_id = ?2`,
		// An ack that came with b moves an open item a consumes to ack,
		// as the ack itself would have.
		`UPDATE messages SET status = 'ack', updated_at = ?3 WHERE kind = 'ask' AND status = 'open' AND author_id <> ?1
			AND id IN (SELECT message_id FROM item_consumers WHERE party_id = ?1 AND acked_at IS NOT NULL)`,
		// Who was told what (told.go) goes with the party, a's first
		// telling kept; b's idempotency keys answered b's calls only.
		`INSERT INTO told (message_id, party_id, told_at, via) SELECT message_id, ?1, told_at, via FROM told WHERE party_id = ?2
			ON CONFLICT (message_id, party_id) DO NOTHING`,
		`DELETE FROM told WHERE party_id = ?2 OR (party_id = ?1 AND message_id IN (SELECT id FROM messages WHERE author_id = ?1))`,
		`DELETE FROM idempotency_keys WHERE party_id = ?2`,
		// Claims are the party's, whichever name it had (claims.go).
		`UPDATE claims SET holder_id = ?1 WHERE holder_id = ?2`,
		`UPDATE claims SET owner_id = ?1 WHERE owner_id = ?2`,
		`UPDATE claims SET ended_by = ?1 WHERE ended_by = ?2`,
		`UPDATE claim_waiters SET party_id = ?1 WHERE party_id = ?2
			AND claim_id NOT IN (SELECT claim_id FROM claim_waiters WHERE party_id = ?1)`,
		`DELETE FROM claim_waiters WHERE party_id = ?2`,
		`UPDATE parties SET about = coalesce(about, (SELECT about FROM parties WHERE id = ?2)),
			first_seen = min(first_seen, (SELECT first_seen FROM parties WHERE id = ?2)),
			last_seen = max(last_seen, (SELECT last_seen FROM parties WHERE id = ?2)) WHERE id = ?1`,
		`DELETE FROM parties WHERE id = ?2`,
	}
	for _, q := range steps {
		args := []any{a.id, b.id}
		if strings.Contains(q, "?3") {
			args = append(args, t.now)
		}
		if _, err := t.exec(q, args...); err != nil {
			return fmt.Errorf("merge %s into %s: %w", b.name, a.name, err)
		}
	}
	return nil
}

// ForgetResult says what ForgetParty removed.
type ForgetResult struct {
	Name      string   `json:"name"`
	Workspace string   `json:"workspace"`
	Seats     int      `json:"seats"`
	Released  []string `json:"released"` // live items that waited on it
}

// ForgetParty removes a party that wrote nothing: a folder that only ever
// probed the server, or a repository nobody uses any more. One that wrote
// messages is refused — the history keeps who said what. One that live
// items still wait on is refused unless force, which drops it from those
// items (they then wait on the other consumers only).
func (d *DB) ForgetParty(ctx context.Context, name string, force bool) (ForgetResult, error) {
	var out ForgetResult
	err := d.exclusive(ctx, func(t *tx) error {
		p, workspace, err := t.adminParty(name)
		if err != nil {
			return err
		}
		out = ForgetResult{Name: name, Workspace: workspace, Released: []string{}}
		var wrote int
		if err := t.row(`SELECT count(*) FROM messages WHERE author_id = ?`, p.id).Scan(&wrote); err != nil {
			return err
		}
		if wrote > 0 {
			return userErrorf("%s wrote %s, and the history keeps who said what, so it cannot be forgotten — if its repository moved, run `mcpp-chat parties move %s NEW_FOLDER` instead", name, text.Count(wrote, "message"), name)
		}
		if out.Released, err = t.owes(p); err != nil {
			return err
		}
		var live int
		if err := t.row(`SELECT count(*) FROM item_consumers ic JOIN messages m ON m.id = ic.message_id
			WHERE ic.party_id = ? AND m.is_archived = 0`, p.id).Scan(&live); err != nil {
			return err
		}
		if live > 0 && !force {
			return userErrorf("%s still consumes %s (%s) — its peers wait on it there; run again with --force to drop it from them, so that they wait on the others only",
				name, text.Count(live, "live item"), quoteList(out.Released))
		}
		if err := t.row(`SELECT count(*) FROM channel_parties WHERE party_id = ? AND left_at IS NULL`, p.id).Scan(&out.Seats); err != nil {
			return err
		}
		if err := t.forgetMentions(p.id); err != nil {
			return fmt.Errorf("forget %s: %w", name, err)
		}
		for _, q := range []string{
			// Its claims, and those on its repository, go with it.
			`DELETE FROM claim_waiters WHERE party_id = ?1
				OR claim_id IN (SELECT id FROM claims WHERE holder_id = ?1 OR owner_id = ?1)`,
			`DELETE FROM claims WHERE holder_id = ?1 OR owner_id = ?1`,
			`UPDATE claims SET ended_by = NULL WHERE ended_by = ?1`,
			`DELETE FROM item_consumers WHERE party_id = ?1`,
			`DELETE FROM cursors WHERE party_id = ?1`,
			`DELETE FROM reads WHERE party_id = ?1`,
			`DELETE FROM channel_parties WHERE party_id = ?1`,
			`DELETE FROM told WHERE party_id = ?1`,
			`DELETE FROM idempotency_keys WHERE party_id = ?1`,
			`UPDATE channels SET created_by = NULL WHERE created_by = ?1`,
			`DELETE FROM parties WHERE id = ?1`,
		} {
			if _, err := t.exec(q, p.id); err != nil {
				return fmt.Errorf("forget %s: %w", name, err)
			}
		}
		return nil
	})
	return out, err
}

// moveReads keeps the read times (channels.go) true to a cursor the
// person moved from from to to: brought back, the rows it passes are
// unread again and lose their times, while those it still covers keep
// theirs; moved on, the move is a read of its own.
func (t *tx) moveReads(channelID, partyID, from, to int64) error {
	if to > from {
		_, err := t.exec(`INSERT INTO reads (channel_id, party_id, upto_seq, read_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (channel_id, party_id, upto_seq) DO NOTHING`, channelID, partyID, to, t.now)
		return err
	}
	if to > 0 {
		// The first move past to read every row up to to: its time
		// stays, at to.
		if _, err := t.exec(`INSERT INTO reads (channel_id, party_id, upto_seq, read_at)
			SELECT channel_id, party_id, ?3, min(read_at) FROM reads WHERE channel_id = ?1 AND party_id = ?2 AND upto_seq > ?3
			GROUP BY channel_id, party_id
			ON CONFLICT (channel_id, party_id, upto_seq) DO NOTHING`, channelID, partyID, to); err != nil {
			return err
		}
	}
	_, err := t.exec(`DELETE FROM reads WHERE channel_id = ? AND party_id = ? AND upto_seq > ?`, channelID, partyID, to)
	return err
}

// CursorResult says where SetCursor moved a cursor.
type CursorResult struct {
	Party   string `json:"party"`
	Channel string `json:"channel"`
	From    int64  `json:"from"`
	To      int64  `json:"to"`
	Newest  int64  `json:"newest"`
	Unread  int    `json:"unread"`
}

// SetCursor puts party's read position in channel at seq, backwards too
// (the tools only ever move it forwards): 0 makes every message unread
// again. seq must be from 0 to the channel's newest.
func (d *DB) SetCursor(ctx context.Context, name, channelName string, seq int64) (CursorResult, error) {
	var out CursorResult
	err := d.exclusive(ctx, func(t *tx) error {
		p, _, err := t.adminParty(name)
		if err != nil {
			return err
		}
		c, err := t.channelByName(channelName)
		var ue *UserError
		if errors.As(err, &ue) {
			return userErrorf("there is no channel named %s — `mcpp-chat parties` lists each party's channels", channelName)
		}
		if err != nil {
			return err
		}
		out = CursorResult{Party: name, Channel: c.name, To: seq}
		if err := t.row(`SELECT coalesce(max(seq), 0) FROM messages WHERE channel_id = ?`, c.id).Scan(&out.Newest); err != nil {
			return err
		}
		if seq < 0 || seq > out.Newest {
			return userErrorf("#%s's messages are numbered 1 to %d — give a position from 0 (everything unread) to %d", c.name, out.Newest, out.Newest)
		}
		if out.From, err = t.cursor(c.id, p.id); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT INTO cursors (channel_id, party_id, last_seq, updated_at) VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (channel_id, party_id) DO UPDATE SET last_seq = excluded.last_seq, updated_at = excluded.updated_at`,
			c.id, p.id, seq, t.now); err != nil {
			return err
		}
		if err := t.moveReads(c.id, p.id, out.From, seq); err != nil {
			return err
		}
		return t.row(`SELECT count(*) FROM messages WHERE channel_id = ? AND is_archived = 0 AND author_id <> ? AND seq > ?`,
			c.id, p.id, seq).Scan(&out.Unread)
	})
	return out, err
}
