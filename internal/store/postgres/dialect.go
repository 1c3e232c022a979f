package postgres

import (
	"fmt"
	"strings"

	"sort"
)

// rewrite is query in PostgreSQL's dialect.
func (e *Engine) rewrite(query string) string {
	if pg, ok := e.dialect.Load(query); ok {
		return pg.(string)
	}
	pg := toPostgres(query)
	e.dialect.Store(query, pg)
	return pg
}

// toPostgres rewrites the few SQLite forms this package uses that
// PostgreSQL spells otherwise: parameters (? and ?N become $N), the
// two-argument min and max (LEAST, GREATEST), and a JSON array of ids as
// an array.
func toPostgres(query string) string {
	// An id list as = ANY(array), which the planner takes to an index
	// even in the generic plan it reuses; an IN over a set-returning
	// function it guesses at a hundred rows and hashes a scan of the table.
	query = strings.ReplaceAll(query, "IN (SELECT value FROM json_each(?))", "= ANY(ARRAY(SELECT json_array_elements_text(?::json)::bigint))")
	query = scalarMinMax(query)
	return numberParams(query)
}

// numberParams turns ? and ?N outside string literals into $N.
func numberParams(query string) string {
	var b strings.Builder
	next, quoted := 1, false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + query[i+1:j])
				i = j - 1
			} else {
				fmt.Fprintf(&b, "$%d", next)
				next++
			}
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// scalarMinMax renames min(a, b) and max(a, b) — SQLite's scalar forms,
// told from the aggregates by a comma at their own level — to LEAST and
// GREATEST.
func scalarMinMax(query string) string {
	lower := strings.ToLower(query)
	var b strings.Builder
	last := 0
	for i := 0; i+4 <= len(query); i++ {
		name := lower[i : i+4]
		if name != "min(" && name != "max(" || i > 0 && isIdent(query[i-1]) {
			continue
		}
		if !hasTopLevelComma(query[i+4:]) {
			continue
		}
		b.WriteString(query[last:i])
		b.WriteString(map[string]string{"min(": "LEAST(", "max(": "GREATEST("}[name])
		last = i + 4
	}
	b.WriteString(query[last:])
	return b.String()
}

// hasTopLevelComma reports a comma before the parenthesis that closes the
// call whose arguments rest begins with.
func hasTopLevelComma(rest string) bool {
	depth := 0
	for _, c := range rest {
		switch c {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return false
			}
			depth--
		case ',':
			if depth == 0 {
				return true
			}
		}
	}
	return false
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Rewrite is query, written in SQLite's dialect as the protocol writes
// it, in PostgreSQL's: what this engine runs (a test that writes under the
// protocol rewrites its statements so).
func Rewrite(query string) string { return toPostgres(query) }

// Statements are the queries the handle's calls ran, as PostgreSQL got
// them (tests check each one's plan).
func (e *Engine) Statements() []string {
	var out []string
	e.dialect.Range(func(_, pg any) bool {
		out = append(out, pg.(string))
		return true
	})
	sort.Strings(out)
	return out
}
