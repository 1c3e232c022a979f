package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/web"
)

const uiSynopsis = `ui [--listen 127.0.0.1:PORT] [--allow-remote] [--allow-host NAME]...

A live web page of the chat for the person who runs it: the channels with
each party's unread count, a channel's threads with their items' states
(who still owes an ack, the resolve or a prune-ok), the archived threads, a
search box, and when each party was last active. New messages appear
without a reload. It only reads: no cursor moves, no party is made.

It listens on this machine's loopback address only; --allow-remote lets it
listen elsewhere (anyone who reaches the port then reads every message).
It answers only requests for the address it listens on (and localhost's
names on loopback, any of this machine's IP addresses on 0.0.0.0 or ::),
so that a web page whose name is made to resolve here reads nothing;
--allow-host NAME adds a name it is reached by (a DNS name, or a proxy's).
Ctrl-C stops it.`

// uiListen is the default address: loopback, a port of our own.
const uiListen = "127.0.0.1:7431"

func uiCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("ui", uiSynopsis, stderr)
	listen := fs.String("listen", uiListen, "serve on `ADDRESS` (host:port; port 0 picks a free one)")
	remote := fs.Bool("allow-remote", false, "allow a non-loopback --listen address")
	var hosts multiFlag
	fs.Var(&hosts, "allow-host", "answer requests for `NAME` or NAME:PORT too (repeat for several)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	if err := checkListen(*listen, *remote); err != nil {
		fmt.Fprintf(stderr, "mcpp-chat ui: %v\n", err)
		return exitUsage
	}
	if err := runUI(ctx, getenv, *listen, hosts, stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "mcpp-chat ui: %v\n", err)
		return exitError
	}
	fmt.Fprintln(stdout, "mcpp-chat ui: stopped")
	return exitOK
}

// checkListen refuses an address other machines could reach, unless asked.
func checkListen(listen string, remote bool) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q is not host:port — e.g. --listen %s", listen, uiListen)
	}
	if remote || loopback(host) {
		return nil
	}
	return fmt.Errorf("--listen %s is not a loopback address, and the page shows every message of the chat to whoever reaches it — listen on 127.0.0.1 (the default), or pass --allow-remote if that is what you want", listen)
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func runUI(ctx context.Context, getenv func(string) string, listen string, hosts []string, stdout io.Writer) error {
	in, err := locate(getenv, "")
	if err != nil {
		return err
	}
	r, err := openWhenThere(ctx, in, nil, "")
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := in.changes()
	if err != nil {
		return err
	}
	defer w.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (%v) — pick another port with --listen 127.0.0.1:PORT, or 127.0.0.1:0 for any free one", listen, err)
	}
	srv, err := web.New(r, web.Options{Changes: w, Listen: ln.Addr().String(), Hosts: hosts, Home: getenv("HOME")})
	if err != nil {
		ln.Close()
		return err
	}
	go srv.Run(ctx)
	fmt.Fprintf(stdout, "mcpp-chat ui: http://%s/ shows %s — Ctrl-C stops it\n", ln.Addr(), in.where())
	return web.Serve(ctx, ln, srv.Handler())
}
