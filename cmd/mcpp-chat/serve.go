package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/mcpp/mcpp-chat/tools"
)

func serve(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flags("serve", "serve [--workspace DIR]\n\nServes the chat tools over MCP on stdin/stdout; logs go to stderr.", stderr)
	workspace := fs.String("workspace", "", "start folder for identity (default: $MCPP_CHAT_WORKSPACE, $CLAUDE_PROJECT_DIR, cwd)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	in, err := resolve(getenv, *workspace)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat serve: %v\n", err)
		return exitError
	}
	svc, err := in.service(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat serve: %v\n", err)
		return exitError
	}
	defer svc.DB.Close()
	if name, err := svc.DB.Register(ctx, svc.Me); err == nil {
		svc.Me.Name = name
	} else {
		log.Warn("could not register the party yet", "err", err)
	}
	stopWaiting := make(chan struct{})
	svc.StopWaiting = stopWaiting
	srv := tools.NewMCPServer(svc, version, log)
	if err := tools.Serve(ctx, srv, tools.GuardedStdio(stdin, stdout, func() { close(stopWaiting) })); err != nil {
		log.Warn("server stopped", "err", err)
	}
	return exitOK
}
