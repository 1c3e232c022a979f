package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mcpp/mcpp-chat/internal/store"
)

func doctor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("doctor", "doctor [--workspace DIR] [--settings FILE]\n\nPrints every resolved path, the schema version and the party for the folder, and\nwhether the Claude Code hooks in the settings file would load.", stderr)
	workspace := fs.String("workspace", "", "start folder for identity (default: $MCPP_CHAT_WORKSPACE, $CLAUDE_PROJECT_DIR, cwd)")
	settingsFile := fs.String("settings", "", "Claude Code settings file whose hooks to check (default ~/.claude/settings.json)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	in, err := resolve(getenv, *workspace)
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
	fmt.Fprintf(stdout, "database:    %s\n", in.paths.DB)
	if mode, open := readableByOthers(in.paths.DB); open {
		fmt.Fprintf(stdout, "warning:     the database is readable by other users (mode %04o) — run: chmod 600 %s\n", mode, in.paths.DB)
	}
	fmt.Fprintf(stdout, "tick file:   %s\n", tick)
	fmt.Fprintf(stdout, "backups:     %s\n", in.paths.Backups)
	fmt.Fprintf(stdout, "party root:  %s (found by %s)\n", in.party.Root, in.party.Via)
	code := exitOK
	if file := claudeSettings(getenv, *settingsFile); file != "" && !checkHooks(stdout, file, *settingsFile != "") {
		code = exitError
	}
	db, err := store.Open(ctx, in.paths.DB)
	if err != nil {
		fmt.Fprintf(stdout, "schema:      unavailable: %v\n", err)
		fmt.Fprintf(stdout, "party:       %s (as it would be named)\n", in.party.Name)
		return exitError
	}
	defer db.Close()
	version, _ := db.Version(ctx)
	fmt.Fprintf(stdout, "schema:      version %d (this binary knows up to %d)\n", version, store.SchemaVersion())
	name, known, err := db.PartyName(ctx, in.identity())
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "party:       unavailable: %v\n", err)
		code = exitError
	case !known:
		fmt.Fprintf(stdout, "party:       %s (not seen yet)\n", name)
	default:
		fmt.Fprintf(stdout, "party:       %s\n", name)
	}
	return code
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
