package hook

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
)

var usage = fmt.Sprintf(`mcpp-chat-hook — tells a Claude Code session what waits on its repository in mcpp-chat

Usage (the hook payload JSON comes on stdin):
  mcpp-chat-hook --event SessionStart|UserPromptSubmit|Stop
  mcpp-chat-hook --event Stop --wait [--timeout %d]   (for "asyncRewake": true)
  mcpp-chat-hook --version

It always exits %d and prints nothing on any error; --wait exits %d when a
peer waits on the session. See docs/hooks.md.
`, int(DefaultWaitTimeout/time.Second), ExitOK, ExitWake)

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
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(o.Stdout, usage)
		}
		return ExitOK
	}
	if *showVersion {
		fmt.Fprintf(o.Stdout, "mcpp-chat-hook %s\n", version)
		return ExitOK
	}
	o.Event, o.Wait, o.Timeout = *event, *wait, time.Duration(*timeout)*time.Second
	return Run(ctx, o)
}

// ForTeamStore reports an install whose store is a team store on
// PostgreSQL, which the hook binary hands to `mcpp-chat hook`.
func ForTeamStore(env config.Env, exe string) bool {
	paths, _, err := config.Resolve(env, exe)
	return err == nil && config.IsPostgres(paths.Store)
}

// Delegate runs `mcpp-chat hook ARGS` beside the hook binary exe, with
// this process's streams, and returns its exit code; 0 when it cannot run
// (the hook never fails a session).
func Delegate(ctx context.Context, exe string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := exec.CommandContext(ctx, filepath.Join(filepath.Dir(exe), "mcpp-chat"), append([]string{"hook"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Env = os.Environ()
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == ExitWake {
		return ExitWake
	}
	return ExitOK
}
