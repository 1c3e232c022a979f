package main

import (
	"context"
	"io"
	"os"

	"github.com/mcpp/mcpp-chat/hook"
	"github.com/mcpp/mcpp-chat/internal/listen"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// hookCmd is the hook for a team store: mcpp-chat-hook hands it every
// event when the store is on PostgreSQL, whose driver this binary links.
func hookCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	exe, _ := os.Executable()
	return hook.Command(ctx, args, version, hook.Options{
		Name: "mcpp-chat hook", Env: getenv, Exe: exe, Stdin: stdin, Stdout: stdout, Stderr: stderr,
		TeamStore:   store.OpenReadOnlyPostgres,
		TeamChanges: func(url string) hook.Changes { return listen.New(url) },
		TeamHub:     hookHubPending(getenv),
		HubChanges:  hookHubChanges(getenv),
	})
}
