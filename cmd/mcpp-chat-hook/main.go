// Command mcpp-chat-hook is the Claude Code hook: run on SessionStart,
// UserPromptSubmit and Stop, it tells the session what waits on its
// repository in the chat. It only reads, and it never fails a session:
// on any error it prints nothing and exits 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpp/mcpp-chat/hook"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go exitAfterSignal(ctx)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitAfterSignal ends the hook a second after SIGINT or SIGTERM if it has
// not ended by then (a write Claude Code no longer reads). The hook only
// reads the chat, so there is nothing to finish; it exits 0, as always.
func exitAfterSignal(ctx context.Context) {
	<-ctx.Done()
	time.Sleep(time.Second)
	os.Exit(hook.ExitOK)
}

var usage = fmt.Sprintf(`mcpp-chat-hook — tells a Claude Code session what waits on its repository in mcpp-chat

Usage (the hook payload JSON comes on stdin):
  mcpp-chat-hook --event SessionStart|UserPromptSubmit|Stop
  mcpp-chat-hook --event Stop --wait [--timeout %d]   (for "asyncRewake": true)
  mcpp-chat-hook --version

It always exits %d and prints nothing on any error; --wait exits %d when a
peer waits on the session. See docs/hooks.md.
`, int(hook.DefaultWaitTimeout/time.Second), hook.ExitOK, hook.ExitWake)

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpp-chat-hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a hook's stray output would reach the session
	event := fs.String("event", "", "hook event name (default: the payload's hook_event_name)")
	wait := fs.Bool("wait", false, fmt.Sprintf("block until a peer waits on this session, then exit %d", hook.ExitWake))
	timeout := fs.Int("timeout", int(hook.DefaultWaitTimeout/time.Second), "seconds --wait blocks at most")
	showVersion := fs.Bool("version", false, "print the version")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, usage)
		}
		return hook.ExitOK
	}
	if *showVersion {
		fmt.Fprintf(stdout, "mcpp-chat-hook %s\n", version)
		return hook.ExitOK
	}
	exe, _ := os.Executable()
	return hook.Run(ctx, hook.Options{
		Event:   *event,
		Wait:    *wait,
		Timeout: time.Duration(*timeout) * time.Second,
		Env:     getenv,
		Exe:     exe,
		Stdin:   stdin,
		Stdout:  stdout,
		Stderr:  stderr,
	})
}
