package store

import (
	"context"
	"fmt"
	"strings"
)

// pgSearchText is what a team store's search looks in: the same body,
// title and slug as the SQLite index, titles and slugs weighing more. The
// expression is the one idx_messages_search (pg/schema.sql) indexes.
const pgSearchText = `setweight(to_tsvector('simple', coalesce(m.title, '') || ' ' || coalesce(m.slug, '')), 'A') || to_tsvector('simple', m.body)`

// searchPostgres is Search on a team store: PostgreSQL's own full-text
// search, the same words in the same scope, ranked by ts_rank (ties to the
// newer message), each hit's passage marked as on SQLite.
func searchPostgres(ctx context.Context, src reader, userQuery string, scope []int64, a SearchArgs) (SearchResult, error) {
	out := SearchResult{Query: a.Query, Hits: []Hit{}}
	match, args, err := tsQuery(userQuery)
	if err != nil {
		return out, err
	}
	if scope != nil && len(scope) == 0 {
		return out, nil
	}
	where := ` FROM messages m WHERE (` + pgSearchText + `) @@ (` + match + `)`
	if scope != nil {
		where += fmt.Sprintf(` AND m.channel_id = ANY(ARRAY[%s]::bigint[])`, joinIDs(scope))
	}
	if a.Archived != nil {
		where += fmt.Sprintf(` AND m.is_archived = %d`, map[bool]int{false: 0, true: 1}[*a.Archived])
	}
	limit := a.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	err = src.read(ctx, func(t *tx) error {
		if err := t.row(`SELECT count(*)`+where, args...).Scan(&out.Total); err != nil {
			return err
		}
		rows, err := t.query(`SELECT m.id, ts_headline('simple', coalesce(m.title, '') || ' ' || m.body, `+match+`,
				'StartSel=`+MarkStart+`, StopSel=`+MarkEnd+`, MaxWords=30, MinWords=12, HighlightAll=false')`+where+
			fmt.Sprintf(` ORDER BY ts_rank(%s, %s) DESC, m.id DESC LIMIT %d OFFSET %d`, pgSearchText, match, limit, max(a.Skip, 0)), args...)
		if err != nil {
			return err
		}
		var page []ranked
		for rows.Next() {
			var r ranked
			if err := rows.Scan(&r.id, &r.snippet); err != nil {
				rows.Close()
				return err
			}
			page = append(page, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		out.Hits, err = t.describe(page)
		return err
	})
	return out, err
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
