// Command mcpp-chat-hook is the Claude Code and Codex hook: run on
// SessionStart, UserPromptSubmit and Stop, it tells the session what waits
// on its repository in the chat. It only reads, and it never fails a session:
// on any error it prints nothing and exits 0.
package main

import (
	"context"
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

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	exe, _ := os.Executable()
	return hook.Command(ctx, args, version, hook.Options{Env: getenv, Exe: exe, Stdin: stdin, Stdout: stdout, Stderr: stderr})
}
