//go:build linux

package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A waiter outlives a Claude Code killed with SIGKILL unless it watches
// for it: Claude Code runs the hook under `/bin/sh -c`, that shell survives
// (re-parented to PID 1), and the waiter's own parent never changes. Here
// bash stands in for Claude Code, runs the hook the same way and is killed.
func TestHookWaitEndsWithItsSession(t *testing.T) {
	w, _, dash := hookPair(t)
	reasonOf(t, w.event(dash, "s1", "Stop")) // reported: the waiter does not wake for it
	payload := filepath.Join(t.TempDir(), "payload.json")
	data, _ := json.Marshal(hookPayload("s1", "Stop", dash))
	if err := os.WriteFile(payload, data, 0o600); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`/bin/sh -c "'%s' --event Stop --wait --timeout 120" < '%s' & wait`, hookBin, payload)
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dash
	cmd.Env = append(append([]string{}, w.env...), "CLAUDE_PROJECT_DIR="+dash)
	// A file, not a pipe: the shell and the waiter inherit it, and Wait
	// would wait for a pipe's last writer, the waiter, to end.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := waitForClaim(t, w, exited)
	t.Cleanup(func() {
		if processLive(pid) {
			syscall.Kill(pid, syscall.SIGKILL) // the waiter this test started; its shell then ends too
		}
	})
	if parent := parentOf(pid); parent == cmd.Process.Pid {
		t.Fatalf("the waiter's parent is bash itself, not the /bin/sh -c wrapper: the test would not show the fault")
	}

	cmd.Process.Kill()
	<-exited
	for deadline := time.Now().Add(20 * time.Second); processLive(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the waiter (pid %d) is still running after its session was killed", pid)
		}
	}
	if said, _ := os.ReadFile(stderr.Name()); len(said) != 0 {
		t.Fatalf("the waiter said %q; want a silent exit", said)
	}
}

// processLive reports a process that has not exited (a zombie has).
func processLive(pid int) bool {
	state, _ := procStat(pid)
	return state != "" && state != "Z" && state != "X"
}

func parentOf(pid int) int {
	_, ppid := procStat(pid)
	return ppid
}

// procStat reads the state and parent from /proc/<pid>/stat; "" when the
// process is gone.
func procStat(pid int) (state string, ppid int) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(data, ')')
	if err != nil || i < 0 {
		return "", 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return "", 0
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid
}
