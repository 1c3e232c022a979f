package postgres

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// statement is a query in PostgreSQL's dialect with the order its
// arguments go in: order[k] is the protocol's argument that becomes $k+1,
// nil when they go as given.
type statement struct {
	text  string
	order []int
}

// rewrite is query in PostgreSQL's dialect.
func (e *Engine) rewrite(query string) statement {
	if pg, ok := e.dialect.Load(query); ok {
		return pg.(statement)
	}
	text, order := toPostgres(query)
	pg := statement{text, order}
	e.dialect.Store(query, pg)
	return pg
}

// args are the protocol's arguments in the statement's order.
func (s statement) args(args []any) []any {
	if s.order == nil {
		return args
	}
	out := make([]any, len(s.order))
	for k, i := range s.order {
		if i < len(args) {
			out[k] = args[i]
		}
	}
	return out
}

// toPostgres rewrites the few SQLite forms this package uses that
// PostgreSQL spells otherwise: parameters (? and ?N become $N), the
// two-argument min and max (LEAST, GREATEST), and a JSON array of ids as
// an array.
func toPostgres(query string) (string, []int) {
	// An id list as = ANY(array), which the planner takes to an index
	// even in the generic plan it reuses; an IN over a set-returning
	// function it guesses at a hundred rows and hashes a scan of the table.
	query = strings.ReplaceAll(query, "IN (SELECT value FROM json_each(?))", "= ANY(ARRAY(SELECT json_array_elements_text(?::json)::bigint))")
	query = scalarMinMax(query)
	return numberParams(query)
}

// numberParams turns ? and ?N outside string literals into $N. SQLite
// lets a statement skip a number (?2 without ?1); PostgreSQL must know
// every parameter's type and refuses one no statement uses, so the numbers
// used are made dense, and order says which argument each one takes.
func numberParams(query string) (string, []int) {
	type param struct{ at, end, n int }
	var params []param
	highest, quoted := 0, false
	for i := 0; i < len(query); i++ {
		c := query[i]
		if c == '\'' {
			quoted = !quoted
		}
		if c != '?' || quoted {
			continue
		}
		j := i + 1
		for j < len(query) && query[j] >= '0' && query[j] <= '9' {
			j++
		}
		n := highest + 1 // a bare ? is one past the highest so far, as in SQLite
		if j > i+1 {
			n, _ = strconv.Atoi(query[i+1 : j])
		}
		highest = max(highest, n)
		params = append(params, param{i, j, n})
		i = j - 1
	}
	used := map[int]bool{}
	for _, p := range params {
		used[p.n] = true
	}
	dense := make(map[int]int, len(used))
	var order []int
	for n := 1; n <= highest; n++ {
		if used[n] {
			order = append(order, n-1)
			dense[n] = len(order)
		}
	}
	var b strings.Builder
	last := 0
	for _, p := range params {
		b.WriteString(query[last:p.at])
		fmt.Fprintf(&b, "$%d", dense[p.n])
		last = p.end
	}
	b.WriteString(query[last:])
	if len(order) == highest {
		order = nil // 1..highest all used: the arguments go as given
	}
	return b.String(), order
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
func Rewrite(query string) string {
	text, _ := toPostgres(query)
	return text
}

// Statements are the queries the handle's calls ran, as PostgreSQL got
// them (tests check each one's plan).
func (e *Engine) Statements() []string {
	var out []string
	e.dialect.Range(func(_, pg any) bool {
		out = append(out, pg.(statement).text)
		return true
	})
	sort.Strings(out)
	return out
}
