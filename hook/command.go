package hook

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
)

// usage is the hook's --help as the command named name (mcpp-chat-hook,
// or mcpp-chat hook) prints it.
func usage(name string) string {
	what := "tells a Claude Code session what waits on its repository in mcpp-chat"
	if name != binaryName {
		what = "the Claude Code hook for a team store or hub: " + binaryName + " hands it the events it cannot answer itself (it does not link PostgreSQL's driver, to stay fast)"
	}
	return fmt.Sprintf(`%[1]s — %[2]s

Usage (the hook payload JSON comes on stdin):
  %[1]s --event SessionStart|UserPromptSubmit|Stop|PreToolUse
  %[1]s --event Stop --wait [--timeout %[3]d]   (for "asyncRewake": true)
  %[1]s --version

It always exits %[4]d and prints nothing on any error; --wait exits %[5]d when a
peer waits on the session. See docs/hooks.md.
`, name, what, int(DefaultWaitTimeout/time.Second), ExitOK, ExitWake)
}

// binaryName is the hook's own binary.
const binaryName = "mcpp-chat-hook"

// Command is the hook's command line, shared by mcpp-chat-hook and
// `mcpp-chat hook`: it parses args into o (Env, Exe, the streams and the
// team-store fields are the caller's) and runs the hook.
func Command(ctx context.Context, args []string, version string, o Options) int {
	fs := flag.NewFlagSet("mcpp-chat-hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a hook's stray output would reach the session
	event := fs.String("event", "", "hook event name (default: the payload's hook_event_name)")
	wait := fs.Bool("wait", false, fmt.Sprintf("block until a peer waits on this session, then exit %d", ExitWake))
	timeout := fs.Int("timeout", int(DefaultWaitTimeout/time.Second), "seconds --wait blocks at most")
	showVersion := fs.Bool("version", false, "print the version")
	name := o.Name
	if name == "" {
		name = binaryName
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(o.Stdout, usage(name))
		}
		return ExitOK
	}
	if *showVersion {
		fmt.Fprintf(o.Stdout, "%s %s\n", name, version)
		return ExitOK
	}
	// The install is resolved once, here, for the run to use: a team
	// store is read through PostgreSQL's driver, which the hook binary
	// does not link (it would slow every prompt of every other install),
	// so its events go to `mcpp-chat hook`.
	paths, cfg, err := config.Resolve(o.Env, o.Exe)
	if err == nil && config.IsPostgres(paths.Store) && o.TeamStore == nil {
		return delegate(ctx, args, o)
	}
	if err == nil && config.IsHub(paths.Store) && o.TeamHub == nil {
		// A member machine: the cache the running serve keeps answers
		// here; without a fresh one, and for --wait, the hub itself is
		// asked, by `mcpp-chat hook`.
		if *wait {
			return delegate(ctx, args, o)
		}
		data, ok := readWithin(o.Stdin, o.deadline())
		if !ok {
			return ExitOK
		}
		o.Stdin = bytes.NewReader(data)
		c, ok := freshHubCache(o, paths, cfg, data)
		if !ok {
			return delegate(ctx, args, o)
		}
		o.hubCache = &c
	}
	o.resolved = &resolved{paths: paths, cfg: cfg, err: err}
	o.Event, o.Wait, o.Timeout = *event, *wait, time.Duration(*timeout)*time.Second
	return Run(ctx, o)
}

// readWithin reads all of r, giving up after d.
func readWithin(r io.Reader, d time.Duration) ([]byte, bool) {
	done := make(chan []byte, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(r, maxPayload+1))
		if err != nil {
			data = nil
		}
		done <- data
	}()
	select {
	case data := <-done:
		return data, data != nil
	case <-time.After(d):
		return nil, false
	}
}

// freshHubCache is the fresh cache of the payload's session's party on
// this member machine, if there is one.
func freshHubCache(o Options, paths config.Paths, cfg config.Config, payload []byte) (HubCache, bool) {
	pl, err := ReadPayload(bytes.NewReader(payload))
	if err != nil {
		return HubCache{}, false
	}
	party, err := config.Identify(config.StartDir(o.Env, "", pl.Cwd), cfg.Identity.GitRoot)
	if err != nil {
		return HubCache{}, false
	}
	return o.cachedFor(paths, party.Name)
}

// delegate runs `mcpp-chat hook ARGS` beside the hook binary, with this
// process's streams, and returns its exit code; 0 when it cannot run (the
// hook never fails a session).
func delegate(ctx context.Context, args []string, o Options) int {
	cmd := exec.CommandContext(ctx, filepath.Join(filepath.Dir(o.Exe), "mcpp-chat"), append([]string{"hook"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == ExitWake {
		return ExitWake
	}
	return ExitOK
}
