package hook

import (
	"os"
	"strconv"

	"github.com/mcpp/mcpp-chat/internal/config"
)

// sessionWatch tells a waiter that the Claude Code session it serves is
// gone. Claude Code runs a hook command under `/bin/sh -c`, in a session of
// its own: killed with SIGKILL, Claude Code leaves that shell running,
// re-parented to PID 1 (or a subreaper), so the waiter's own parent never
// changes. What does change is the shell's parent, and Claude Code's
// process itself disappears.
type sessionWatch struct {
	parent int // the waiter's parent at start: Claude Code or its shell
	// grandparent is the parent's parent at start (0: unknown). Watched
	// only when the parent is not Claude Code itself: Claude Code being
	// re-parented (its own parent exited) does not end the session.
	grandparent int
	claude      int // Claude Code's process (CLAUDE_PID), 0 when not known
}

// watchSession notes the processes the waiter's session consists of now.
func watchSession(env config.Env) sessionWatch {
	w := sessionWatch{parent: os.Getppid()}
	if pid, err := strconv.Atoi(env("CLAUDE_PID")); err == nil && pid > 1 && pid != os.Getpid() && lookProcess(pid).live {
		w.claude = pid
	}
	if w.parent > 1 && w.parent != w.claude {
		w.grandparent = lookProcess(w.parent).ppid
	}
	return w
}

// gone reports that the session ended: the waiter's parent changed, Claude
// Code's process is gone, or the parent (the shell) lost its own parent.
func (w sessionWatch) gone() bool {
	if os.Getppid() != w.parent {
		return true
	}
	if w.claude != 0 && !lookProcess(w.claude).live {
		return true
	}
	if w.grandparent > 1 {
		p := lookProcess(w.parent)
		return !p.live || (p.ppid != 0 && p.ppid != w.grandparent)
	}
	return false
}

// process is what the waiter can learn about another process; a field it
// cannot learn on this system keeps its safe value (live, ppid 0).
type process struct {
	live bool // not exited (a zombie has exited)
	ppid int  // its parent, 0 when unknown
}
