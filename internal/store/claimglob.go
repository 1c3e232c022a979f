package store

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A claim's pattern is a glob over '/'-separated names: * is any run of
// characters but '/', ? one such character, and ** a whole segment
// standing for any number of segments (none included). Everything else
// is itself: a file named [slug] is claimed as written. A pattern holds
// what it names and everything beneath it, so that a folder's name claims
// its files. Two patterns conflict when some path is held by both; both
// questions are answered on the patterns' automata, never by listing
// paths.

// maxPattern bounds a pattern in bytes: a claim is kept, compared with
// every other and matched at every edit, so a client cannot make it long.
const maxPattern = 256

// glob is a compiled pattern: a small automaton whose states are numbered
// from 0, the start. A path is held when it ends in accept (the pattern
// itself) or beneath (anything below it).
type glob struct {
	eps     [][]int // ε moves
	steps   [][]step
	accept  int
	beneath int
}

// class is what one step of a glob reads.
type class uint8

const (
	oneRune  class = iota // the rune r
	notSlash              // any rune but '/'
	anyRune               // any rune
)

type step struct {
	class class
	r     rune
	to    int
}

// compileGlob makes the automaton of a pattern checkPattern accepted.
func compileGlob(pattern string) *glob {
	g := &glob{}
	state := g.add()
	segs := strings.Split(pattern, "/")
	for i, seg := range segs {
		// A ** before this segment read its own '/' (each segment it
		// stands for ends in one), so that a/**/b holds a/b.
		if i > 0 && segs[i-1] != "**" {
			state = g.then(state, oneRune, '/')
		}
		if seg == "**" {
			if i == len(segs)-1 {
				loop := g.add()
				g.epsTo(state, loop)
				g.stepTo(loop, anyRune, 0, loop)
				state = loop
				continue
			}
			// (segment '/')*, coming back to where it started.
			in := g.add()
			g.stepTo(state, notSlash, 0, in)
			g.stepTo(in, notSlash, 0, in)
			g.stepTo(in, oneRune, '/', state)
			continue
		}
		for _, r := range seg {
			switch r {
			case '*':
				loop := g.add()
				g.epsTo(state, loop)
				g.stepTo(loop, notSlash, 0, loop)
				state = loop
			case '?':
				state = g.then(state, notSlash, 0)
			default:
				state = g.then(state, oneRune, r)
			}
		}
	}
	g.accept = state
	g.beneath = g.then(state, oneRune, '/')
	g.stepTo(g.beneath, anyRune, 0, g.beneath)
	return g
}

func (g *glob) add() int {
	g.eps = append(g.eps, nil)
	g.steps = append(g.steps, nil)
	return len(g.eps) - 1
}

// then is a new state reached from from by one step.
func (g *glob) then(from int, c class, r rune) int {
	to := g.add()
	g.stepTo(from, c, r, to)
	return to
}

func (g *glob) epsTo(from, to int) { g.eps[from] = append(g.eps[from], to) }

func (g *glob) stepTo(from int, c class, r rune, to int) {
	g.steps[from] = append(g.steps[from], step{class: c, r: r, to: to})
}

func (g *glob) accepts(state int) bool { return state == g.accept || state == g.beneath }

// closure adds to set every state reachable from its states by ε moves.
func (g *glob) closure(set map[int]bool) {
	stack := make([]int, 0, len(set))
	for s := range set {
		stack = append(stack, s)
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, to := range g.eps[s] {
			if !set[to] {
				set[to] = true
				stack = append(stack, to)
			}
		}
	}
}

func (c step) reads(r rune) bool {
	switch c.class {
	case oneRune:
		return c.r == r
	case notSlash:
		return r != '/'
	}
	return true
}

// match reports whether the glob holds path.
func (g *glob) match(path string) bool {
	cur := map[int]bool{0: true}
	g.closure(cur)
	for _, r := range path {
		next := map[int]bool{}
		for s := range cur {
			for _, st := range g.steps[s] {
				if st.reads(r) {
					next[st.to] = true
				}
			}
		}
		if len(next) == 0 {
			return false
		}
		g.closure(next)
		cur = next
	}
	for s := range cur {
		if g.accepts(s) {
			return true
		}
	}
	return false
}

// meet reports whether one rune can be read by both steps.
func meet(a, b step) bool {
	switch {
	case a.class == oneRune && b.class == oneRune:
		return a.r == b.r
	case a.class == oneRune:
		return b.reads(a.r)
	case b.class == oneRune:
		return a.reads(b.r)
	}
	return true // notSlash and anyRune both read any letter
}

// overlaps reports whether some path is held by both globs: whether the
// pair of automata, run side by side, can reach a pair of accepting
// states.
func (g *glob) overlaps(h *glob) bool {
	type pair struct{ a, b int }
	seen := map[pair]bool{{0, 0}: true}
	queue := []pair{{0, 0}}
	push := func(p pair) {
		if !seen[p] {
			seen[p] = true
			queue = append(queue, p)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if g.accepts(p.a) && h.accepts(p.b) {
			return true
		}
		for _, to := range g.eps[p.a] {
			push(pair{to, p.b})
		}
		for _, to := range h.eps[p.b] {
			push(pair{p.a, to})
		}
		for _, x := range g.steps[p.a] {
			for _, y := range h.steps[p.b] {
				if meet(x, y) {
					push(pair{x.to, y.to})
				}
			}
		}
	}
	return false
}

// checkPattern cleans a pattern (surrounding blanks, a leading ./, a
// trailing /) and refuses what is not a relative pattern of names: what
// names no place, or more than a claim may hold.
func checkPattern(raw string) (string, error) {
	p := strings.TrimSpace(raw)
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	p = strings.TrimSuffix(p, "/")
	switch {
	case p == "":
		return "", fmt.Errorf("it names nothing")
	case len(p) > maxPattern:
		return "", fmt.Errorf("it is %d bytes long, more than %d", len(p), maxPattern)
	case !utf8.ValidString(p):
		return "", fmt.Errorf("it is not UTF-8 text")
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return "", fmt.Errorf("it holds a control character")
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "":
			return "", fmt.Errorf("it has an empty name between two /")
		case seg == "." || seg == "..":
			return "", fmt.Errorf("it has a %s in it", seg)
		case strings.Contains(seg, "**") && seg != "**":
			return "", fmt.Errorf("** stands for whole names only (a/**/b), not inside one (%s)", seg)
		}
	}
	return p, nil
}

// Holds reports whether the claim holds path — for a path claim, a path
// relative to its owner's repository, '/'-separated.
func (c Claim) Holds(path string) bool { return compileGlob(c.Pattern).match(path) }
