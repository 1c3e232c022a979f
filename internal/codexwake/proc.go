package codexwake

import (
	"path/filepath"
	"slices"
	"strings"
)

// Process names one process across the reuse of its id: the id and the
// kernel's record of when it started.
type Process struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// The kinds of Codex process a hook or server can run under.
const (
	// KindServer is Codex's shared background server (`codex app-server
	// … --managed-daemon`): a plain interactive `codex` runs its threads
	// there, hooks and MCP servers included, whichever terminal shows them.
	KindServer = "server"
	// KindInterface is an interactive `codex` running its own server (with
	// -c, --no-daemon, …): its threads are its own.
	KindInterface = "interface"
	// KindOther is anything else (`codex exec`, …): nobody sits at it, so
	// it is never rung.
	KindOther = "other"
)

// Client is the Codex process a hook and a server run under: the one
// whose threads they serve.
type Client struct {
	Process
	Exe  string `json:"exe"`
	Kind string `json:"kind"`
	// CodexHome is its Codex folder: $CODEX_HOME, else ~/.codex.
	CodexHome string `json:"codex_home"`
	// Env is its environment, which its hooks inherit.
	Env map[string]string `json:"-"`
}

// Getenv reads the client's environment.
func (c Client) Getenv(name string) string { return c.Env[name] }

// maxAncestors bounds the walk up a process's parents.
const maxAncestors = 16

// isCodexExe reports the path of a Codex binary (the native executable the
// npm package runs, or the copy its background server runs).
func isCodexExe(exe string) bool {
	base := strings.TrimSuffix(filepath.Base(strings.TrimSuffix(exe, " (deleted)")), ".exe")
	return base == "codex"
}

// isClaudeExe reports Claude Code's binary: a hook or server under Claude
// Code is Claude Code's, even when Claude Code itself runs under Codex
// (started by one of its commands).
func isClaudeExe(exe string) bool {
	base := strings.TrimSuffix(filepath.Base(strings.TrimSuffix(exe, " (deleted)")), ".exe")
	return base == "claude"
}

// valueFlags are Codex's options that take a value (codex --help, 0.171).
var valueFlags = []string{"-c", "--config", "--enable", "--disable", "--remote", "--remote-auth-token-env",
	"-i", "--image", "-m", "--model", "--local-provider", "-p", "--profile", "-s", "--sandbox",
	"-C", "--cd", "--add-dir", "-a", "--ask-for-approval"}

// interactive are the subcommands that open Codex's terminal interface.
var interactive = []string{"resume", "fork", "agents"}

// otherCommands are Codex's subcommands that do not.
var otherCommands = []string{"exec", "e", "review", "login", "logout", "mcp", "mcp-server", "plugin",
	"app-server", "remote-control", "completion", "update", "doctor", "sandbox", "debug", "apply", "a",
	"queue", "archive", "delete", "migrate-rollouts", "migrate-nfs-db", "unarchive", "cloud",
	"exec-server", "features", "help"}

// commandLine is what a Codex command line says: its subcommand ("" for
// none: the interface, or a prompt) and the folder -C names.
type commandLine struct {
	command string
	cd      string
}

func parseCommandLine(args []string) commandLine {
	var c commandLine
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, inline := strings.Cut(a, "=")
		switch {
		case a == "--":
			return c
		case slices.Contains(valueFlags, name) && strings.HasPrefix(a, "-"):
			if !inline && i+1 < len(args) {
				i++
				value = args[i]
			}
			if name == "-C" || name == "--cd" {
				c.cd = value
			}
		case strings.HasPrefix(a, "-C") && len(a) > 2 && !strings.HasPrefix(a, "--"):
			c.cd = a[2:]
		case strings.HasPrefix(a, "-"):
		default:
			if slices.Contains(interactive, a) || slices.Contains(otherCommands, a) {
				c.command = a
			}
			return c // a subcommand, or the prompt
		}
	}
	return c
}

// kindOf says what kind of Codex process args (its arguments after the
// program) run.
func kindOf(args []string) string {
	c := parseCommandLine(args)
	switch {
	case c.command == "app-server":
		return KindServer
	case c.command == "" || slices.Contains(interactive, c.command):
		return KindInterface
	}
	return KindOther
}

// codexHomeOf is the Codex folder an environment names: $CODEX_HOME, else
// ~/.codex; "" without either.
func codexHomeOf(env map[string]string) string {
	if dir := env["CODEX_HOME"]; dir != "" {
		return filepath.Clean(dir)
	}
	if home := env["HOME"]; home != "" {
		return filepath.Join(home, ".codex")
	}
	return ""
}

// parseEnviron splits a NUL-separated environment block.
func parseEnviron(data []byte) map[string]string {
	env := map[string]string{}
	for _, kv := range strings.Split(string(data), "\x00") {
		if name, value, ok := strings.Cut(kv, "="); ok && name != "" {
			if _, seen := env[name]; !seen {
				env[name] = value
			}
		}
	}
	return env
}
