// Package codexwake is the Codex doorbell: it wakes an idle interactive
// Codex session when a peer waits on its party, the way the idle wake
// wakes Claude Code's.
//
// No Codex hook can start a turn. Codex 0.171 can: `codex queue --thread
// <id> --message <text>` queues a message for a session, and the
// interactive `codex` showing that thread takes it as a new turn of its own
// as soon as it is idle — after a running turn, never steered into it,
// the person's half-typed draft left as it is. The pieces:
//
//   - The hook, run at Codex's SessionStart, records the thread (its id is
//     the payload's session_id), CODEX_HOME, Codex's version and binary,
//     under the Codex process it runs under (the client) and the party:
//     a small file beside the hook's other state, never the chat's
//     database. SessionEnd marks the thread ended.
//   - The party's `serve`, which the same Codex process starts, finds that
//     record through its own parent chain, and rings (Bell.Look) when
//     something waits on the party: once per thread until the party reads,
//     with a fixed short line that names who waits and how to look, never
//     a peer's words.
//   - It never rings a thread nobody sees: Codex keeps a thread loaded, and
//     would run a queued turn in it, for a minute after its terminal
//     interface quit or moved to another thread.
package codexwake

import (
	"regexp"

	"github.com/mcpp/mcpp-chat/internal/version"
)

// Tested is the Codex version the doorbell is tested with (the Makefile's
// CODEX_VERSION; a test keeps the two the same). `codex queue` and the
// shared background server that turns a queued message into a turn of an
// interactive session are this version's; an older Codex is not rung.
const Tested = "0.171.0"

// VersionIn is the first version number in s ("codex-cli 0.171.0").
func VersionIn(s string) string { return version.In(s) }

// Older reports a version known to be older than Tested; "" is not known.
func Older(v string) bool {
	return v != "" && version.Compare(v, Tested) < 0
}

// releasePattern finds the version in the path of the binary Codex's
// background server runs: $CODEX_HOME/packages/app-server-daemon/releases/
// 0.171.0-x86_64-unknown-linux-musl/bin/codex.
var releasePattern = regexp.MustCompile(`/releases/(\d+(?:\.\d+)+)-[^/]*/bin/codex[^/]*$`)

// versionFromPath is the version a Codex binary's path names, or "".
func versionFromPath(exe string) string {
	if m := releasePattern.FindStringSubmatch(exe); m != nil {
		return m[1]
	}
	return ""
}
