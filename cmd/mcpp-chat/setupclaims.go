package main

import (
	"fmt"
	"io"

	"github.com/mcpp/mcpp-chat/internal/settings"
)

// The hook that stops an edit of a path another party claimed (hook
// package, claims.go): a PreToolUse entry whose matcher names the edit
// tools, so that no other tool call pays for it. --no-claims leaves it
// out, and with --write takes out one that is there.

// claimsEvent is the event of the edit hook.
const claimsEvent = "PreToolUse"

// claudeEditTools are Claude Code's tools that change files.
const claudeEditTools = "Edit|Write|MultiEdit|NotebookEdit"

// codexEditTools are Codex's: apply_patch, which Codex 0.171 also
// matches as Edit and Write (seen: a group matching only "Edit|Write"
// ran for an apply_patch).
const codexEditTools = "apply_patch|Edit|Write"

// claimsHook is the edit hook as setup hooks writes it.
func claimsHook(in installation) settings.Hook {
	return settings.Hook{Event: claimsEvent, Matcher: claudeEditTools, Command: hookCommand(in, claimsEvent), Timeout: hookTimeout,
		Match: ourHook(in, claimsEvent), Drop: in.noClaims}
}

// printedClaimsHook is the edit hook for setup hooks to print, with its
// note; none with --no-claims.
func printedClaimsHook(notes io.Writer, in installation) []settings.Hook {
	if in.noClaims {
		return nil
	}
	fmt.Fprintln(notes, "# The PreToolUse entry stops an edit of a path another party claimed (chat_claim), saying who")
	fmt.Fprintln(notes, "# holds it; nothing is claimed, it stays silent. --no-claims leaves it out.")
	return []settings.Hook{claimsHook(in)}
}

// codexClaimsHook is the edit hook among Codex's hook groups; none with
// --no-claims.
func codexClaimsHook(in installation) []codexHook {
	if in.noClaims {
		return nil
	}
	return []codexHook{{event: claimsEvent, matcher: codexEditTools, command: hookCommand(in, claimsEvent)}}
}

// checkNoClaims refuses --no-claims where no hook is written.
func checkNoClaims(target string, remove, noClaims bool, stderr io.Writer) (int, bool) {
	switch {
	case !noClaims:
		return 0, true
	case remove:
		fmt.Fprintln(stderr, "mcpp-chat setup: --remove removes every hook of ours, the edit hook with them — run it without --no-claims")
		return exitUsage, false
	case target == "claude" || target == "mcpp":
		fmt.Fprintf(stderr, "mcpp-chat setup: --no-claims belongs to the hooks (setup hooks, setup codex), not to the %s snippet\n", target)
		return exitUsage, false
	}
	return 0, true
}

// checkEditHook is doctor's line for the edit hook in a settings file: not
// a warning when it is missing (--no-claims leaves it out on purpose), but
// what that costs; one that runs more than once is.
func checkEditHook(w io.Writer, file string, n int, env func(string) string) bool {
	switch {
	case n == 0:
		fmt.Fprintf(w, "edit hook:   not installed — an edit of a path another party claimed is not stopped; to add it run: %s setup hooks --write\n", invocationOr(env))
	case n > 1:
		fmt.Fprintf(w, "warning:     %s runs mcpp-chat's %s hook %d times — run: %s setup hooks --write (it keeps one)\n", file, claimsEvent, n, invocationOr(env))
		return false
	default:
		fmt.Fprintln(w, "edit hook:   installed — an edit of a path another party claimed is stopped")
	}
	return true
}
