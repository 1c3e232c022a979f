package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	cliversion "github.com/mcpp/mcpp-chat/internal/version"
)

// claudeCodeTested is the Claude Code version the end-to-end tests pin
// (the Makefile's CLAUDE_CODE_VERSION; a test keeps the two the same). The
// idle wake rests on its asyncRewake hooks, which Claude Code marks
// experimental: an older version is not known to run the waiter in the
// background, and a waiter in the foreground would hold every stop.
const claudeCodeTested = "2.1.332"

// claudeCode is the Claude Code CLI found on this machine.
type claudeCode struct {
	path    string // "" when none was found
	version string // "" when it did not say
}

// versionWait bounds `claude --version`, which answers in a fraction of a
// second.
const versionWait = 5 * time.Second

// findClaudeCode looks for the claude command on PATH, then where its
// installers put it (~/.local/bin, ~/.claude/local), and asks its version.
func findClaudeCode(getenv func(string) string) claudeCode {
	path := lookPath("claude", getenv("PATH"))
	if path == "" {
		if home := homeDir(getenv); home != "" {
			for _, p := range []string{filepath.Join(home, ".local", "bin", "claude"), filepath.Join(home, ".claude", "local", "claude")} {
				if isExecutable(p) {
					path = p
					break
				}
			}
		}
	}
	if path == "" {
		return claudeCode{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), versionWait)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, "--version").Output()
	return claudeCode{path: path, version: cliversion.In(string(out))}
}

// older reports a Claude Code known to be older than the tested one.
func (c claudeCode) older() bool {
	return c.version != "" && cliversion.Compare(c.version, claudeCodeTested) < 0
}

// wakeNote says why the idle wake is left out, or what could not be
// checked; "" when there is nothing to say.
func (c claudeCode) wakeNote() string {
	switch {
	case c.path == "":
		return "could not find Claude Code (no claude on PATH) to check its version: the idle wake needs Claude Code " + claudeCodeTested + " or later"
	case c.version == "":
		return c.path + " --version did not say its version: the idle wake needs Claude Code " + claudeCodeTested + " or later"
	case c.older():
		return "Claude Code " + c.version + " (" + c.path + ") is older than " + claudeCodeTested +
			", the version the idle wake is tested with (its asyncRewake hooks are experimental; an older version may run the waiter in the foreground and hold every stop)"
	}
	return ""
}

// lookPath finds an executable file named name in the folders of path
// (the environment's PATH, which a test sets).
func lookPath(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode().Perm()&0o111 != 0
}
