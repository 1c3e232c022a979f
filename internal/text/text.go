// Package text makes peer-written text safe to show (no terminal escapes,
// no control characters) and words counts alike. The tools' display and
// the hook share it, so neither imports the other.
package text

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// escapes matches terminal escape sequences (CSI, OSC and single-character
// escapes) so that a peer's text can never drive the user's terminal. It
// is compiled on first need, not at every process's start.
var escapes = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-_])`)
})

// Clean removes escape sequences and control characters from message text,
// keeping newlines and tabs. It also removes the invisible characters that
// change how text around them reads: bidirectional overrides and isolates
// ("innocent \u202egnp.exe" shows as "innocent exe.png"), marks,
// zero-width and tag characters.
func Clean(s string) string {
	if isClean(s) {
		return s // most text: no scan with a regexp, no copy
	}
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = escapes().ReplaceAllString(s, "")
	}
	return strings.Map(func(r rune) rune {
		if hidden(r) {
			return -1
		}
		return r
	}, s)
}

// isClean reports whether Clean would leave s as it is.
func isClean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if hidden(r) || r == utf8.RuneError {
			return false
		}
		i += n
	}
	return true
}

// hidden reports a character Clean removes: control characters but
// newline and tab, and the invisible formatting characters a peer could
// use to make text read otherwise than it is.
func hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r < 0x061c:
		return false
	}
	for _, span := range invisible {
		if span.lo <= r && r <= span.hi {
			return true
		}
	}
	return false
}

// invisible are the formatting characters Clean removes. The zero-width
// joiner and non-joiner (U+200C, U+200D) stay: scripts and emoji need them,
// and they cannot reorder text.
var invisible = [...]struct{ lo, hi rune }{
	{0x061c, 0x061c},   // Arabic letter mark
	{0x200b, 0x200b},   // zero-width space
	{0x200e, 0x200f},   // left-to-right and right-to-left marks
	{0x2028, 0x202e},   // line and paragraph separators, bidi embeddings and overrides
	{0x2060, 0x206f},   // word joiner, invisible operators, bidi isolates, deprecated format
	{0xfeff, 0xfeff},   // zero-width no-break space
	{0xfff9, 0xfffb},   // interlinear annotation
	{0xe0000, 0xe007f}, // tag characters
}

// OneLine cleans s, folds it onto one line and cuts it to n runes.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(Clean(s)), " ")
	if r := []rune(s); len(r) > n {
		return strings.TrimSpace(string(r[:n-1])) + "…"
	}
	return s
}

// Plural is the word that agrees with n: one, or many ("is"/"are").
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n with the word, plural by a trailing s ("1 item", "3 items"),
// or -ies after a consonant's y ("2 parties"). The tools' display and the
// hook word their counts the same way.
func Count(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if stem, ok := strings.CutSuffix(word, "y"); ok && stem != "" && !strings.ContainsRune("aeiou", rune(stem[len(stem)-1])) {
		return strconv.Itoa(n) + " " + stem + "ies"
	}
	return strconv.Itoa(n) + " " + word + "s"
}
