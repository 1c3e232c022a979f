package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Safe retries (docs/protocol.md). A client that timed out retries the
// call it made; made with an idempotency key, the retry is answered with
// the first call's answer and writes nothing. The key, the call's
// arguments and its answer are kept in the same transaction as what the
// call wrote: either both are stored or neither, so that no crash between
// them can make a retry write twice.

// Keys are kept KeyKeep, and at most KeysKept per party: the newest.
// What a party can make the store hold is bounded by that many answers,
// each within the answer budget.
const (
	KeyKeep  = 7 * 24 * time.Hour
	KeysKept = 1000
	// MaxKeyLength bounds a key (module.yaml's maxLength says the same).
	MaxKeyLength = 128
)

// Keyed names a call made with an idempotency key: who made it, the
// tool, the key and what its arguments hash to (every argument but the
// key).
type Keyed struct {
	Me       Identity
	Tool     string
	Key      string
	ArgsHash string
}

// KeyedAnswer is a call's answer as its client received it: the result's
// JSON and the display text.
type KeyedAnswer struct {
	JSON    string
	Display string
	// At is when the first call was answered (a duplicate's).
	At string
}

// Once runs call as the call k names and keeps its answer under k's key,
// in one transaction: every store call call makes runs inside it. A key
// the party used before for the same tool and arguments is answered with
// that first answer, duplicate true, and call does not run; one used for
// another call is refused. A call that fails keeps no key: a retry runs
// it again.
func (d *DB) Once(ctx context.Context, k Keyed, call func(ctx context.Context) (KeyedAnswer, error)) (ans KeyedAnswer, duplicate bool, err error) {
	if k.Key == "" || utf8.RuneCountInString(k.Key) > MaxKeyLength {
		return KeyedAnswer{}, false, userErrorf("idempotency_key must be 1 to %d characters — pass a shorter key, such as a UUID", MaxKeyLength)
	}
	err = d.update(ctx, func(t *tx) error {
		duplicate = false
		found, err := t.keyedAnswer(k)
		switch {
		case err != nil:
			return err
		case found != nil:
			ans, duplicate = *found, true
			return nil
		}
		inner := &ambient{db: d, t: t}
		if ans, err = call(context.WithValue(ctx, ambientKey{}, inner)); err != nil {
			return err
		}
		return t.keepAnswer(k, ans)
	})
	return ans, duplicate, err
}

// keyedAnswer is the live answer kept under k's key, nil when there is
// none; the same key for another call is refused.
func (t *tx) keyedAnswer(k Keyed) (*KeyedAnswer, error) {
	p, err := t.existingParty(k.Me)
	if errors.Is(err, ErrUnknownParty) {
		return nil, nil // its first call: no key yet
	}
	if err != nil {
		return nil, err
	}
	var tool, hash string
	var created int64
	var a KeyedAnswer
	err = t.row(`SELECT tool, args_hash, answer, display, created_ns FROM idempotency_keys WHERE party_id = ? AND call_key = ?`,
		p.id, k.Key).Scan(&tool, &hash, &a.JSON, &a.Display, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	at := time.Unix(0, created)
	if t.at().Sub(at) >= KeyKeep {
		return nil, nil // expired: keepAnswer drops it
	}
	if tool != k.Tool || hash != k.ArgsHash {
		what := "other arguments"
		if tool != k.Tool {
			what = "another tool (" + tool + ")"
		}
		return nil, userErrorf("idempotency_key %q was used %s for %s — pass a new key for a new call, or the first call's exact arguments to get its answer again", k.Key, ago(t.at().Sub(at)), what)
	}
	a.At = Timestamp(at)
	return &a, nil
}

// keepAnswer stores a's call under k's key and drops the party's keys
// past KeyKeep or beyond the newest KeysKept.
func (t *tx) keepAnswer(k Keyed, a KeyedAnswer) error {
	p, err := t.existingParty(k.Me) // the call made it, if it was new
	if err != nil {
		return fmt.Errorf("find the party to keep its idempotency key: %w", err)
	}
	now := t.at().UnixNano()
	oldest := now - int64(KeyKeep)
	if _, err := t.exec(`DELETE FROM idempotency_keys WHERE party_id = ? AND call_key = ? AND created_ns < ?`, p.id, k.Key, oldest); err != nil {
		return err
	}
	// A plain insert: a call of another process that kept the same key
	// meanwhile makes it fail, and the engine runs this call again, which
	// then finds that call's answer (a team store's retry of a unique
	// violation; on SQLite writing calls run one at a time).
	if _, err := t.exec(`INSERT INTO idempotency_keys (party_id, call_key, tool, args_hash, answer, display, created_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?)`,
		p.id, k.Key, k.Tool, k.ArgsHash, a.JSON, a.Display, now); err != nil {
		return err
	}
	// Both bounds through the (party_id, created_ns) index: the oldest
	// kept is the KeysKept-th newest.
	var nth int64
	err = t.row(`SELECT created_ns FROM idempotency_keys WHERE party_id = ? ORDER BY created_ns DESC LIMIT 1 OFFSET ?`, p.id, KeysKept-1).Scan(&nth)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	default:
		oldest = max(oldest, nth)
	}
	_, err = t.exec(`DELETE FROM idempotency_keys WHERE party_id = ? AND created_ns < ?`, p.id, oldest)
	return err
}

// at is the call's time as a time.
func (t *tx) at() time.Time {
	at, err := time.Parse(time.RFC3339Nano, t.now)
	if err != nil {
		return time.Now()
	}
	return at
}

// ago says how long ago, in words, to the unit that matters.
func ago(d time.Duration) string {
	switch {
	case d < time.Second:
		return "moments ago"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

// ambient is the transaction of a call Once runs: the store calls the
// call makes run inside it rather than in transactions of their own.
type ambient struct {
	db *DB
	t  *tx
}

type ambientKey struct{}

// inAmbient runs fn in the transaction of the call Once is running for
// ctx, if it runs one on d; ok is false otherwise. What fn changed is the
// ambient call's, announced when it commits.
func (d *DB) inAmbient(ctx context.Context, fn func(*tx) error) (ok bool, err error) {
	a, found := ctx.Value(ambientKey{}).(*ambient)
	if !found || a.db != d {
		return false, nil
	}
	t := &tx{et: a.t.et, ctx: ctx, now: a.t.now}
	if err := fn(t); err != nil {
		return true, err
	}
	if t.changed != nil {
		a.t.changed = t.changed
	}
	return true, nil
}

// sameAsk is the newest live ask p raised in c with this title and body
// within the last within — and, when slug is given, a handle made from it
// (slug, or slug-2, … when it was taken) — answered as Ask answers, with
// Duplicate; found is false when there is none. Only live items are
// looked at: the few the channel's item index holds.
func (t *tx) sameAsk(c channel, p party, title, body, slug string, within time.Duration) (out AskResult, found bool, err error) {
	// No ORDER BY: sorting by seq would have the planner walk every live
	// message of the channel; the newest of the few matches is found here.
	rows, err := t.query(`SELECT id, seq, coalesce(slug, ''), status, created_at FROM messages
		WHERE channel_id = ? AND kind = 'ask' AND is_archived = 0 AND status IN ('open', 'ack', 'done')
		  AND author_id = ? AND title = ? AND body = ?`, c.id, p.id, title, body)
	if err != nil {
		return AskResult{}, false, err
	}
	var id int64
	for rows.Next() {
		var m AskResult
		var mid int64
		var created string
		if err := rows.Scan(&mid, &m.Seq, &m.Slug, &m.Status, &created); err != nil {
			rows.Close()
			return AskResult{}, false, err
		}
		at, err := time.Parse(time.RFC3339Nano, created)
		if err == nil && t.at().Sub(at) < within && madeFrom(m.Slug, slug) && m.Seq > out.Seq {
			out, id = m, mid
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || id == 0 {
		return AskResult{}, false, err
	}
	out.Channel, out.Title, out.Duplicate = c.name, title, true
	out.Consumers, out.AwaitingAckFrom = []string{}, []string{}
	// In the order the ask named them, as its own answer listed them.
	rows, err = t.query(`SELECT p.name, ic.acked_at IS NOT NULL FROM item_consumers ic JOIN parties p ON p.id = ic.party_id
		WHERE ic.message_id = ? ORDER BY ic.rowid`, id)
	if err != nil {
		return AskResult{}, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var acked bool
		if err := rows.Scan(&name, &acked); err != nil {
			return AskResult{}, false, err
		}
		out.Consumers = append(out.Consumers, name)
		if !acked && out.Status != "done" {
			out.AwaitingAckFrom = append(out.AwaitingAckFrom, name)
		}
	}
	return out, true, rows.Err()
}

// madeFrom reports whether an item's handle was made from slug as asked
// (freeSlug's slug, slug-2, slug-3, …); any handle when none was asked.
func madeFrom(handle, slug string) bool {
	if slug == "" {
		return true
	}
	rest, ok := strings.CutPrefix(handle, slug)
	if !ok {
		return false
	}
	n, isNumber := strings.CutPrefix(rest, "-")
	return rest == "" || isNumber && allDigits(n)
}
