//go:build linux || darwin

package hook

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestLookProcess(t *testing.T) {
	if p := lookProcess(os.Getpid()); !p.live || p.ppid != os.Getppid() {
		t.Fatalf("this process: %+v, want live with parent %d", p, os.Getppid())
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if p := lookProcess(pid); !p.live || p.ppid != os.Getpid() {
		t.Fatalf("a running child: %+v", p)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if p := lookProcess(pid); p.live {
		t.Fatalf("a reaped child: %+v, want gone", p)
	}
}

// With CLAUDE_PID the waiter watches Claude Code's process itself.
func TestSessionGoneWhenClaudeCodeExits(t *testing.T) {
	claude := exec.Command("sleep", "30")
	if err := claude.Start(); err != nil {
		t.Fatal(err)
	}
	defer claude.Process.Kill()
	w := watchSession(func(k string) string {
		if k == "CLAUDE_PID" {
			return strconv.Itoa(claude.Process.Pid)
		}
		return ""
	})
	if w.claude != claude.Process.Pid {
		t.Fatalf("watching %+v, want Claude Code's pid %d", w, claude.Process.Pid)
	}
	if w.gone() {
		t.Fatal("gone while Claude Code runs")
	}
	claude.Process.Kill()
	claude.Wait()
	if !w.gone() {
		t.Fatal("not gone after Claude Code exited")
	}
}

// A CLAUDE_PID that names no process, or this one, is not watched.
func TestSessionIgnoresABadClaudePID(t *testing.T) {
	for _, v := range []string{"", "x", "1", strconv.Itoa(os.Getpid())} {
		w := watchSession(func(k string) string {
			if k == "CLAUDE_PID" {
				return v
			}
			return ""
		})
		if w.claude != 0 || w.gone() {
			t.Errorf("CLAUDE_PID=%q: %+v, gone %v", v, w, w.gone())
		}
	}
}
