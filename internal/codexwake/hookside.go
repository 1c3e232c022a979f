package codexwake

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"
)

// What the hook records. It runs on every prompt, so it does as little as
// it can: SessionStart and SessionEnd only, a file under a lock, and
// Codex's --version once per client (the binary of Codex's background
// server names its version in its path, so even that is rare).

// versionWait bounds `codex --version` in a hook: the native binary
// answers in a few milliseconds.
const versionWait = 400 * time.Millisecond

// Start records that a terminal shows thread t of party under client c
// (Codex's SessionStart; t.ID is the payload's session_id). A thread the
// record had is kept with its doorbell: it may be a resumed one.
func Start(ctx context.Context, dir string, c Client, party string, t Thread) error {
	if t.Exe == "" {
		t.Exe = c.Exe
	}
	if t.CodexHome == "" {
		t.CodexHome = c.CodexHome
	}
	if t.Version == "" {
		t.Version = versionOf(ctx, dir, c, party, t.Exe)
	}
	return Update(ctx, dir, c, party, func(r *Record) { r.StartThread(t) })
}

// End records that Codex let thread id go (its SessionEnd).
func End(ctx context.Context, dir string, c Client, party, id string) error {
	return Update(ctx, dir, c, party, func(r *Record) { r.EndThread(id) })
}

// versionOf is exe's version: named by its path, recorded before, or
// asked.
func versionOf(ctx context.Context, dir string, c Client, party, exe string) string {
	if v := versionFromPath(exe); v != "" {
		return v
	}
	if r, err := Read(RecordPath(dir, c.Process, party)); err == nil && r.Client.Process == c.Process {
		if v := r.VersionOf(exe); v != "" {
			return v
		}
	}
	ctx, cancel := context.WithTimeout(ctx, versionWait)
	defer cancel()
	out, _ := exec.CommandContext(ctx, exe, "--version").Output()
	return VersionIn(string(out))
}

// transcriptPattern is where Codex keeps a thread's transcript:
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-….jsonl.
var transcriptPattern = regexp.MustCompile(`^(.+)/sessions/\d{4}/\d{2}/\d{2}/rollout-[^/]+\.jsonl$`)

// HomeOf is the Codex folder a hook payload's transcript_path lies in,
// or "": the hook inherits the environment of Codex's background server,
// which need not be the terminal's.
func HomeOf(transcript string) string {
	if m := transcriptPattern.FindStringSubmatch(filepath.ToSlash(transcript)); m != nil {
		return filepath.FromSlash(m[1])
	}
	return ""
}
