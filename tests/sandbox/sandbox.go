// Package sandbox gives the end-to-end tests and the benchmark driver the
// environment of a child process that sees no user install: nothing of a
// developer's own mcpp-chat, Claude Code or home folder reaches it.
package sandbox

import (
	"os"
	"strings"
)

// Env is this process's environment without MCPP_*, CLAUDE_*, XDG_* and
// HOME, plus extra ("NAME=value" entries).
func Env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "MCPP_") || strings.HasPrefix(name, "CLAUDE_") || strings.HasPrefix(name, "XDG_") || name == "HOME" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}
