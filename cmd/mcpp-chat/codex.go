package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
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
	for _, ev := range hookEvents {
		t.hooks = append(t.hooks, codexHook{event: ev, command: hookCommand(in, ev)})
	}
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
	var changes []codexChange
	backup, err := settings.EditFile(file, true, func(old []byte) ([]byte, bool, error) {
		data, cs, err := mergeCodex(old, codexTablesFor(in))
		changes = cs
		return data, false, err
	})
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat setup: %v\n", err)
		return exitError
	}
	wrote := reportCodex(stdout, changes)
	reportWrite(stdout, file, backup, wrote, "already has the server, the feature flag and every hook")
	if wrote {
		fmt.Fprintln(stdout, "Codex runs new or changed hooks only once you trust them: start `codex` in a terminal and choose")
		fmt.Fprintln(stdout, "\"Trust all and continue\" when it says the hooks need review (or review them with /hooks).")
	}
	return exitOK
}

func removeCodex(in installation, getenv func(string) string, stdout, stderr io.Writer) int {
	file := codexConfigFile(getenv)
	if file == "" {
		fmt.Fprintln(stderr, "mcpp-chat setup: cannot find your home folder — set CODEX_HOME to Codex's folder")
		return exitUsage
	}
	var changes []codexChange
	var emptied bool
	backup, err := settings.EditFile(file, false, func(old []byte) ([]byte, bool, error) {
		data, cs := unmergeCodex(old)
		changes, emptied = cs, len(cs) > 0 && strings.TrimSpace(string(data)) == ""
		return data, emptied, nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat setup: %v\n", err)
		return exitError
	}
	reportCodex(stdout, changes)
	if emptied {
		fmt.Fprintf(stdout, "removed %s: it held nothing but mcpp-chat's tables (its last version is in %s)\n", file, backup)
		return exitOK
	}
	reportWrite(stdout, file, backup, len(changes) > 0, "has nothing of mcpp-chat's")
	return exitOK
}

// reportCodex prints the changes; it reports whether there were any.
func reportCodex(w io.Writer, changes []codexChange) bool {
	for _, c := range changes {
		fmt.Fprintf(w, "%-22s %s", c.what, c.action)
		if c.detail != "" {
			fmt.Fprintf(w, ": %s", c.detail)
		}
		fmt.Fprintln(w)
	}
	return len(changes) > 0
}

// inlineRoot matches a root key that holds one of our tables inline,
// which a table header of the same name would contradict.
var inlineRoot = regexp.MustCompile(`^\s*(features|hooks|mcp_servers)\s*[.=]`)

// mergeCodex merges our tables into a Codex config: a table of ours
// already there (for another path or database) is updated in place, key
// by key, keeping the user's other keys; one per thing, further copies
// removed; what is missing is added at the end. Everything else keeps its
// bytes. It refuses a config whose form it cannot extend safely.
func mergeCodex(data []byte, t codexTables) ([]byte, []codexChange, error) {
	blocks := codexconfig.Parse(data)
	for _, line := range blocks[0].Lines {
		if inlineRoot.MatchString(line) {
			return nil, nil, fmt.Errorf("its top holds %q, a table written inline — add the tables `mcpp-chat setup codex` prints by hand", strings.TrimSpace(line))
		}
	}
	for _, b := range blocks {
		if b.Name() == "hooks" && !b.Array && !b.Empty() {
			return nil, nil, fmt.Errorf("its [hooks] table holds hooks written inline — add the hook groups `mcpp-chat setup codex` prints by hand")
		}
	}
	var changes []codexChange
	blocks, changes, err := mergeServer(blocks, t.server, t.env, changes)
	if err != nil {
		return nil, nil, err
	}
	blocks, changes = mergeFeatures(blocks, t.features, changes)
	for _, h := range t.hooks {
		blocks, changes = mergeHook(blocks, h, changes)
	}
	if len(changes) == 0 {
		return data, nil, nil
	}
	return codexconfig.Format(blocks), changes, nil
}

// ourServer reports a [mcp_servers.NAME] table that runs mcpp-chat serve.
func ourServer(b codexconfig.Block) bool {
	if b.Array || len(b.Path) != 2 || b.Path[0] != "mcp_servers" {
		return false
	}
	raw, _ := b.Value("command")
	cmd, _ := codexconfig.String(raw)
	args, _ := b.Value("args")
	return isOurServer(cmd, codexconfig.Strings(args))
}

// under reports a table inside the server table named name.
func under(b codexconfig.Block, name string) bool {
	return len(b.Path) > 2 && b.Path[0] == "mcp_servers" && b.Path[1] == name
}

func mergeServer(blocks []codexconfig.Block, keys, env [][2]string, changes []codexChange) ([]codexconfig.Block, []codexChange, error) {
	at := -1
	var out []codexconfig.Block
	for _, b := range blocks {
		switch {
		case ourServer(b) && at >= 0:
			changes = append(changes, codexChange{"server " + b.Path[1], "removed", "a second registration of the same server (its tools would show twice)"})
			continue
		case ourServer(b):
			at = len(out)
		case b.Name() == "mcp_servers.chat" && at < 0 && !b.Array:
			raw, _ := b.Value("command")
			return nil, nil, fmt.Errorf("its server table [mcp_servers.chat] runs %s — rename that table, then run this again", raw)
		}
		out = append(out, b)
	}
	if at < 0 {
		if len(env) > 0 {
			keys = append(keys, [2]string{"env", codexconfig.InlineTable(env)})
		}
		out = appendBlock(out, []string{"mcp_servers", "chat"}, false, keys)
		return out, append(changes, codexChange{"server chat", "added", ""}), nil
	}
	name := out[at].Path[1]
	envTable := -1
	for i, b := range out {
		if under(b, name) && len(b.Path) == 3 && b.Path[2] == "env" {
			envTable = i
		}
	}
	changed := false
	for _, kv := range keys {
		c, ok := out[at].Set(kv[0], kv[1])
		if !ok {
			return nil, nil, fmt.Errorf("[mcp_servers.%s] writes %s on several lines — write it on one line, or replace the table with what `mcpp-chat setup codex` prints", name, kv[0])
		}
		changed = changed || c
	}
	if envTable >= 0 {
		// The env as a table of its own: our variables go there.
		changed = setEnvTable(&out[envTable], env) || changed
	} else {
		c, ok := setEnv(&out[at], env)
		if !ok {
			return nil, nil, fmt.Errorf("[mcp_servers.%s] writes env on several lines — write it on one line, or replace the table with what `mcpp-chat setup codex` prints", name)
		}
		changed = changed || c
	}
	if changed {
		changes = append(changes, codexChange{"server " + name, "updated", ""})
	}
	return out, changes, nil
}

// setEnv gives the server table's inline env our variables, keeping the
// user's others after them and taking out other MCPP_CHAT_ ones, which
// would point elsewhere; an env left empty goes.
func setEnv(b *codexconfig.Block, ours [][2]string) (changed, ok bool) {
	pairs := append([][2]string(nil), ours...)
	old, had := b.Value("env")
	for _, kv := range codexconfig.Pairs(old) {
		if !config.IsOurVariable(kv[0]) {
			pairs = append(pairs, kv)
		}
	}
	if len(pairs) == 0 {
		return had && b.Delete("env"), true
	}
	return b.Set("env", codexconfig.InlineTable(pairs))
}

// setEnvTable sets our variables in an [mcp_servers.NAME.env] table and
// takes out the other MCPP_CHAT_ ones, which would point elsewhere.
func setEnvTable(b *codexconfig.Block, ours [][2]string) bool {
	changed := false
	want := map[string]bool{}
	for _, kv := range ours {
		want[kv[0]] = true
		c, _ := b.Set(kv[0], kv[1])
		changed = changed || c
	}
	for _, k := range config.OurVariables {
		if !want[k] {
			changed = b.Delete(k) || changed
		}
	}
	return changed
}

func mergeFeatures(blocks []codexconfig.Block, keys [][2]string, changes []codexChange) ([]codexconfig.Block, []codexChange) {
	for i, b := range blocks {
		if b.Name() != "features" || b.Array {
			continue
		}
		for _, kv := range keys {
			if c, _ := blocks[i].Set(kv[0], kv[1]); c {
				changes = append(changes, codexChange{"features." + kv[0], "set", kv[1]})
			}
		}
		// The older name of the flag: Codex 0.171 warns of it at every
		// start, and a false one would contradict ours.
		if blocks[i].Delete("codex_hooks") {
			changes = append(changes, codexChange{"features.codex_hooks", "removed", "the older name of features.hooks"})
		}
		return blocks, changes
	}
	blocks = appendBlock(blocks, []string{"features"}, false, keys)
	for _, kv := range keys {
		changes = append(changes, codexChange{"features." + kv[0], "added", kv[1]})
	}
	return blocks, changes
}

// ourHookGroup is the event of a [[hooks.EVENT]] group that holds one
// handler, ours (not the Claude Code idle wake, which Codex cannot run);
// "" for any other table.
func ourHookGroup(b codexconfig.Block) string {
	if !b.Array || len(b.Path) != 2 || b.Path[0] != "hooks" {
		return ""
	}
	raw, _ := b.Value("hooks")
	handlers := codexconfig.Tables(raw)
	if len(handlers) != 1 {
		return ""
	}
	cmd, _ := codexconfig.String(handlers[0]["command"])
	h := parseHookLine(cmd)
	if !h.ours() || (h.event() != "" && h.event() != b.Path[1]) {
		return ""
	}
	return b.Path[1]
}

func mergeHook(blocks []codexconfig.Block, h codexHook, changes []codexChange) ([]codexconfig.Block, []codexChange) {
	what := h.event + " hook"
	at := -1
	var out []codexconfig.Block
	for _, b := range blocks {
		if ourHookGroup(b) == h.event {
			if at >= 0 {
				changes = append(changes, codexChange{what, "removed", "a second copy (one per event)"})
				continue
			}
			at = len(out)
		}
		out = append(out, b)
	}
	line := "[" + h.hooksLine() + "]"
	if at < 0 {
		out = appendBlock(out, []string{"hooks", h.event}, true, [][2]string{{"hooks", line}})
		return out, append(changes, codexChange{what, "added", h.command})
	}
	if c, _ := out[at].Set("hooks", line); c {
		changes = append(changes, codexChange{what, "updated", h.command})
	}
	return out, changes
}

// appendBlock adds a table at the end, after a blank line.
func appendBlock(blocks []codexconfig.Block, path []string, array bool, keys [][2]string) []codexconfig.Block {
	last := &blocks[len(blocks)-1]
	if n := len(last.Lines); n > 0 && strings.TrimSpace(last.Lines[n-1]) != "" {
		last.Lines = append(last.Lines, "")
	}
	b := codexconfig.Block{Path: path, Array: array, Lines: []string{codexconfig.Header(path, array)}}
	for _, kv := range keys {
		b.Lines = append(b.Lines, kv[0]+" = "+kv[1])
	}
	return append(blocks, b)
}

// unmergeCodex takes our tables out of a Codex config: the server (with
// the tables inside it), every hook group of ours, and the feature flag
// (Codex 0.171 and later run hooks without it) with a [features] table it
// leaves empty.
func unmergeCodex(data []byte) ([]byte, []codexChange) {
	blocks := codexconfig.Parse(data)
	var servers []string
	for _, b := range blocks {
		if ourServer(b) {
			servers = append(servers, b.Path[1])
		}
	}
	var changes []codexChange
	var out []codexconfig.Block
	for _, b := range blocks {
		switch {
		case ourServer(b):
			changes = append(changes, codexChange{"server " + b.Path[1], "removed", ""})
			continue
		case ourHookGroup(b) != "":
			changes = append(changes, codexChange{b.Path[1] + " hook", "removed", ""})
			continue
		case len(b.Path) > 2 && b.Path[0] == "mcp_servers" && slices.Contains(servers, b.Path[1]):
			continue
		case b.Name() == "features" && !b.Array:
			if v, _ := b.Value(codexHooksFeature); v == "true" && b.Delete(codexHooksFeature) {
				changes = append(changes, codexChange{"features." + codexHooksFeature, "removed", ""})
			}
			if b.Empty() {
				// Its comments and blank lines stay, in front of what follows.
				if len(out) > 0 {
					out[len(out)-1].Lines = append(out[len(out)-1].Lines, b.Tail()...)
				}
				continue
			}
		}
		out = append(out, b)
	}
	if len(changes) == 0 {
		return data, nil
	}
	// The blank line --write put in front of our tables goes with them.
	last := &out[len(out)-1]
	for n := len(last.Lines); n > 0 && strings.TrimSpace(last.Lines[n-1]) == ""; n-- {
		last.Lines = last.Lines[:n-1]
	}
	return codexconfig.Format(out), changes
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
					fmt.Fprintf(w, "warning:     %s turns Codex's hooks off ([features] %s = false) — remove that line, or run: mcpp-chat setup codex --write\n", file, key)
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
		return ok
	}
	slices.Sort(events)
	fmt.Fprintf(w, "codex hooks: %s in %s (Codex runs them once you trust them: it asks at its start, or see /hooks)\n", strings.Join(events, ", "), file)
	for _, ev := range hookEvents {
		switch n := count[ev]; {
		case n == 0:
			fmt.Fprintf(w, "warning:     %s has no mcpp-chat %s hook — run: mcpp-chat setup codex --write\n", file, ev)
			ok = false
		case n > 1:
			fmt.Fprintf(w, "warning:     %s runs mcpp-chat's %s hook %d times — run: mcpp-chat setup codex --write (it keeps one)\n", file, ev, n)
			ok = false
		}
	}
	return ok
}

// codexConfigFile is Codex's config.toml, "" without a home folder.
func codexConfigFile(getenv func(string) string) string {
	dir := codexDir(getenv)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "config.toml")
}
