package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/redact"
	"github.com/mcpp/mcpp-chat/internal/settings"
	"github.com/mcpp/mcpp-chat/internal/text"
)

// executable is the running binary; tests point it at a fake install.
var executable = os.Executable

// hookEvents are the Claude Code events the hook binary answers.
var hookEvents = []string{"SessionStart", "UserPromptSubmit", "Stop"}

// hookTimeout is the seconds Claude Code gives each hook run; the hook
// answers in milliseconds, so this only bounds a stuck filesystem.
const hookTimeout = 10

// The idle wake's waiter: --timeout bounds its wait, and
// Claude Code's timeout for it is waiterGrace seconds more, so the waiter
// ends on its own terms (a silent exit 0) rather than being killed.
const (
	waiterTimeout = 3600
	waiterGrace   = 60
)

// waiterSummary is what the person at the terminal reads when the waiter
// wakes the session; without it Claude Code shows "Stop hook feedback".
// Claude Code (2.1.332) reads it from the entry, fixed, so it cannot name
// the peer; the waiter's report, which the model reads, does. The field is
// one Claude Code marks internal; versions without it ignore it.
const waiterSummary = "mcpp-chat: a peer is waiting on this session"

// installation is where this binary and its companions live, and the
// chat every entry setup prints or writes must open.
type installation struct {
	exe     string // this binary, symlinks resolved
	hook    string // bin/mcpp-chat-hook beside it
	mcppDir string // the checkout holding mcpptool.py, "" if none
	// chat is the chat as this environment resolves it; problem says why
	// it is unknown (a broken config).
	chat    config.Paths
	problem string
	// env is what every entry — each client's server, each hook — sets
	// to open that chat when a client starts it with only HOME and PATH
	// of the user's (config.EntryEnv); envErr says why no entry can be
	// given it (a secret setup does not write), and what to do.
	env    []config.Var
	envErr error
	getenv func(string) string
	// noClaims leaves out the hook that stops an edit of a claimed path
	// (--no-claims; setupclaims.go).
	noClaims bool
}

func findInstallation(getenv func(string) string) (installation, error) {
	exe, err := executable()
	if err != nil {
		return installation{}, fmt.Errorf("cannot find this program's path: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	in := installation{exe: exe, hook: filepath.Join(filepath.Dir(exe), "mcpp-chat-hook"), mcppDir: mcppModule(exe), getenv: getenv}
	paths, _, err := config.Resolve(config.Env(getenv), exe)
	if err != nil {
		in.problem = err.Error()
		return in, nil
	}
	in.chat = paths
	in.env, in.envErr = config.EntryEnv(config.Env(getenv), exe)
	return in, nil
}

// assignments are the entry's variables as shell words (KEY=value), each
// followed by a space; "" when it needs none.
func (in installation) assignments() string {
	var b strings.Builder
	for _, v := range in.env {
		b.WriteString(v.Key + "=" + shellQuote(v.Value) + " ")
	}
	return b.String()
}

// envKeys names the entry's variables: "MCPP_CHAT_DB".
func (in installation) envKeys() string {
	keys := make([]string, len(in.env))
	for i, v := range in.env {
		keys[i] = v.Key
	}
	return strings.Join(keys, ", ")
}

// ownsHook reports a hook command of ours this install may change or
// take out: it runs mcpp-chat's hook and reads this install's chat, or a
// chat also names (Codex: the one our server table pointed at), or cannot
// run at all (its program is gone). A hook of ours that runs on another
// chat is the person's own — a team hub's beside a personal chat — and is
// left as it is.
func (in installation) ownsHook(h hookLine, also ...string) bool {
	if !h.ours() {
		return false
	}
	store, dead := in.hookStore(h)
	if dead || store == "" || in.problem != "" {
		return true
	}
	return store == in.chat.Store || slices.Contains(also, store)
}

// hookStore is the store a hook command of ours opens when a client runs
// it (the variables it sets, HOME and PATH); dead when it cannot run.
func (in installation) hookStore(h hookLine) (store string, dead bool) {
	if strings.ContainsAny(h.prog, "$`") {
		return "", false // a variable the client's shell expands: cannot be told here
	}
	if runnable(h.prog, "mcpp-chat") != "" {
		return "", true
	}
	prog := h.prog
	if !strings.Contains(prog, "/") {
		found, err := exec.LookPath(prog)
		if err != nil {
			return "", true
		}
		prog = found
	}
	return effectiveStore(prog, h.env, in.getenv), false
}

// mcppModule is the checkout an mcpp host loads: the one holding this
// binary, else the one it was built in (an installed copy), "" for none.
func mcppModule(exe string) string {
	isModule := func(dir string) bool {
		return fileExists(filepath.Join(dir, "mcpptool.py")) && fileExists(filepath.Join(dir, "tool.yaml"))
	}
	for dir := filepath.Dir(exe); ; dir = filepath.Dir(dir) {
		if isModule(dir) {
			return dir
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	if config.BuildCheckout != "" && isModule(config.BuildCheckout) {
		return config.BuildCheckout
	}
	return ""
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}

func setup(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("setup", setupSynopsis, stderr)
	write := fs.Bool("write", false, "merge the hooks into the settings file instead of printing them")
	remove := fs.Bool("remove", false, "remove mcpp-chat's hooks from the settings file (keeps everything else, writes FILE.bak)")
	wake := fs.Bool("wake", false, "hooks: include the idle wake (the default)")
	noWake := fs.Bool("no-wake", false, "hooks: leave out the idle wake (with --write, take out one that is there)")
	noClaims := fs.Bool("no-claims", false, "hooks, codex: leave out the PreToolUse hook that stops an edit of a path another party claimed (with --write, take out one that is there)")
	file := fs.String("settings", "", "Claude Code settings file for --write (default ~/.claude/settings.json)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	target := ""
	if rest := fs.Args(); len(rest) > 0 {
		target = rest[0]
		if code, done := parse(fs, rest[1:], stdout); done { // flags after the target
			return code
		}
		if len(fs.Args()) > 0 {
			fmt.Fprintf(stderr, "mcpp-chat setup: unexpected %q — name one target: claude, codex, mcpp or hooks\n", fs.Args()[0])
			return exitUsage
		}
	}
	if code, ok := checkSetupFlags(target, *write, *remove, *wake, *noWake, stderr); !ok {
		return code
	}
	if code, ok := checkNoClaims(target, *remove, *noClaims, stderr); !ok {
		return code
	}
	in, err := findInstallation(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat setup: %v\n", err)
		return exitError
	}
	in.noClaims = *noClaims
	if *remove && target == "codex" {
		return removeCodex(in, getenv, stdout, stderr)
	}
	if *remove {
		return removeHooks(in, *file, getenv, stdout, stderr)
	}
	if in.envErr != nil && target != "mcpp" {
		// Every entry printed or written must open this chat.
		fmt.Fprintf(stderr, "mcpp-chat setup: %v\n", in.envErr)
		return exitError
	}
	if *write && target == "codex" {
		return writeCodex(in, getenv, stdout, stderr)
	}
	w := wakeChoice{wanted: !*noWake}
	if w.wanted && (target == "hooks" || target == "" || target == "all") {
		w.claude = findClaudeCode(getenv)
	}
	if *write {
		return writeHooks(in, w, *file, getenv, stdout, stderr)
	}
	if target == "hooks" {
		printHooks(stdout, stderr, in, w) // JSON has no comments: notes go to stderr
		return exitOK
	}
	sections := map[string]func(io.Writer, installation){
		"claude": printClaude, "codex": printCodex, "mcpp": printMCPP,
		"hooks": func(out io.Writer, in installation) { printHooks(out, out, in, w) },
	}
	if target != "" && target != "all" {
		sections[target](stdout, in)
		return exitOK
	}
	printHeader(stdout, in)
	for _, name := range []string{"claude", "codex", "mcpp", "hooks"} {
		fmt.Fprintln(stdout)
		sections[name](stdout, in)
	}
	return exitOK
}

// checkSetupFlags refuses a target or a combination of flags setup does
// not take, saying what to run instead.
func checkSetupFlags(target string, write, remove, wake, noWake bool, stderr io.Writer) (int, bool) {
	refuse := func(format string, args ...any) (int, bool) {
		fmt.Fprintf(stderr, "mcpp-chat setup: "+format+"\n", args...)
		return exitUsage, false
	}
	switch target {
	case "", "all", "claude", "codex", "mcpp", "hooks":
	default:
		return refuse("unknown target %q — use claude, codex, mcpp or hooks (or none for all)", target)
	}
	hooks := target == "hooks" || target == ""
	writable := hooks || target == "codex"
	switch {
	case wake && noWake:
		return refuse("--wake and --no-wake contradict each other — the idle wake is written unless --no-wake is given")
	case (wake || noWake) && !hooks && target != "all":
		return refuse("--wake and --no-wake belong to Claude Code's hooks (Codex has no idle wake) — run `mcpp-chat setup hooks --no-wake`")
	case remove && write:
		return refuse("--write and --remove contradict each other — run one of them")
	case remove && target != "hooks" && target != "codex":
		return refuse("--remove takes out what --write wrote — run `mcpp-chat setup hooks --remove` (Claude Code) or `mcpp-chat setup codex --remove`")
	case remove && (wake || noWake):
		return refuse("--remove removes every hook of ours, the idle wake with them — run `mcpp-chat setup hooks --remove [--settings FILE]`")
	case write && !writable:
		return refuse("--write merges the Claude Code hooks (setup hooks --write) or the Codex tables (setup codex --write) — paste the %s snippet yourself", target)
	case write && target == "all":
		return refuse("--write merges one client's configuration at a time — run `mcpp-chat setup hooks --write`, then `mcpp-chat setup codex --write`")
	}
	return 0, true
}

// wakeChoice is whether the hooks include the idle wake: wanted unless
// --no-wake, and left out for a Claude Code older than the tested one.
type wakeChoice struct {
	wanted bool
	claude claudeCode
}

func (w wakeChoice) included() bool { return w.wanted && !w.claude.older() }

const setupSynopsis = `setup [claude|codex|mcpp|hooks] [--no-wake] [--no-claims] [--write|--remove] [--settings FILE]

Prints, with this install's absolute paths, what connects each client (all of them
when no target is named). A named target prints only what is valid in its format, so
that it can be saved as printed (setup hooks > hooks.json); notes go to stderr.
When the database is not the one this binary finds on its own (MCPP_CHAT_DB, or
MCPP_CHAT_HOME or MCPP_CHAT_CONFIG, chose another), every snippet names it.
The hooks include the idle wake, which wakes a session idle at its prompt when a peer
needs it (Claude Code's asyncRewake); --no-wake leaves it out, and it is left out, with
a note, for a Claude Code older than the one mcpp-chat is tested with. The hooks (and
Codex's) include a PreToolUse hook that stops an edit of a path another party claimed
(chat_claim); --no-claims leaves it out.
--write merges the Claude Code hooks into the settings file: it keeps every other key
and hook, adds ours once (an entry of ours in any form, for any path or database, is
updated in place; one per event), and copies the file to FILE.bak first.
--remove takes every mcpp-chat hook out of the settings file the same careful way.
setup codex --write merges the server table, the hooks feature flag and the hooks into
Codex's config.toml ($CODEX_HOME or ~/.codex) the same careful way (config.toml.bak);
setup codex --remove takes them out again. With Codex's hooks the server wakes an idle
Codex session when a peer needs it (codex queue; Linux, Codex 0.171.0 or later); setup
codex --write says whether it will here.`

func printHeader(w io.Writer, in installation) {
	fmt.Fprintf(w, "# mcpp-chat: connect this install (%s)\n", in.exe)
	switch {
	case in.problem != "":
		fmt.Fprintf(w, "# database: unknown until the config is fixed: %s\n", in.problem)
	case config.IsHub(in.chat.Store):
		fmt.Fprintf(w, "# chat: the team hub %s, saved in %s (mcpp-chat connect)\n", redact.URL(in.chat.Store), in.chat.Hub)
	case config.IsPostgres(in.chat.Store):
		fmt.Fprintf(w, "# chat: the team store %s\n", redact.URL(in.chat.Store))
	default:
		fmt.Fprintf(w, "# database: %s\n", in.chat.DB)
	}
	if in.problem == "" && len(in.env) > 0 {
		fmt.Fprintf(w, "# A client would not find this chat on its own: every snippet below names it (%s).\n", in.envKeys())
	} else if in.problem == "" {
		fmt.Fprintln(w, "# Every client below finds this chat on its own.")
	}
	fmt.Fprintln(w, "# Paste the snippet for your client; `mcpp-chat demo` shows two repositories talking.")
}

func printClaude(w io.Writer, in installation) {
	fmt.Fprintln(w, "# Claude Code: register the server once for every project on this host")
	env := ""
	if len(in.env) > 0 {
		// After the name: claude's -e takes every word up to the next
		// option, so before the name it would take the name too.
		fmt.Fprintln(w, "# (-e gives the server this install's chat, which it would not find on its own)")
		for _, v := range in.env {
			env += " -e " + v.Key + "=" + shellQuote(v.Value)
		}
	}
	fmt.Fprintf(w, "claude mcp add --scope user chat%s -- %s serve\n", env, shellQuote(in.exe))
}

func printMCPP(w io.Writer, in installation) {
	start := strings.TrimSpace(in.assignments())
	if in.mcppDir == "" {
		fmt.Fprintln(w, "# mcpp host: the module is a source checkout of mcpp-chat (the folder holding mcpptool.py);")
		fmt.Fprintln(w, "# this binary is not inside one. In the host's tools.yaml:")
		fmt.Fprintln(w, "#   modules:")
		fmt.Fprintln(w, "#     - path: /path/to/mcpp-chat   # then run `make build` there")
		if start != "" {
			fmt.Fprintf(w, "# To share this install's chat, start the host with %s\n", start)
		}
		return
	}
	fmt.Fprintln(w, "# mcpp host: add the module to the host's tools.yaml")
	if start != "" {
		fmt.Fprintf(w, "# and start the host with %s (the module's bridge passes it on)\n", start)
	}
	fmt.Fprintln(w, "modules:")
	fmt.Fprintf(w, "  - path: %s\n", yamlScalar(in.mcppDir))
}

// printHooks writes the settings document to w, valid JSON as printed
// (Claude Code silently ignores a --settings file that is not), and the
// notes about it to notes.
func printHooks(w, notes io.Writer, in installation, wake wakeChoice) {
	fmt.Fprintln(notes, "# Claude Code hooks: sessions notice a peer waiting on their repository.")
	fmt.Fprintln(notes, "# `mcpp-chat setup hooks --write` merges them into ~/.claude/settings.json")
	fmt.Fprintln(notes, "# (keeps everything, writes a .bak); or merge this by hand, or save it and pass --settings FILE:")
	if !fileExists(in.hook) {
		fmt.Fprintf(notes, "# note: %s is not built yet — run `make build` in %s\n", in.hook, filepath.Dir(filepath.Dir(in.exe)))
	}
	hooks := append(ourHooks(in), printedClaimsHook(notes, in)...)
	if wake.included() {
		fmt.Fprintln(notes, "# The second Stop entry is the idle wake: it wakes a session idle at its prompt when a peer")
		fmt.Fprintln(notes, "# needs it (Claude Code's asyncRewake, which Claude Code marks experimental); --no-wake leaves it out.")
		hooks = append(hooks, waiterHook(in))
	}
	if note := wake.claude.wakeNote(); wake.wanted && note != "" {
		fmt.Fprintf(notes, "# note: %s", note)
		if wake.claude.older() {
			fmt.Fprint(notes, " — the idle wake is left out; update Claude Code, then run this again")
		}
		fmt.Fprintln(notes)
	}
	w.Write(settings.Template(hooks))
}

func ourHooks(in installation) []settings.Hook {
	hooks := make([]settings.Hook, len(hookEvents))
	for i, ev := range hookEvents {
		hooks[i] = settings.Hook{Event: ev, Command: hookCommand(in, ev), Timeout: hookTimeout, Match: ourHook(in, ev)}
	}
	return hooks
}

// waiterHook is the idle wake: a background Stop hook that exits 2 when a
// peer needs the session.
func waiterHook(in installation) settings.Hook {
	return settings.Hook{Event: "Stop", Command: fmt.Sprintf("%s --wait --timeout %d", hookCommand(in, "Stop"), waiterTimeout),
		Timeout: waiterTimeout + waiterGrace, AsyncRewake: true, RewakeSummary: waiterSummary, Match: ourWaiter(in)}
}

// hookCommand runs this install's hook for event on this install's chat:
// the variables that give it the chat come first (KEY=value words).
func hookCommand(in installation, event string) string {
	return in.assignments() + shellQuote(in.hook) + " --event " + event
}

// ourHook recognises our synchronous hook for event in any form we have
// printed — at any path (a moved checkout), with or without variables
// before it (VAR=value or env VAR=value) — on this install's chat or on
// none that runs (ownsHook), but not the --wait waiter, and makes it this
// install's command.
func ourHook(in installation, event string) func(string) (string, bool) {
	return func(cmd string) (string, bool) {
		h := parseHookLine(cmd)
		if !in.ownsHook(h) || h.waits() || (h.event() != event && h.event() != "") {
			return "", false
		}
		return hookCommand(in, event), true
	}
}

// ourWaiter recognises the idle wake's waiter in any form and points it
// at this install and chat, keeping its own arguments (a user may have
// set another --timeout, with Claude Code's timeout to match).
func ourWaiter(in installation) func(string) (string, bool) {
	return func(cmd string) (string, bool) {
		h := parseHookLine(cmd)
		if !in.ownsHook(h) || !h.waits() || (h.event() != "Stop" && h.event() != "") {
			return "", false
		}
		words := []string{shellQuote(in.hook)}
		for _, a := range h.args {
			words = append(words, shellQuote(a))
		}
		return in.assignments() + strings.Join(words, " "), true
	}
}

func writeHooks(in installation, wake wakeChoice, file string, getenv func(string) string, stdout, stderr io.Writer) int {
	if !fileExists(in.hook) {
		fmt.Fprintf(stderr, "mcpp-chat setup: the hook binary %s is missing — run `make build` in %s first; nothing was written\n", in.hook, filepath.Dir(filepath.Dir(in.exe)))
		return exitError
	}
	if file = claudeSettings(getenv, file); file == "" {
		fmt.Fprintf(stderr, "mcpp-chat setup: cannot find your home folder — pass --settings FILE\n")
		return exitUsage
	}
	waiter := waiterHook(in)
	switch {
	case !wake.wanted:
		waiter.Drop = true
	case !wake.included():
		// Left out for an older Claude Code, but one already there is
		// pointed at this install like the rest.
		waiter.UpdateOnly = true
	}
	changes, backup, err := settings.MergeFile(file, append(ourHooks(in), waiter, claimsHook(in)))
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat setup: %v\n", err)
		return exitError
	}
	for _, c := range changes {
		name := c.Hook.Event
		if c.Hook.AsyncRewake {
			name += " (idle wake)"
		}
		if c.Action != settings.Absent {
			fmt.Fprintf(stdout, "%-16s %s: %s\n", name, c.Action, c.Hook.Command)
		}
		if c.Duplicates > 0 {
			fmt.Fprintf(stdout, "%-16s removed %s of it (one per event)\n", name, text.Count(c.Duplicates, "duplicate"))
		}
	}
	reportWrite(stdout, file, backup, changed(changes), "already has every hook")
	reportLeft(stdout, in, file)
	if note := wake.claude.wakeNote(); wake.wanted && note != "" {
		fmt.Fprintf(stderr, "mcpp-chat setup: %s", note)
		if wake.claude.older() {
			fmt.Fprint(stderr, " — the idle wake was not written; update Claude Code, then run `mcpp-chat setup hooks --write` again")
		}
		fmt.Fprintln(stderr)
	}
	return exitOK
}

// removeHooks takes this install's hooks out of the settings file: those
// on its chat, and those that cannot run any more (ownsHook).
func removeHooks(in installation, file string, getenv func(string) string, stdout, stderr io.Writer) int {
	if file = claudeSettings(getenv, file); file == "" {
		fmt.Fprintf(stderr, "mcpp-chat setup: cannot find your home folder — pass --settings FILE\n")
		return exitUsage
	}
	changes, backup, deleted, err := settings.RemoveFile(file, func(_, cmd string) bool { return in.ownsHook(parseHookLine(cmd)) })
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat setup: %v\n", err)
		return exitError
	}
	for _, c := range changes {
		fmt.Fprintf(stdout, "%-16s removed: %s\n", c.Hook.Event, c.Hook.Command)
	}
	if deleted {
		fmt.Fprintf(stdout, "removed %s: it held nothing but mcpp-chat's hooks (its last version is in %s)\n", file, backup)
		return exitOK
	}
	reportWrite(stdout, file, backup, len(changes) > 0, "has no mcpp-chat hooks")
	reportLeft(stdout, in, file)
	return exitOK
}

// reportLeft says what setup left as the person has it in a settings
// file, and what it means: hooks of ours on another chat that works (a
// team hub's beside a personal chat's), and hooks turned off as a whole.
func reportLeft(w io.Writer, in installation, file string) {
	data, err := config.ReadSmallFile(file, maxSettingsBytes)
	if err != nil {
		return
	}
	entries, _ := settings.Inspect(data)
	for _, e := range entries {
		if h := parseHookLine(e.Command); h.ours() && !in.ownsHook(h) {
			store, _ := in.hookStore(h)
			fmt.Fprintf(w, "left as it is: %s runs mcpp-chat's hook on the %s, another chat's — setup hooks --remove run for that chat takes it out\n", e.Where, storeName(store))
		}
	}
	if settings.HooksDisabled(data) {
		fmt.Fprintf(w, "left as it is: %s sets \"disableAllHooks\": true, so Claude Code runs none of its hooks, these included — set it to false if you want them\n", file)
	}
}

func reportWrite(w io.Writer, file, backup string, wrote bool, unchanged string) {
	switch {
	case backup != "":
		fmt.Fprintf(w, "wrote %s (the previous version is in %s)\n", file, backup)
	case wrote:
		fmt.Fprintf(w, "wrote %s\n", file)
	default:
		fmt.Fprintf(w, "%s %s; nothing changed\n", file, unchanged)
	}
}

// claudeSettings is the settings file given, else the user's
// ~/.claude/settings.json; "" when there is no home folder to find it in.
func claudeSettings(getenv func(string) string, given string) string {
	if given != "" {
		return given
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".claude", "settings.json")
}

func changed(cs []settings.Change) bool {
	for _, c := range cs {
		if c.Action == settings.Added || c.Action == settings.Updated || c.Action == settings.Removed || c.Duplicates > 0 {
			return true
		}
	}
	return false
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// yamlScalar leaves a plain path plain and quotes anything else.
func yamlScalar(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return jsonValue(s)
}

// jsonValue is v as JSON; a JSON string is also a valid TOML and YAML string.
func jsonValue(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}
