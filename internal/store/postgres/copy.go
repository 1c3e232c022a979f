package postgres

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcpp/mcpp-chat/internal/text"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// copyTables are the chat's tables in an order that inserts every row
// after the rows it references, with their columns. channel_parties and
// item_consumers carry SQLite's rowid, which orders their rows as they
// were added and is a column on PostgreSQL.
// one and many name a table's rows for a person. A table of a later
// schema (optional) is copied when the source has it, and named only when
// it held rows.
var copyTables = []struct {
	name, columns, one, many string
	optional                 bool
}{
	{"parties", "id, name, workspace_path, os_user, about, first_seen, last_seen", "party", "parties", false},
	{"channels", "id, name, about, created_by, created_at, is_closed", "channel", "channels", false},
	{"channel_parties", "channel_id, party_id, joined_at, left_at, rowid", "seat in a channel", "seats in channels", false},
	{"messages", "id, channel_id, seq, kind, parent_id, slug, title, body, ref, author_id, status, is_archived, created_at, updated_at", "message", "messages", false},
	{"item_consumers", "message_id, party_id, acked_at, prune_ok_at, rowid", "consumer of an item", "consumers of items", false},
	{"cursors", "channel_id, party_id, last_seq, updated_at", "read position", "read positions", false},
	{"item_due", "message_id, due_at, stage, next_at, set_at", "due time", "due times", true},
	// Copied with its ids: restartIdentities moves the identity past them.
	{"item_stages", "id, message_id, stage, due_at, planned_at, at, parties, outcome", "escalation stage", "escalation stages", true},
	{"told", "message_id, party_id, told_at, via", "telling", "tellings", true},
	{"idempotency_keys", "party_id, call_key, tool, args_hash, answer, display, created_ns", "kept answer", "kept answers", true},
	{"claims", "id, kind, owner_id, pattern, holder_id, exclusive, reason, item_id, ttl_seconds, claimed_at, expires_at, renew_until, ended_at, ended_how, ended_by", "claim", "claims", true},
	{"claim_waiters", "claim_id, party_id, asked_at", "claim waiter", "claim waiters", true},
	{"mentions", "message_id, party_id, via", "mention", "mentions", true},
	{"attention", "channel_id, party_id, mode, updated_at", "attention setting", "attention settings", true},
	{"chains", "message_id, chain, hop", "chained post", "chained posts", true},
	{"reads", "channel_id, party_id, upto_seq, read_at", "read time", "read times", true},
}

// copyBatch is how many rows one INSERT carries.
const copyBatch = 200

// Copied is what a copy wrote.
type Copied struct {
	// Rows counts the rows, by table.
	Rows map[string]int
	// Replaced counts the text fields whose NUL characters, or bytes that
	// are not UTF-8, became U+FFFD: SQLite keeps them, PostgreSQL refuses
	// them, and the chat's tools refuse them in new text.
	Replaced int
	// Tokens counts the hub's tokens the copy added (CopyFrom's also).
	Tokens int
}

// String is the rows, by table, in words: "2 parties, 1 channel, …".
func (c Copied) String() string {
	var parts []string
	for _, t := range copyTables {
		n, noun := c.Rows[t.name], t.many
		if t.optional && n == 0 {
			continue
		}
		if n == 1 {
			noun = t.one
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, noun))
	}
	if c.Tokens > 0 {
		parts = append(parts, text.Count(c.Tokens, "hub token"))
	}
	return strings.Join(parts, ", ")
}

// CopyFrom copies everything in the database src reads — parties,
// channels, seats, messages, items and their consumers, cursors, and what
// later schemas added: due times, tellings, kept answers, claims,
// mentions, attention and chains — into
// the team store e, keeping every id, seq and time, in one transaction of
// e: a copy that fails leaves e as it was. A store that already holds a
// party or a channel is refused: a copy never merges two chats. Only a
// team store is a copy's target, which the method's receiver says.
//
// also, if not nil, writes in the same transaction after the tables (the
// hub's tokens) and says how many tokens it added.
func (e *Engine) CopyFrom(ctx context.Context, src engine.Engine, also func(engine.Tx) (int, error)) (Copied, error) {
	var copied Copied
	_, err := src.Run(ctx, engine.Read, func(from engine.Tx) (*engine.Change, error) {
		return e.Run(ctx, engine.Exclusive, func(to engine.Tx) (*engine.Change, error) {
			copied = Copied{Rows: map[string]int{}}
			if err := refuseNonEmpty(to, e.where); err != nil {
				return nil, err
			}
			for _, table := range copyTables {
				if table.optional && !hasTable(from, table.name) {
					continue
				}
				n, replaced, err := copyTable(from, to, table.name, table.columns)
				if err != nil {
					return nil, fmt.Errorf("copy %s: %w", table.name, err)
				}
				copied.Rows[table.name] = n
				copied.Replaced += replaced
			}
			if err := restartIdentities(to); err != nil {
				return nil, err
			}
			if also == nil {
				return nil, nil
			}
			n, err := also(to)
			copied.Tokens = n
			return nil, err
		})
	})
	return copied, err
}

// hasTable reports whether the source database (a SQLite file) has table:
// one made before the schema step that adds it has not.
func hasTable(from engine.Tx, table string) bool {
	var n int
	err := from.Row(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n)
	return err == nil && n > 0
}

func refuseNonEmpty(t engine.Tx, where string) error {
	var parties, channels int
	if err := t.Row(`SELECT (SELECT count(*) FROM parties), (SELECT count(*) FROM channels)`).Scan(&parties, &channels); err != nil {
		return err
	}
	if parties+channels > 0 {
		return engine.UserErrorf("%s already holds %s and %s — a copy goes only into an empty store (nothing was written); give an empty database", where, text.Count(parties, "party"), text.Count(channels, "channel"))
	}
	return nil
}

// copyTable copies one table in batches, in the source's row order, and
// says how many text fields it had to make storable.
func copyTable(from, to engine.Tx, table, columns string) (n, replaced int, err error) {
	rows, err := from.Query(`SELECT ` + columns + ` FROM ` + table + ` ORDER BY rowid`)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	width := len(strings.Split(columns, ","))
	var batch []any
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		one := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
		values := strings.TrimSuffix(strings.Repeat(one+", ", len(batch)/width), ", ")
		_, err := to.Exec(`INSERT INTO `+table+` (`+columns+`) VALUES `+values, batch...)
		batch = batch[:0]
		return err
	}
	for rows.Next() {
		row := make([]any, width)
		ptrs := make([]any, width)
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return n, replaced, err
		}
		for i, v := range row {
			if text, ok := v.(string); ok {
				if fixed, changed := storable(text); changed {
					row[i] = fixed
					replaced++
				}
			}
		}
		batch = append(batch, row...)
		n++
		if n%copyBatch == 0 {
			if err := flush(); err != nil {
				return n, replaced, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return n, replaced, err
	}
	return n, replaced, flush()
}

// storable is text as PostgreSQL can store it: a NUL character and every
// byte that is not UTF-8 become U+FFFD, the replacement character, so the
// rest of the text still arrives and the gap shows.
func storable(text string) (string, bool) {
	if utf8.ValidString(text) && !strings.ContainsRune(text, 0) {
		return text, false
	}
	return strings.ReplaceAll(strings.ToValidUTF8(text, "\uFFFD"), "\x00", "\uFFFD"), true
}

// restartIdentities moves each identity column past the ids the copy
// wrote, so that the next row gets a new one.
func restartIdentities(t engine.Tx) error {
	for _, c := range []struct{ table, column string }{
		{"parties", "id"}, {"channels", "id"}, {"messages", "id"},
		{"channel_parties", "rowid"}, {"item_consumers", "rowid"}, {"item_stages", "id"},
		{"claims", "id"},
	} {
		_, err := t.Exec(fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('%s', '%s'), coalesce((SELECT max(%s) FROM %s), 0) + 1, false)`,
			c.table, c.column, c.column, c.table))
		if err != nil {
			return err
		}
	}
	return nil
}
