package codexwake

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startCodex runs a shell copied to a file named codex — a process /proc
// shows as Codex — with args, in dir, with env; it ends with the test.
func startCodex(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "codex")
	data, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh to stand in for Codex")
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir, cmd.Env = dir, env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// childOf waits (bounded) for pid's child and returns its id.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if f := strings.Fields(string(data)); len(f) > 0 {
			child, _ := strconv.Atoi(f[0])
			return child
		}
	}
	t.Fatalf("process %d started no child", pid)
	return 0
}

// A hook or server finds the Codex process above it, whatever runs in
// between, with what the doorbell needs of it.
func TestFindClientWalksUpToCodex(t *testing.T) {
	home := t.TempDir()
	codex := startCodex(t, t.TempDir(), []string{"CODEX_HOME=" + home, "PATH=/usr/bin:/bin"}, "-c", "sh -c 'sleep 60; :'; :")
	shell := childOf(t, codex.Process.Pid)
	sleeper := childOf(t, shell)
	c, ok := FindClient(sleeper)
	if !ok {
		t.Fatal("no Codex found above the process")
	}
	if c.PID != codex.Process.Pid || c.Kind != KindInterface || c.CodexHome != home || !isCodexExe(c.Exe) || !Alive(c.Process) {
		t.Errorf("found %+v, want the codex process %d, an interface, CODEX_HOME %s", c, codex.Process.Pid, home)
	}
	if _, ok := FindClient(os.Getpid()); ok {
		t.Error("the test itself runs under Codex?")
	}
	codex.Process.Kill()
	codex.Wait()
	if Alive(c.Process) {
		t.Error("an ended process is alive")
	}
}

// Claude Code started by Codex (a command of Codex's runs claude): its
// hooks and servers are Claude Code's, not Codex's.
func TestFindClientStopsAtClaudeCode(t *testing.T) {
	claude := filepath.Join(t.TempDir(), "claude")
	data, _ := os.ReadFile("/bin/sh")
	if err := os.WriteFile(claude, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// "; :" keeps each shell from replacing itself with its last command.
	codex := startCodex(t, t.TempDir(), []string{"PATH=/usr/bin:/bin"}, "-c", claude+" -c 'sleep 60; :'; :")
	under := childOf(t, codex.Process.Pid)
	sleeper := childOf(t, under)
	if exe, _ := os.Readlink("/proc/" + strconv.Itoa(under) + "/exe"); exe != claude {
		t.Fatalf("the process between is %s, not the stand-in for Claude Code", exe)
	}
	if c, ok := FindClient(sleeper); ok {
		t.Errorf("under Claude Code under Codex, found %+v", c)
	}
	if c, ok := FindClient(under); !ok || c.PID != codex.Process.Pid {
		t.Errorf("Claude Code itself runs under Codex %d, found %+v", codex.Process.Pid, c)
	}
}
