package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/text"
)

func doctor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("doctor", doctorSynopsis, stderr)
	workspace := fs.String("workspace", "", "start folder for identity (default: $MCPP_CHAT_WORKSPACE, $CLAUDE_PROJECT_DIR, cwd)")
	settingsFile := fs.String("settings", "", "Claude Code settings file whose hooks to check (default ~/.claude/settings.json)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	in, err := locate(getenv, *workspace)
	if err != nil {
		fmt.Fprintf(stdout, "config:      %s\n", in.paths.Config)
		fmt.Fprintf(stderr, "mcpp-chat doctor: %v\n", err)
		return exitError
	}
	tick := in.paths.Tick
	if tick == "" {
		tick = "(disabled: chat.tick_file is \"\")"
	}
	configNote := ""
	if _, err := os.Stat(in.paths.Config); err != nil {
		configNote = " (not present: built-in defaults)"
	}
	fmt.Fprintf(stdout, "module dir:  %s\n", in.paths.ModuleDir)
	fmt.Fprintf(stdout, "config:      %s%s\n", in.paths.Config, configNote)
	code := exitOK
	switch {
	case in.onHub():
		fmt.Fprintf(stdout, "store:       %s (a team hub: this machine is a member)\n", in.where())
	case in.onPostgres():
		fmt.Fprintf(stdout, "store:       %s (a team store on PostgreSQL)\n", in.where())
	default:
		code = doctorDatabaseFile(stdout, in, tick)
	}
	fmt.Fprintf(stdout, "party root:  %s (found by %s)\n", text.Clean(in.party.Root), in.party.Via)
	fmt.Fprintln(stdout, escalationLine(in.cfg))
	exe, hook := thisInstall()
	b := newBuilds(ctx)
	want := hookWant{hook: hook, store: in.paths.Store, env: getenv, builds: b}
	for _, ok := range []bool{
		checkCheckout(stdout, in.paths),
		checkPermissions(stdout, in.paths, exe, hook),
		checkTracked(ctx, stdout, in.paths),
		checkVersions(ctx, stdout, hook),
		checkRegistrations(stdout, in, exe, getenv, b),
		claudeSettings(getenv, *settingsFile) == "" || checkHooks(stdout, claudeSettings(getenv, *settingsFile), *settingsFile != "", want),
		checkCodexHooks(stdout, getenv, want),
	} {
		if !ok {
			code = exitError
		}
	}
	if in.onHub() {
		if !doctorHub(ctx, stdout, in) {
			code = exitError
		}
		return code
	}
	// doctor only looks: it opens the store read-only, and a missing
	// database (a mistyped MCPP_CHAT_DB) is reported, not created; a team
	// store is never migrated.
	db, err := in.openReadOnly(ctx)
	noChat := errors.Is(err, store.ErrNoDatabase)
	if in.onPostgres() {
		if err != nil && !noChat {
			fmt.Fprintf(stdout, "reachable:   no — %v\n", err)
			return exitError
		}
		fmt.Fprintf(stdout, "reachable:   yes\n")
	}
	switch {
	case noChat && in.onPostgres():
		fmt.Fprintf(stdout, "schema:      none yet — the first chat call makes it (or mcpp-chat migrate copies a database into it)\n")
		fmt.Fprintf(stdout, "party:       %s (not seen yet)\n", text.Clean(in.party.Name))
		return code
	case noChat && in.paths.Moved != "":
		fmt.Fprintf(stdout, "schema:      no database at %s — the chat calls refuse to start a new one there (the warning above says why)\n", in.paths.DB)
		return exitError
	case noChat:
		fmt.Fprintf(stdout, "schema:      no database at %s yet — the first chat call creates it%s\n", in.paths.DB, mistypedHint(getenv))
		fmt.Fprintf(stdout, "party:       %s (not seen yet)\n", text.Clean(in.party.Name))
		return code
	case err != nil:
		fmt.Fprintf(stdout, "schema:      unavailable: %v\n", err)
		fmt.Fprintf(stdout, "party:       %s (as it would be named)\n", text.Clean(in.party.Name))
		return exitError
	}
	defer db.Close()
	version, err := db.Version(ctx)
	if err != nil {
		fmt.Fprintf(stdout, "schema:      unavailable: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "schema:      version %d (this binary knows up to %d)\n", version, store.SchemaVersion())
	if version > store.SchemaVersion() {
		fmt.Fprintf(stdout, "warning:     the database is newer than this mcpp-chat, which refuses to write it — upgrade mcpp-chat\n")
		code = exitError
	}
	name, known, err := db.NameFor(ctx, in.identity())
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "party:       unavailable: %v\n", err)
		code = exitError
	case !known:
		fmt.Fprintf(stdout, "party:       %s (not seen yet)\n", text.Clean(name))
	default:
		fmt.Fprintf(stdout, "party:       %s\n", text.Clean(name))
		if l, err := db.ClaimsOf(ctx, in.identity()); err == nil {
			printPartyClaims(stdout, l)
		}
	}
	return code
}

const doctorSynopsis = `doctor [--workspace DIR] [--settings FILE]

Prints every resolved path, the schema version and the party for the folder, and
checks what is easy to get wrong, each warning with its fix: folders and backups other
users could write or read; the hook binary's build; where the server is registered
(~/.claude.json, the repository's .mcp.json, ~/.codex/config.toml) and whether that
runs this binary on this database; whether the Claude Code hooks in the settings file
would load and run this install's hook on this database, and whether the idle wake is
among them; the same for the hooks in Codex's config.toml, and whether an idle Codex
session can be woken here (with what the doorbell last did); a token or cache of
messages git tracks. Exits 1 on any warning.
Reads only: it changes nothing.`

// thisInstall is this binary and the hook binary beside it, symlinks
// resolved.
func thisInstall() (exe, hook string) {
	exe, err := executable()
	if err != nil {
		return "", ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return exe, filepath.Join(filepath.Dir(exe), "mcpp-chat-hook")
}

// holder is a process holding a file open.
type holder struct {
	pid  int
	name string
}

// mistypedHint points at MCPP_CHAT_DB when it chose the path: a database
// that is not there may be a typo.
func mistypedHint(getenv func(string) string) string {
	if getenv("MCPP_CHAT_DB") == "" {
		return ""
	}
	return "; if you expected one there, check MCPP_CHAT_DB"
}

// readableByOthers reports a database file other users may read: every
// channel is in it, and the chat is meant for one user's sessions.
func readableByOthers(path string) (os.FileMode, bool) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	return info.Mode().Perm(), info.Mode().Perm()&0o044 != 0
}

// doctorDatabaseFile shows the database file and what lies beside it,
// warning of other users' access and of processes writing to a file that
// is gone.
func doctorDatabaseFile(stdout io.Writer, in install, tick string) int {
	code := exitOK
	fmt.Fprintf(stdout, "store:       the database file (sqlite)\n")
	fmt.Fprintf(stdout, "database:    %s\n", in.paths.DB)
	if mode, open := readableByOthers(in.paths.DB); open {
		fmt.Fprintf(stdout, "warning:     the database is readable by other users (mode %04o) — run: chmod 600 %s\n", mode, in.paths.DB)
	}
	for _, h := range staleHolders(in.paths.DB) {
		fmt.Fprintf(stdout, "warning:     process %d (%s) still has the database open although the file was deleted or replaced: what it writes is lost (an mcpp-chat server refuses to write) — restart it (a session: restart it, or reconnect its chat server)\n", h.pid, text.Clean(h.name))
		code = exitError
	}
	fmt.Fprintf(stdout, "tick file:   %s\n", tick)
	fmt.Fprintf(stdout, "backups:     %s\n", in.paths.Backups)
	return code
}
