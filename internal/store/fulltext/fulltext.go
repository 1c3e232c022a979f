// Package fulltext is what the engines' searches share: how what a person
// types is read as terms, and how a hit's passage is cut and marked, so
// that a search reads and shows alike on SQLite and PostgreSQL.
package fulltext

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// Snippets mark the words a search matched with these two characters, so
// that each display marks them its own way (bold on a terminal, <mark> on
// the page) after cleaning and escaping the text around them.
const (
	MarkStart = "\x02"
	MarkEnd   = "\x03"
)

// The most a search looks for at once, the same on both engines. A query
// of 5,000 prefixes took PostgreSQL's parser past its stack ("stack depth
// limit exceeded"); a few words say what a person looks for, and a pasted
// page is better told to pick them than searched for every word in it.
const (
	MaxTerms = 64
	MaxChars = 1000
)

// Term is one thing every hit must hold: a word, a "quoted phrase"
// (text with spaces) or, with Prefix, the start of a word.
type Term struct {
	Text   string
	Prefix bool
}

// Phrase reports a term of several words.
func (t Term) Phrase() bool { return strings.ContainsFunc(t.Text, unicode.IsSpace) }

// Terms reads what a person types: every word must appear, "quoted
// words" make a phrase, a word ending in * is a prefix. A term with no
// letter or digit in it finds nothing and is dropped. A search that can
// find nothing, or asks too much, is refused with a sentence.
func Terms(q string) ([]Term, error) {
	if strings.ContainsRune(q, 0) {
		// The page passes on what a person typed in its address. FTS5
		// ends the query at a NUL (an unterminated string), and
		// PostgreSQL refuses one: either way a driver's error.
		return nil, engine.UserErrorf("the search contains a NUL character (\\u0000) — remove it and search again")
	}
	if n := utf8.RuneCountInString(q); n > MaxChars {
		return nil, engine.UserErrorf("the search is %d characters long, and at most %d are looked for — search for the few words that say most", n, MaxChars)
	}
	var terms []Term
	for _, t := range split(q) {
		prefix := strings.HasSuffix(t, "*")
		t = strings.TrimRight(t, "*")
		if strings.ContainsFunc(t, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			terms = append(terms, Term{Text: t, Prefix: prefix})
		}
	}
	switch {
	case len(terms) == 0:
		return nil, engine.UserErrorf("the search has no word to look for — give at least one word of the message, title or slug")
	case len(terms) > MaxTerms:
		return nil, engine.UserErrorf("the search has %d words, and at most %d are looked for at once — search for the few that say most (a \"quoted phrase\" counts as one)", len(terms), MaxTerms)
	}
	return terms, nil
}

// split splits on white space, keeping "quoted words" together.
func split(q string) []string {
	var out []string
	for i, part := range strings.Split(q, `"`) {
		if i%2 == 1 { // inside quotes
			if p := strings.TrimSpace(part); p != "" {
				out = append(out, p)
			}
			continue
		}
		out = append(out, strings.Fields(part)...)
	}
	return out
}

// snippetWords is how many words a passage holds around its first match.
const snippetWords = 16

// Passage is the first marked column's words around its first match: a
// title that matched says most, then the body, then the slug (columns in
// that order).
func Passage(title, body, slug string) string {
	for _, c := range []string{title, body, slug} {
		if strings.Contains(c, MarkStart) {
			return window(c, snippetWords)
		}
	}
	return window(body, snippetWords) // matched, but not in words we marked
}

// window keeps n words of text: a few before the first marked one and the
// rest after it, with … where it cut.
func window(text string, n int) string {
	words := strings.Fields(text)
	first := 0
	for i, w := range words {
		if strings.Contains(w, MarkStart) {
			first = i
			break
		}
	}
	from := max(0, first-n/4)
	to := min(len(words), from+n)
	out := strings.Join(words[from:to], " ")
	// A cut may leave a mark open or closed alone: balance it.
	if strings.Count(out, MarkStart) > strings.Count(out, MarkEnd) {
		out += MarkEnd
	}
	if from > 0 {
		out = "…" + out
	}
	if to < len(words) {
		out += "…"
	}
	return out
}
