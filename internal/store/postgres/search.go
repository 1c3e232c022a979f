package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"

	"github.com/mcpp/mcpp-chat/internal/store/fulltext"

	"errors"
)

// pgSearchText is what a team store's search looks in: the same body,
// title and slug as the SQLite index, titles and slugs weighing more. The
// expression is the one idx_messages_search (pg/schema.sql) indexes.
const pgSearchText = `setweight(to_tsvector('simple', coalesce(m.title, '') || ' ' || coalesce(m.slug, '')), 'A') || to_tsvector('simple', m.body)`

// SearchTimeout bounds each statement of a search on a team store: a
// word most messages of a long history hold is ranked in every one of
// them, and rather than hold a connection and the server's time for as
// long as that takes, the search stops and the person is told to narrow
// it. (A variable for the test that stops one.)
var SearchTimeout = 10 * time.Second

// pgRankChars is how much of a body ranking reads. Ranking needs each
// match's text vector, which the index does not give back: made from whole
// 64 KiB bodies that was seconds for a few hundred matches. A message's
// title, slug and opening say what it is about.
const pgRankChars = 8192

// pgRankText is pgSearchText with the body cut to its first pgRankChars
// characters; matching still reads all of it (idx_messages_search).
var pgRankText = strings.Replace(pgSearchText, "m.body", fmt.Sprintf("left(m.body, %d)", pgRankChars), 1)

// defaultSearchLimit is the page size when a search names none.
const defaultSearchLimit = 20

// SearchHeld, when a test sets it, runs at the start of each search's
// read, its connection in hand: the test holds searches there.
var SearchHeld func(context.Context)

// Search is engine.Searcher on a team store: PostgreSQL's own full-text
// search, the same words in the same scope, ranked by ts_rank (ties to the
// newer message), each hit's passage marked as on SQLite. It reads in a
// READ ONLY transaction of the pool and takes no lock.
func (e *Engine) Search(ctx context.Context, q engine.Query) (engine.Ranked, error) {
	out := engine.Ranked{Hits: []engine.Hit{}}
	match, args, err := tsQuery(q.Text)
	if err != nil {
		return out, err
	}
	if q.Scope != nil && len(q.Scope) == 0 {
		return out, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	matched, from := pgMatches(match, q.Scope, q.Archived)
	err = e.read(ctx, func(et engine.Tx) (*engine.Change, error) {
		t := et.(*tx)
		if SearchHeld != nil {
			SearchHeld(ctx)
		}
		if err := pgSearchSettings(t); err != nil {
			return nil, err
		}
		if err := t.Row(matched+`SELECT count(*)`+from, args...).Scan(&out.Total); err != nil {
			return nil, err
		}
		ids, err := engine.IDs(t.Query(matched+`SELECT m.id`+from+
			fmt.Sprintf(` ORDER BY ts_rank(%s, %s) DESC, m.id DESC LIMIT %d OFFSET %d`, pgRankText, match, limit, max(q.Skip, 0)), args...))
		if err != nil || len(ids) == 0 {
			return nil, err
		}
		out.Hits, err = t.headlines(match, args, ids)
		return nil, err
	})
	if sqlState(err) == "57014" && ctx.Err() == nil { // query_canceled: the statement_timeout
		return out, engine.UserErrorf("the search took longer than %v and was stopped — narrow it: add a word, put words in \"quotes\" as a phrase, or search one channel", SearchTimeout)
	}
	if err != nil {
		var ue *engine.UserError
		if !errors.As(err, &ue) {
			err = e.Describe(err)
		}
	}
	return out, err
}

// pgSearchSettings bounds the search's statements in time and has them
// find the matches through idx_messages_search. The planner prices
// to_tsvector at its nominal cost, not by the length of the body, and so
// may prefer a scan that makes every row's vector — whole bodies, each
// time — to the index that holds them; a search has nothing else to scan
// for.
func pgSearchSettings(t *tx) error {
	for _, set := range []string{
		fmt.Sprintf(`SET LOCAL statement_timeout = %d`, SearchTimeout.Milliseconds()),
		`SET LOCAL enable_seqscan = off`,
	} {
		if _, err := t.Tx.ExecContext(t.ctx, set); err != nil {
			return err
		}
	}
	return nil
}

// pgMatches is a search's statement around its select list: the matches,
// found by the text alone (a materialized CTE, so that the index on the
// text is what finds them, whatever the scope), and the scope they are
// kept to.
func pgMatches(match string, scope []int64, archived *bool) (matched, from string) {
	matched = `WITH matched AS MATERIALIZED (SELECT m.id FROM messages m WHERE (` + pgSearchText + `) @@ (` + match + `)) `
	from = ` FROM matched JOIN messages m USING (id) WHERE true`
	if scope != nil {
		from += fmt.Sprintf(` AND m.channel_id = ANY(ARRAY[%s]::bigint[])`, joinIDs(scope))
	}
	if archived != nil {
		from += fmt.Sprintf(` AND m.is_archived = %d`, map[bool]int{false: 0, true: 1}[*archived])
	}
	return matched, from
}

// headlines marks the matching passage of each of a page's hits, in the
// page's order: made for the page alone, after ranking, never for every
// match. PostgreSQL marks every match in the title, body and slug, and the
// passage is cut here as on SQLite (passage), so both engines show a hit
// alike.
func (t *tx) headlines(match string, args []any, ids []int64) ([]engine.Hit, error) {
	mark := func(column string) string {
		return fmt.Sprintf(`ts_headline('simple', %s, %s, 'StartSel=`+fulltext.MarkStart+`, StopSel=`+fulltext.MarkEnd+`, HighlightAll=true')`, column, match)
	}
	rows, err := t.Query(fmt.Sprintf(`SELECT m.id, %s, %s, %s FROM messages m WHERE m.id = ANY(?%d::bigint[])`,
		mark("coalesce(m.title, '')"), mark("m.body"), mark("coalesce(m.slug, '')"), len(args)+1), append(slices.Clip(args), ids)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	snippets := make(map[int64]string, len(ids))
	for rows.Next() {
		var id int64
		var title, body, slug string
		if err := rows.Scan(&id, &title, &body, &slug); err != nil {
			return nil, err
		}
		snippets[id] = fulltext.Passage(title, body, slug)
	}
	page := make([]engine.Hit, len(ids))
	for i, id := range ids {
		page[i] = engine.Hit{ID: id, Snippet: snippets[id]}
	}
	return page, rows.Err()
}

// tsQuery is the search a person typed as a PostgreSQL text query, with
// the same rules as on SQLite (fulltext.Terms). Each term is a parameter,
// never SQL.
func tsQuery(q string) (string, []any, error) {
	terms, err := fulltext.Terms(q)
	if err != nil {
		return "", nil, err
	}
	parts := make([]string, len(terms))
	args := make([]any, len(terms))
	for i, t := range terms {
		args[i] = t.Text
		switch n := i + 1; {
		case t.Prefix && !t.Phrase():
			// The last word's lexeme as a prefix: to_tsquery would read
			// the person's punctuation as its own syntax.
			parts[i] = fmt.Sprintf(`to_tsquery('simple', quote_literal(lower(?%d)) || ':*')`, n)
		case t.Phrase():
			parts[i] = fmt.Sprintf(`phraseto_tsquery('simple', ?%d)`, n)
		default:
			parts[i] = fmt.Sprintf(`plainto_tsquery('simple', ?%d)`, n)
		}
	}
	return strings.Join(parts, " && "), args, nil
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}
