package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// pgSearchText is what a team store's search looks in: the same body,
// title and slug as the SQLite index, titles and slugs weighing more. The
// expression is the one idx_messages_search (pg/schema.sql) indexes.
const pgSearchText = `setweight(to_tsvector('simple', coalesce(m.title, '') || ' ' || coalesce(m.slug, '')), 'A') || to_tsvector('simple', m.body)`

// pgSearchTimeout bounds each statement of a search on a team store: a
// word most messages of a long history hold is ranked in every one of
// them, and rather than hold a connection and the server's time for as
// long as that takes, the search stops and the person is told to narrow
// it. (A variable for the test that stops one.)
var pgSearchTimeout = 10 * time.Second

// pgSearchHeld, when a test sets it, runs at the start of each search's
// read on a team store, its connection in hand: the test holds searches
// there.
var pgSearchHeld func(context.Context)

// pgRankChars is how much of a body ranking reads. Ranking needs each
// match's text vector, which the index does not give back: made from whole
// 64 KiB bodies that was seconds for a few hundred matches. A message's
// title, slug and opening say what it is about.
const pgRankChars = 8192

// pgRankText is pgSearchText with the body cut to its first pgRankChars
// characters; matching still reads all of it (idx_messages_search).
var pgRankText = strings.Replace(pgSearchText, "m.body", fmt.Sprintf("left(m.body, %d)", pgRankChars), 1)

// searchPostgres is Search on a team store: PostgreSQL's own full-text
// search, the same words in the same scope, ranked by ts_rank (ties to the
// newer message), each hit's passage marked as on SQLite. It reads in a
// READ ONLY transaction of the pool and takes no lock (searchread.go).
func searchPostgres(ctx context.Context, src reader, userQuery string, scope []int64, a SearchArgs) (SearchResult, error) {
	out := SearchResult{Query: a.Query, Hits: []Hit{}}
	match, args, err := tsQuery(userQuery)
	if err != nil {
		return out, err
	}
	if scope != nil && len(scope) == 0 {
		return out, nil
	}
	limit := a.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	matched, from := pgMatches(match, scope, a.Archived)
	err = src.read(ctx, func(t *tx) error {
		if pgSearchHeld != nil {
			pgSearchHeld(ctx)
		}
		if err := pgSearchSettings(t); err != nil {
			return err
		}
		if err := t.row(matched+`SELECT count(*)`+from, args...).Scan(&out.Total); err != nil {
			return err
		}
		ids, err := t.ids(matched+`SELECT m.id`+from+
			fmt.Sprintf(` ORDER BY ts_rank(%s, %s) DESC, m.id DESC LIMIT %d OFFSET %d`, pgRankText, match, limit, max(a.Skip, 0)), args...)
		if err != nil || len(ids) == 0 {
			return err
		}
		page, err := t.headlines(match, args, ids)
		if err != nil {
			return err
		}
		out.Hits, err = t.describe(page)
		return err
	})
	if sqlState(err) == "57014" && ctx.Err() == nil { // query_canceled: the statement_timeout
		return out, userErrorf("the search took longer than %v and was stopped — narrow it: add a word, put words in \"quotes\" as a phrase, or search one channel", pgSearchTimeout)
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
		fmt.Sprintf(`SET LOCAL statement_timeout = %d`, pgSearchTimeout.Milliseconds()),
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

// ids runs a query of one column of ids.
func (t *tx) ids(query string, args ...any) ([]int64, error) {
	return scanIDs(t.query(query, args...))
}

// headlines marks the matching passage of each of a page's hits, in the
// page's order: made for the page alone, after ranking, never for every
// match. PostgreSQL marks every match in the title, body and slug, and the
// passage is cut here as on SQLite (passage), so both engines show a hit
// alike.
func (t *tx) headlines(match string, args []any, ids []int64) ([]ranked, error) {
	mark := func(column string) string {
		return fmt.Sprintf(`ts_headline('simple', %s, %s, 'StartSel=`+MarkStart+`, StopSel=`+MarkEnd+`, HighlightAll=true')`, column, match)
	}
	rows, err := t.query(fmt.Sprintf(`SELECT m.id, %s, %s, %s FROM messages m WHERE m.id = ANY(?%d::bigint[])`,
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
		snippets[id] = passage(title, body, slug)
	}
	page := make([]ranked, len(ids))
	for i, id := range ids {
		page[i] = ranked{id: id, snippet: snippets[id]}
	}
	return page, rows.Err()
}

// tsQuery is the search a person typed as a PostgreSQL text query, with
// the same rules as on SQLite (searchTerms). Each term is a parameter,
// never SQL.
func tsQuery(q string) (string, []any, error) {
	terms, err := searchTerms(q)
	if err != nil {
		return "", nil, err
	}
	parts := make([]string, len(terms))
	args := make([]any, len(terms))
	for i, t := range terms {
		args[i] = t.text
		switch n := i + 1; {
		case t.prefix && !t.phrase():
			// The last word's lexeme as a prefix: to_tsquery would read
			// the person's punctuation as its own syntax.
			parts[i] = fmt.Sprintf(`to_tsquery('simple', quote_literal(lower(?%d)) || ':*')`, n)
		case t.phrase():
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
