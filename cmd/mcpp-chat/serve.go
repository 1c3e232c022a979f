package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/wake"
	"github.com/mcpp/mcpp-chat/tools"
)

func serve(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flags("serve", "serve [--workspace DIR]\n\nServes the chat tools over MCP on stdin/stdout; logs go to stderr.", stderr)
	workspace := fs.String("workspace", "", "start folder for identity (default: $MCPP_CHAT_WORKSPACE, $CLAUDE_PROJECT_DIR, cwd)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	log := newLog(stderr)
	in, err := locate(getenv, *workspace)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat serve: %v\n", err)
		return exitError
	}
	svc, err := in.service(ctx, log)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat serve: %v\n", err)
		return exitError
	}
	defer svc.Close()
	svc.Turn = in.sessionTurn()
	// A party exists from its first tool call: a client that only starts
	// the server (claude mcp list, a probe) must not make one. The
	// instructions name it all the same, as it is or will be named.
	if svc.DB != nil {
		if name, err := svc.DB.NameFor(ctx, svc.Me); err == nil {
			svc.PartyName = name
		} else {
			log.Warn("could not look up the party's name", "err", err)
		}
		// Every serve runs the escalation ladder's clock; a member's hub
		// runs it for the member.
		defer startClock(ctx, svc.DB, in.cfg, svc.Changes, log)()
	}
	var member *hub.Client
	var changes changeFeed = svc.Changes
	if in.onHub() {
		// The hook and watchers on this machine learn of the hub's
		// changes through what serve keeps.
		c, err := in.hubClient()
		if err != nil {
			fmt.Fprintf(stderr, "mcpp-chat serve: %v\n", err)
			return exitError
		}
		member = c
		moved := &wake.Broadcast{}
		changes = moved
		defer followHub(in, c, log, stderr, moved.Notify)()
	}
	// Under Codex, serve rings the party's idle sessions (codexwake.go).
	bellCtx, stopBell := context.WithCancel(ctx)
	bell := startDoorbell(bellCtx, in, log)
	defer func() { stopBell(); bell.stop() }()
	// What the hook told this party's sessions, recorded as it arrives.
	defer foldTold(in, svc, member, log)()
	// While the session lives, so do its party's claims (claims.go).
	defer keepClaims(ctx, claimRenewal(svc.DB, svc.Me, member), changes, log)()
	stdinEnded := make(chan struct{})
	svc.StopWaiting = stdinEnded
	srv := tools.NewMCPServer(svc, version, log)
	if bell != nil {
		srv.AddReceivingMiddleware(bell.notesReads())
	}
	served := make(chan error, 1)
	go func() {
		served <- tools.Serve(ctx, srv, tools.GuardedStdio(stdin, stdout, func() { close(stdinEnded) }))
	}()
	if err := awaitEnd(ctx, served, stdinEnded, answerGrace(in.cfg.BusyTimeout())); err != nil {
		log.Warn("server stopped", "err", err)
	}
	return exitOK
}

// answerGrace is how long, once stdin has ended, the answers still due may
// take to be written: every call ends within the busy timeout, and
// chat_wait answers at once.
func answerGrace(busyTimeout time.Duration) time.Duration {
	return busyTimeout + 5*time.Second
}

// awaitEnd waits for the session to end. A client that stopped reading
// leaves the answers' writes blocked in the kernel, where nothing can end
// them, and the session would wait for them forever: after a signal
// (stopGrace) or the end of stdin (answerGrace) serve stops waiting,
// closes the database and exits.
func awaitEnd(ctx context.Context, served <-chan error, stdinEnded <-chan struct{}, answerGrace time.Duration) error {
	var grace <-chan time.Time
	signalled := ctx.Done()
	for {
		select {
		case err := <-served:
			return err
		case <-signalled:
			signalled = nil
			grace = time.After(stopGrace / 2) // before main's own deadline: the database still closes
		case <-stdinEnded:
			stdinEnded = nil
			if grace == nil {
				grace = time.After(answerGrace)
			}
		case <-grace:
			return errors.New("the client stopped reading: answers could not be written — exiting without them")
		}
	}
}
