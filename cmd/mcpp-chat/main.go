// Command mcpp-chat is the chat server and its command line: serve speaks
// MCP over stdio, call runs one tool from a shell, doctor shows what the
// install resolves to.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the driver of team stores on PostgreSQL
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ownerOnlyFiles()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go exitAfterSignal(ctx, os.Stderr)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// stopGrace is how long a command may take to end after SIGINT or SIGTERM.
const stopGrace = 2 * time.Second

// exitAfterSignal ends the process stopGrace after a signal if the command
// has not ended by then: some waits no context reaches, like a write to a
// client that stopped reading or a read of a stdin that never ends. Exiting
// is safe at any moment: every call is one transaction, and SQLite drops a
// transaction that did not commit. (When the command ends first, main
// exits before the grace is over.)
func exitAfterSignal(ctx context.Context, stderr io.Writer) {
	<-ctx.Done()
	time.Sleep(stopGrace)
	fmt.Fprintf(stderr, "mcpp-chat: still busy %v after the signal (a client that stopped reading, or input that never ends) — exiting now; nothing half-written is left\n", stopGrace)
	os.Exit(exitError)
}

const usage = `mcpp-chat — a chat and Q&A channel between coding sessions in different repositories

Usage:
  mcpp-chat serve                      MCP server over stdio (register it with your client)
  mcpp-chat call [--workspace DIR] [--display] TOOL [ARGS_JSON | -]
                                       run one tool; prints {"success", "result", "display"},
                                       or with --display the answer as a person reads it
  mcpp-chat call [--workspace DIR] --stream
                                       run calls read from stdin, one JSON line each, and
                                       print each reply with its id (the mcpp bridge's worker)
  mcpp-chat watch [--mine] [--workspace DIR] [--exec CMD]
                                       print a line per change as it happens
  mcpp-chat log [CHANNEL] [--all] [--since SEQ] [--archived] [--follow]
                                       the conversation as a person reads it: threads,
                                       item states, who they wait on (only reads)
  mcpp-chat search QUERY... [--channel C] [--archived]
                                       full-text search of every channel, live and archived
  mcpp-chat ui [--listen 127.0.0.1:PORT]
                                       a live web page of the chat on this machine (only reads)
  mcpp-chat doctor [--workspace DIR] [--settings FILE]
                                       show the resolved paths, schema and party, and check
                                       registration, hooks, versions and file modes
  mcpp-chat info [--workspace DIR]     the party, paths, parameters and rules as JSON
  mcpp-chat setup [claude|codex|mcpp|hooks] [--no-wake] [--no-claims] [--write|--remove] [--settings FILE]
                                       print the snippet that connects each client;
                                       --write merges the hooks into ~/.claude/settings.json
                                       (setup codex --write: Codex's config), --remove takes
                                       them out
  mcpp-chat parties [list|move|forget|reset-cursor] ...
                                       for you, not agents: list the parties with their folder
                                       and last activity, move one to a new folder, forget one,
                                       reset a cursor
  mcpp-chat claims [list|release --force RESOURCE]
                                       for you, not agents: every live claim on a shared
                                       thing, and freeing one whoever holds it
  mcpp-chat migrate --to postgres://… [--from sqlite:PATH]
                                       copy this install's database (or PATH) into an empty
                                       team store on PostgreSQL
  mcpp-chat hub serve|token ...        the team hub: serve it to other machines, issue,
                                       list and revoke its tokens (docs/team.md)
  mcpp-chat connect URL --token TOKEN  make this machine a member of a team hub: serve,
                                       call, watch and the hook then use it
  mcpp-chat hook --event EVENT [--wait]
                                       the Claude Code hook for a team store or hub
                                       (mcpp-chat-hook hands it the events it cannot answer)
  mcpp-chat demo [--keep]              run the two-repo worked example in a temporary folder
  mcpp-chat version                    print the version

Run "mcpp-chat COMMAND --help" for a command's flags.
`

// Exit codes of every command.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed (a tool error)
	exitUsage = 2 // the command line was wrong
)

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, getenv, stdin, stdout, stderr)
	case "call":
		return call(ctx, rest, getenv, stdin, stdout, stderr)
	case "watch":
		return watch(ctx, rest, getenv, stdout, stderr)
	case "log":
		return logCmd(ctx, rest, getenv, stdout, stderr)
	case "search":
		return searchCmd(ctx, rest, getenv, stdout, stderr)
	case "ui":
		return uiCmd(ctx, rest, getenv, stdout, stderr)
	case "doctor":
		return doctor(ctx, rest, getenv, stdout, stderr)
	case "info":
		return info(ctx, rest, getenv, stdout, stderr)
	case "setup":
		return setup(rest, getenv, stdout, stderr)
	case "parties":
		return parties(ctx, rest, getenv, stdout, stderr)
	case "claims":
		return claimsCmd(ctx, rest, getenv, stdout, stderr)
	case "hook":
		return hookCmd(ctx, rest, getenv, stdin, stdout, stderr)
	case "migrate":
		return migrate(ctx, rest, getenv, stdout, stderr)
	case "hub":
		return hubCmd(ctx, rest, getenv, stdout, stderr)
	case "connect":
		return connect(ctx, rest, getenv, stdout, stderr)
	case "demo":
		return demo(ctx, rest, getenv, stdout, stderr)
	case "version", "--version", "-v":
		return versionCmd(rest, stdout, stderr)
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "mcpp-chat: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

// versionCmd prints the version; --help says what it prints.
func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := flags("version", "version\n\nPrints this mcpp-chat's version: the git commit it was built from (with -dirty\nfor uncommitted changes), or dev for a build outside make.", stderr)
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	fmt.Fprintf(stdout, "mcpp-chat %s\n", version)
	return exitOK
}
