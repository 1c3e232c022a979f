package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/settings"
)

// hookWant is what this install's hooks should run: its hook binary, on
// its store.
type hookWant struct {
	hook   string
	store  string // sqlite:<file>, or a team store's or hub's URL
	env    func(string) string
	builds *builds
}

// maxSettingsBytes bounds the Claude Code settings file doctor reads; a
// real one is a few kilobytes.
const maxSettingsBytes = 16 << 20

// checkHooks tells whether the mcpp-chat hooks in a Claude Code settings
// file would load and run, and run this install on its database: a file
// that is not JSON is ignored by Claude Code as a whole, silently, a hook
// whose binary is missing fails every time, and a hook of another install
// or database tells a session about another chat. explicit is a file the
// user named (its absence is a problem). It returns false when something
// would not work.
func checkHooks(w io.Writer, file string, explicit bool, want hookWant) bool {
	data, err := config.ReadSmallFile(file, maxSettingsBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		fmt.Fprintf(w, "hooks:       none (no %s) — run: %s setup hooks --write\n", file, invocation(want.env))
		fmt.Fprintln(w, wakeMissing(want.env))
		return true
	case err != nil:
		fmt.Fprintf(w, "warning:     cannot read %s: %v\n", file, err)
		return false
	}
	entries, problems := settings.Inspect(data)
	for _, p := range problems {
		fmt.Fprintf(w, "warning:     %s: %s — fix the file; until then its hooks do not run\n", file, p)
	}
	var names, wakes []string
	perEvent := map[string]int{}
	ok := len(problems) == 0
	if settings.HooksDisabled(data) {
		fmt.Fprintf(w, "warning:     %s sets \"disableAllHooks\": true, so Claude Code runs none of its hooks, mcpp-chat's included — set it to false if you want them\n", file)
		ok = false
	}
	for _, e := range entries {
		h := parseHookLine(e.Command)
		if !h.ours() {
			continue
		}
		name := e.Event
		switch {
		case e.AsyncRewake:
			name += " (idle wake)"
			wakes = append(wakes, e.Where)
		case h.waits():
			fmt.Fprintf(w, "warning:     %s %s is the idle wake without \"asyncRewake\": true — Claude Code runs it in the foreground, which holds every stop until a peer writes — run: %s setup hooks --write\n", file, e.Where, invocation(want.env))
			ok = false
		default:
			perEvent[e.Event]++
		}
		names = append(names, name)
		for _, problem := range hookProblems(h, want) {
			fmt.Fprintf(w, "warning:     %s %s: %s\n", file, e.Where, problem)
			ok = false
		}
	}
	if len(names) == 0 {
		fmt.Fprintf(w, "hooks:       none of mcpp-chat's in %s — run: %s setup hooks --write\n", file, invocation(want.env))
		fmt.Fprintln(w, wakeMissing(want.env))
		return ok
	}
	fmt.Fprintf(w, "hooks:       %s in %s\n", strings.Join(names, ", "), file)
	for _, ev := range hookEvents {
		switch n := perEvent[ev]; {
		case n == 0:
			fmt.Fprintf(w, "warning:     %s has no mcpp-chat %s hook — run: %s setup hooks --write\n", file, ev, invocation(want.env))
			ok = false
		case n > 1:
			fmt.Fprintf(w, "warning:     %s runs mcpp-chat's %s hook %d times — run: %s setup hooks --write (it keeps one)\n", file, ev, n, invocation(want.env))
			ok = false
		}
	}
	ok = checkEditHook(w, file, perEvent[claimsEvent], want.env) && ok
	return checkWake(w, wakes, want.env) && ok
}

// wakeMissing is doctor's line for settings without the idle wake: not a
// warning (--no-wake leaves it out on purpose), but what it costs.
func wakeMissing(env func(string) string) string {
	return "idle wake:   not installed — a session idle at its prompt notices a peer only when someone types; to add it run: " + invocationOr(env) + " setup hooks --write"
}

// invocationOr is invocation, or the command's bare name without an
// environment to look in.
func invocationOr(env func(string) string) string {
	if env == nil {
		return "mcpp-chat"
	}
	return invocation(env)
}

// checkWake says whether the idle wake is installed, and warns when the
// Claude Code here is older than the one it is tested with, or when it is
// installed more than once (each would wake the session).
func checkWake(w io.Writer, wakes []string, env func(string) string) bool {
	if len(wakes) == 0 {
		fmt.Fprintln(w, wakeMissing(env))
		return true
	}
	fmt.Fprintf(w, "idle wake:   installed (%s) — a session idle at its prompt wakes when a peer needs it\n", strings.Join(wakes, ", "))
	ok := true
	if len(wakes) > 1 {
		fmt.Fprintf(w, "warning:     the idle wake is installed %d times — run: %s setup hooks --write (it keeps one)\n", len(wakes), invocationOr(env))
		ok = false
	}
	if env == nil {
		return ok
	}
	if c := findClaudeCode(env); c.older() {
		fmt.Fprintf(w, "warning:     %s — update Claude Code, or run: %s setup hooks --write --no-wake\n", c.wakeNote(), invocation(env))
		ok = false
	}
	return ok
}

// hookProblems says why one of our hook commands would not run this
// install's hook on its database.
func hookProblems(h hookLine, want hookWant) []string {
	me := invocation(want.env)
	if problem := runnable(h.prog, me); problem != "" {
		return []string{problem}
	}
	if strings.ContainsAny(h.prog, "$`") || !strings.Contains(h.prog, "/") || want.hook == "" {
		return nil // a variable or a PATH lookup Claude Code resolves: cannot be compared here
	}
	var out []string
	if !sameFile(h.prog, want.hook) {
		// The checkout's bin/ beside its make install copy is one install.
		if other := want.builds.other(h.prog, "mcpp-chat-hook"); other != "" {
			out = append(out, fmt.Sprintf("runs %s, not this install's %s (%s) — run: %s setup hooks --write", h.prog, want.hook, other, me))
		}
	}
	if store := effectiveStore(h.prog, h.env, want.env); store != "" && store != want.store {
		out = append(out, fmt.Sprintf("reads the %s, not this install's %s — run: %s setup hooks --write (it gives the hook this install's chat)", storeName(store), storeName(want.store), me))
	}
	return out
}

// runnable says why the hook program would not run, or ""; me is how
// the person runs this binary (invocation).
func runnable(prog, me string) string {
	if strings.ContainsAny(prog, "$`") {
		return "" // a variable Claude Code's shell expands: cannot be checked here
	}
	if !strings.Contains(prog, "/") {
		if _, err := exec.LookPath(prog); err != nil {
			return prog + " is not on PATH — give its absolute path (" + me + " setup hooks --write does)"
		}
		return ""
	}
	info, err := os.Stat(prog)
	switch {
	case err != nil:
		return fmt.Sprintf("%s is missing — run make build in the checkout, or %s setup hooks --write to point the hooks at this install", prog, me)
	case info.IsDir() || info.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("%s is not an executable file — run: chmod +x %s", prog, shellQuote(prog))
	}
	return ""
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// hookLine is a hook command taken apart: the variables it sets before
// the program (VAR=value prefixes, or env VAR=value), the program and its
// arguments. Every form setup has printed, and docs/hooks.md shows, parses.
type hookLine struct {
	env  map[string]string
	prog string
	args []string
}

func parseHookLine(command string) hookLine {
	words := shellWords(command)
	h := hookLine{env: map[string]string{}}
	assignments := func() {
		for len(words) > 0 && assignment.MatchString(words[0]) {
			k, v, _ := strings.Cut(words[0], "=")
			h.env[k] = v
			words = words[1:]
		}
	}
	assignments()
	if len(words) > 0 && filepath.Base(words[0]) == "env" {
		words = words[1:]
		if len(words) > 0 && words[0] == "--" {
			words = words[1:]
		}
		assignments()
	}
	if len(words) > 0 {
		h.prog, h.args = words[0], words[1:]
	}
	return h
}

// ours reports mcpp-chat's hook binary, at whatever path.
func (h hookLine) ours() bool { return filepath.Base(h.prog) == "mcpp-chat-hook" }

// event is the --event the command passes, "" for none (the hook then
// answers the payload's event: the list the entry sits in).
func (h hookLine) event() string {
	for i, a := range h.args {
		if a == "--event" && i+1 < len(h.args) {
			return h.args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--event="); ok {
			return v
		}
	}
	return ""
}

// waits reports the idle wake's waiter (--wait).
func (h hookLine) waits() bool {
	for _, a := range h.args {
		if a == "--wait" || strings.HasPrefix(a, "--wait=") {
			return true
		}
	}
	return false
}

// hookProgram is the program a hook command runs (after any VAR=value
// prefix, e.g. MCPP_CHAT_DB=...), and whether it is mcpp-chat's hook.
func hookProgram(command string) (prog string, ours bool) {
	h := parseHookLine(command)
	return h.prog, h.ours()
}

// shellWords splits a command line as a POSIX shell would split simple
// words: single quotes, double quotes (with \ escapes) and backslashes.
// Expansions are left as written.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
