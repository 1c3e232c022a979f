package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/codexconfig"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/redact"
	"github.com/mcpp/mcpp-chat/internal/settings"
)

// Codex (0.171 and later) runs lifecycle hooks as Claude Code does — the
// same events, payloads and output shapes — so the same hook binary serves
// it. What setup codex prints, and --write merges into Codex's
// config.toml, is one table per thing: the server, the hooks feature flag
// and one matcher group per hook. Codex's own TOML form of the hooks keeps
// everything in the one file Codex users already edit.

// codexHooksFeature is the feature flag that turns Codex's hooks on. Codex
// 0.171 has it on by default and calls the older name, codex_hooks,
// deprecated (it says so at every start); earlier versions had it off.
const codexHooksFeature = "hooks"

// codexHookEvents are the events Codex runs our hook on: Claude Code's,
// and SessionEnd, at which the hook notes that Codex let a thread go, so
// that the doorbell (codexwake.go) does not ring it.
var codexHookEvents = append(slices.Clone(hookEvents), "SessionEnd")

// codexTables are the tables of ours in a Codex config: the server, the
// feature flag (a key of [features]) and one hook group per event.
type codexTables struct {
	server   [][2]string // the server table's keys, their values raw
	env      [][2]string // the server's env: our variables, their values raw
	features [][2]string // our keys in [features]
	hooks    []codexHook
}

type codexHook struct {
	event   string
	command string
	// matcher names the tools that run it (the edit hook's); "" for all.
	matcher string
}

func codexTablesFor(in installation) codexTables {
	t := codexTables{
		server: [][2]string{
			{"command", codexconfig.Quote(in.exe)},
			{"args", `["serve"]`},
			{"default_tools_approval_mode", `"approve"`},
		},
		features: [][2]string{{codexHooksFeature, "true"}},
	}
	for _, v := range in.env {
		t.env = append(t.env, [2]string{v.Key, codexconfig.Quote(v.Value)})
	}
	for _, ev := range codexHookEvents {
		t.hooks = append(t.hooks, codexHook{event: ev, command: hookCommand(in, ev)})
	}
	t.hooks = append(t.hooks, codexClaimsHook(in)...)
	return t
}

// hooksLine is a hook group's one line: the handler as an inline table.
func (h codexHook) hooksLine() string {
	return codexconfig.InlineTable([][2]string{
		{"type", `"command"`}, {"command", codexconfig.Quote(h.command)}, {"timeout", fmt.Sprint(hookTimeout)},
	})
}

func printCodex(w io.Writer, in installation) {
	t := codexTablesFor(in)
	fmt.Fprintln(w, "# Codex: add to ~/.codex/config.toml (the folder Codex starts in is the party), or let")
	fmt.Fprintln(w, "# `mcpp-chat setup codex --write` merge it in (it keeps everything else and writes a .bak)")
	fmt.Fprintln(w, "[mcp_servers.chat]")
	for _, kv := range t.server {
		if kv[0] == "default_tools_approval_mode" {
			fmt.Fprintln(w, "# The chat tools touch only the chat database. Without this line `codex exec` (approval")
			fmt.Fprintln(w, "# policy \"never\") refuses every chat call as one that needs approval.")
		}
		fmt.Fprintf(w, "%s = %s\n", kv[0], kv[1])
	}
	switch {
	case len(t.env) > 0:
		fmt.Fprintln(w, "# Codex passes a server only HOME, LANG, LOGNAME, PATH, TMPDIR, USER and this env:")
		fmt.Fprintln(w, "# without it the server would not find this install's chat.")
		fmt.Fprintf(w, "env = %s\n", codexconfig.InlineTable(t.env))
	case in.problem != "":
		fmt.Fprintf(w, "# env = { MCPP_CHAT_DB = \"/path/to/chat.db\" }   (unknown until the config is fixed: %s)\n", in.problem)
	case config.IsPostgres(in.chat.Store):
		fmt.Fprintf(w, "# No env: the server finds the team store %s through this install's config.yaml\n", redact.URL(in.chat.Store))
		fmt.Fprintln(w, "# (storage.url), as every client does; a MCPP_CHAT_DB here would be a chat of its own.")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "# Codex's lifecycle hooks (Codex 0.171 or later): the session is told what waits on its")
	fmt.Fprintln(w, "# repository when it starts and at each prompt, and a turn goes on while a peer waits on it.")
	fmt.Fprintln(w, "# SessionStart and SessionEnd also name the session's thread to the running server, which")
	fmt.Fprintln(w, "# then wakes the session when it sits idle and a peer waits on it (`codex queue`, Linux).")
	fmt.Fprintln(w, "# Codex runs new hooks only once you trust them: it asks at its next start (\"Hooks need")
	fmt.Fprintln(w, "# review\"), or see /hooks.")
	if !fileExists(in.hook) {
		fmt.Fprintf(w, "# note: %s is not built yet — run `make build` in %s\n", in.hook, filepath.Dir(filepath.Dir(in.exe)))
	}
	fmt.Fprintln(w, "[features]")
	for _, kv := range t.features {
		fmt.Fprintf(w, "%s = %s\n", kv[0], kv[1])
	}
	for _, h := range t.hooks {
		fmt.Fprintln(w)
		fmt.Fprintln(w, codexconfig.Header([]string{"hooks", h.event}, true))
		if h.matcher != "" {
			fmt.Fprintf(w, "matcher = %s\n", codexconfig.Quote(h.matcher))
		}
		fmt.Fprintf(w, "hooks = [%s]\n", h.hooksLine())
	}
}

// codexDir is Codex's folder: $CODEX_HOME, else ~/.codex; "" without a
// home folder.
func codexDir(getenv func(string) string) string {
	if dir := getenv("CODEX_HOME"); dir != "" {
		return dir
	}
	if home := homeDir(getenv); home != "" {
		return filepath.Join(home, ".codex")
	}
	return ""
}

// codexChange is one thing --write or --remove did to the config.
type codexChange struct {
	what, action, detail string
}

func writeCodex(in installation, getenv func(string) string, stdout, stderr io.Writer) int {
	if !fileExists(in.hook) {
		fmt.Fprintf(stderr, "mcpp-chat setup: the hook binary %s is missing — run `make build` in %s first; nothing was written\n", in.hook, filepath.Dir(filepath.Dir(in.exe)))
		return exitError
	}
	file := codexConfigFile(getenv)
	if file == "" {
		fmt.Fprintln(stderr, "mcpp-chat setup: cannot find your home folder — set CODEX_HOME to Codex's folder")
		return exitUsage
	}
	var e *codexEdit
	backup, err := settings.EditFile(file, true, func(old []byte) ([]byte, bool, error) {
		var err error
		e, err = mergeCodex(in, old)
		if err != nil {
			return nil, false, err
		}
		return e.out, false, nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat setup: %v\n", err)
		return exitError
	}
	wrote := reportCodex(stdout, e)
	reportWrite(stdout, file, backup, wrote, "already has the server, the feature flag and every hook")
	if wrote {
		fmt.Fprintln(stdout, "Codex runs new or changed hooks only once you trust them: start `codex` in a terminal and choose")
		fmt.Fprintln(stdout, "\"Trust all and continue\" when it says the hooks need review (or review them with /hooks).")
	}
	wake, _ := codexWake(getenv, map[string]int{"SessionStart": 1, "SessionEnd": 1})
	fmt.Fprintln(stdout, "Waking idle Codex sessions: "+wake+".")
	return exitOK
}

func removeCodex(in installation, getenv func(string) string, stdout, stderr io.Writer) int {
	file := codexConfigFile(getenv)
	if file == "" {
		fmt.Fprintln(stderr, "mcpp-chat setup: cannot find your home folder — set CODEX_HOME to Codex's folder")
		return exitUsage
	}
	e := &codexEdit{}
	var emptied bool
	backup, err := settings.EditFile(file, false, func(old []byte) ([]byte, bool, error) {
		var err error
		if e, err = unmergeCodex(in, old); err != nil {
			return nil, false, err
		}
		emptied = len(e.changes) > 0 && strings.TrimSpace(strings.TrimPrefix(string(e.out), "\ufeff")) == ""
		return e.out, emptied, nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat setup: %v\n", err)
		return exitError
	}
	reportCodex(stdout, e)
	if emptied {
		fmt.Fprintf(stdout, "removed %s: it held nothing but mcpp-chat's tables (its last version is in %s)\n", file, backup)
		return exitOK
	}
	reportWrite(stdout, file, backup, len(e.changes) > 0, "has nothing of mcpp-chat's")
	return exitOK
}

// reportCodex prints the changes, then what was left as the person has it
// and what that means; it reports whether anything changed.
func reportCodex(w io.Writer, e *codexEdit) bool {
	for _, c := range e.changes {
		fmt.Fprintf(w, "%-22s %s", c.what, c.action)
		if c.detail != "" {
			fmt.Fprintf(w, ": %s", c.detail)
		}
		fmt.Fprintln(w)
	}
	for _, n := range e.notes {
		fmt.Fprintf(w, "left as it is: %s\n", n)
	}
	return len(e.changes) > 0
}

// checkCodexHooks says which of our hooks Codex's config.toml holds and
// warns when they would not run this install's hook on its database, or
// would not run at all (the feature turned off, a hook twice). Nothing is
// said where Codex has no config. It returns false on a warning.
func checkCodexHooks(w io.Writer, getenv func(string) string, want hookWant) bool {
	file := codexConfigFile(getenv)
	data, err := os.ReadFile(file)
	if file == "" || err != nil {
		return true
	}
	ok := true
	var events []string
	count := map[string]int{}
	for _, b := range codexconfig.Parse(data) {
		if b.Name() == "features" && !b.Array {
			for _, key := range []string{codexHooksFeature, "codex_hooks"} {
				if v, _ := b.Value(key); v == "false" {
					fmt.Fprintf(w, "warning:     %s turns Codex's hooks off ([features] %s = false), so mcpp-chat's hooks do not run — set it to true if you want them (setup leaves your choice as it is)\n", file, key)
					ok = false
				}
			}
		}
		ev := ourHookGroup(b)
		if ev == "" {
			continue
		}
		if count[ev]++; count[ev] == 1 {
			events = append(events, ev)
		}
		raw, _ := b.Value("hooks")
		cmd, _ := codexconfig.String(codexconfig.Tables(raw)[0]["command"])
		for _, problem := range hookProblems(parseHookLine(cmd), want) {
			fmt.Fprintf(w, "warning:     %s [[hooks.%s]]: %s\n", file, ev, strings.ReplaceAll(problem, "setup hooks --write", "setup codex --write"))
			ok = false
		}
	}
	if len(events) == 0 {
		fmt.Fprintf(w, "codex hooks: none in %s — a Codex session notices a peer only when its model calls a chat tool; run: mcpp-chat setup codex --write\n", file)
		return checkCodexWake(w, getenv, count) && ok
	}
	slices.Sort(events)
	fmt.Fprintf(w, "codex hooks: %s in %s (Codex runs them once you trust them: it asks at its start, or see /hooks)\n", strings.Join(events, ", "), file)
	for _, ev := range codexHookEvents {
		switch n := count[ev]; {
		case n == 0:
			fmt.Fprintf(w, "warning:     %s has no mcpp-chat %s hook — run: mcpp-chat setup codex --write\n", file, ev)
			ok = false
		case n > 1:
			fmt.Fprintf(w, "warning:     %s runs mcpp-chat's %s hook %d times — run: mcpp-chat setup codex --write (it keeps one)\n", file, ev, n)
			ok = false
		}
	}
	return checkCodexWake(w, getenv, count) && ok
}

// codexConfigFile is Codex's config.toml, "" without a home folder.
func codexConfigFile(getenv func(string) string) string {
	dir := codexDir(getenv)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "config.toml")
}
