// Package text makes peer-written text safe to show: no terminal escapes,
// no control characters. The tools' display and the hook share it, so
// neither imports the other.
package text

import (
	"regexp"
	"strings"
	"sync"
)

// escapes matches terminal escape sequences (CSI, OSC and single-character
// escapes) so that a peer's text can never drive the user's terminal. It
// is compiled on first need, not at every process's start.
var escapes = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-_])`)
})

// Clean removes escape sequences and control characters from message text,
// keeping newlines and tabs.
func Clean(s string) string {
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = escapes().ReplaceAllString(s, "")
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			return -1
		}
		return r
	}, s)
}

// OneLine cleans s, folds it onto one line and cuts it to n runes.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(Clean(s)), " ")
	if r := []rune(s); len(r) > n {
		return strings.TrimSpace(string(r[:n-1])) + "…"
	}
	return s
}
