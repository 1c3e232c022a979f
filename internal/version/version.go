// Package version reads the dotted version numbers the clients we set up
// print (Claude Code, Codex) and orders them, for the checks that tell a
// person their client is older than the one we test with.
package version

import (
	"regexp"
	"strconv"
	"strings"
)

var pattern = regexp.MustCompile(`\b\d+(\.\d+)+\b`)

// In is the first version number in s ("2.1.332 (Claude Code)",
// "codex-cli 0.171.0"); "" when there is none.
func In(s string) string { return pattern.FindString(s) }

// Compare orders dotted numbers numerically: -1, 0 or 1; a missing part
// counts as 0 ("2.1" is "2.1.0").
func Compare(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
