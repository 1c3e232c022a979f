package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/mcpp/mcpp-chat/hook"
	"github.com/mcpp/mcpp-chat/internal/codexwake"
	"github.com/mcpp/mcpp-chat/internal/text"
)

// What doctor and setup codex say of the Codex doorbell: whether an idle
// Codex session can be woken here, and what it last did.

// codexCLI is the Codex CLI found on PATH.
type codexCLI struct {
	path    string // "" when none was found
	version string // "" when it did not say
}

// findCodex looks for codex on PATH and asks its version.
func findCodex(getenv func(string) string) codexCLI {
	path := lookPath("codex", getenv("PATH"))
	if path == "" {
		return codexCLI{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), versionWait)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, "--version").Output()
	return codexCLI{path: path, version: codexwake.VersionIn(string(out))}
}

// codexWake says whether idle Codex sessions are woken here, given which
// of our hook events Codex's config runs; ok is false for what a person
// should fix.
func codexWake(getenv func(string) string, events map[string]int) (line string, ok bool) {
	switch {
	case !codexwake.Supported:
		return "not on this system: mcpp-chat tells a thread somebody sees from one Codex keeps loaded through /proc (Linux) — a Codex session here notices a peer at its next prompt", true
	case events["SessionStart"] == 0:
		return "off: Codex's config lacks the SessionStart hook that names each session's thread — run: mcpp-chat setup codex --write", true
	}
	c := findCodex(getenv)
	switch {
	case c.path == "":
		line = "on with Codex " + codexwake.Tested + " or later (no codex on PATH to ask its version): an idle Codex session is woken when a peer waits on it"
	case c.version == "":
		line = fmt.Sprintf("%s --version did not say its version: idle Codex sessions are woken with Codex %s or later", c.path, codexwake.Tested)
	case codexwake.Older(c.version):
		return fmt.Sprintf("off: Codex %s (%s) is older than %s, the version the doorbell is tested with — update Codex to have idle sessions woken", c.version, c.path, codexwake.Tested), false
	default:
		line = fmt.Sprintf("on (Codex %s): an idle Codex session is woken when a peer waits on it — once, with one line, until it reads (codex queue)", c.version)
	}
	if events["SessionEnd"] == 0 {
		line += "; without the SessionEnd hook it knows less surely which threads Codex let go — run: mcpp-chat setup codex --write"
	}
	return line, true
}

// checkCodexWake prints the doorbell's state and what it last did for each
// party with a Codex process running; it returns false on a warning.
func checkCodexWake(w io.Writer, getenv func(string) string, events map[string]int) bool {
	line, ok := codexWake(getenv, events)
	label := "codex wake:  "
	if !ok {
		label = "warning:     codex wake "
	}
	fmt.Fprintln(w, label+line)
	if !codexwake.Supported {
		return ok
	}
	dir := hook.StateDir(getenv)
	for _, path := range codexwake.Records(dir) {
		r, err := codexwake.Read(path)
		if err != nil || !codexwake.Alive(r.Client.Process) || len(r.Threads) == 0 {
			continue
		}
		fmt.Fprintf(w, "             %s: %s under Codex process %d; last look %s: %s\n",
			filepath.Base(r.Party), text.Count(len(r.Threads), "thread"), r.Client.PID, lookedAgo(r.LastAt), r.Last)
		for _, t := range r.Threads {
			if t.Bell.Refused != "" {
				fmt.Fprintf(w, "             thread %s: its last ring was refused: %s\n", t.ID, text.OneLine(t.Bell.Refused, 300))
			}
		}
	}
	return ok
}

// lookedAgo is how long ago the doorbell looked.
func lookedAgo(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}
