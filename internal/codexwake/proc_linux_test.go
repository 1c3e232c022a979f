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
	codex := startCodex(t, t.TempDir(), []string{"CODEX_HOME=" + home, "PATH=/usr/bin:/bin"}, "-c", "sh -c 'sleep 60'")
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

// The interfaces that could show a thread of the party: interactive
// Codex processes of the same Codex folder working in the party's
// folder, as the process's folder or -C says.
func TestInterfacesCountsTheTerminalsOfTheParty(t *testing.T) {
	home, repo, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	partyOf := func(dir string) string {
		if strings.HasPrefix(dir, repo) {
			return repo
		}
		return dir
	}
	server := Client{Process: Process{PID: 1}, Kind: KindServer, CodexHome: home}
	before := Interfaces(server, repo, partyOf)
	env := []string{"CODEX_HOME=" + home}
	startCodex(t, repo, env, "-c", "sleep 60")                                 // in the party's folder
	startCodex(t, elsewhere, env, "-c", "sleep 60", "-C", repo)                // -C names it
	startCodex(t, repo, []string{"CODEX_HOME=" + elsewhere}, "-c", "sleep 60") // another Codex folder
	startCodex(t, elsewhere, env, "-c", "sleep 60")                            // another folder
	startCodex(t, repo, env, "-c", "sleep 60", "exec")                         // nobody sits at it
	deadline := time.Now().Add(10 * time.Second)
	for Interfaces(server, repo, partyOf)-before != 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := Interfaces(server, repo, partyOf) - before; n != 2 {
		t.Errorf("%d terminals of the party counted, want 2", n)
	}
	if n := Interfaces(Client{Kind: KindOther}, repo, partyOf); n != 0 {
		t.Errorf("under codex exec, %d terminals", n)
	}
}
