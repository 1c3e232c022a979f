package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// exitBound only catches a process that does not stop at all; how quickly
// it stops is not asserted.
const exitBound = 60 * time.Second

// waitExit waits for cmd to end, or kills it and fails the test.
func waitExit(t *testing.T, cmd *exec.Cmd, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(exitBound):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s: still running %v later (killed)", what, exitBound)
	}
}

// A serve whose client sent requests and stopped reading the answers has
// its writes blocked in the kernel. It must still stop on SIGTERM, and
// when its stdin closes.
func TestServeStopsWhenItsClientStopsReading(t *testing.T) {
	for _, end := range []string{"SIGTERM", "stdin closed"} {
		t.Run(end, func(t *testing.T) {
			w := newWorld(t)
			cmd := exec.Command(chatBin, "serve")
			cmd.Dir = w.repo("mesh-gw")
			cmd.Env = w.env
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe() // never read
			if err != nil {
				t.Fatal(err)
			}
			defer stdout.Close()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var requests bytes.Buffer
			requests.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
			requests.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
			for i := range 100 { // far more answers than a pipe holds
				fmt.Fprintf(&requests, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", 10+i)
			}
			if _, err := stdin.Write(requests.Bytes()); err != nil {
				t.Fatal(err)
			}
			waitForBlockedWrite(t, cmd.Process.Pid)
			if end == "SIGTERM" {
				cmd.Process.Signal(syscall.SIGTERM)
			} else {
				stdin.Close()
			}
			waitExit(t, cmd, "serve after "+end)
		})
	}
}

// waitForBlockedWrite waits until the server sleeps in a write to its
// stdout: the pipe is full.
func waitForBlockedWrite(t *testing.T, pid int) {
	t.Helper()
	waitForProc(t, pid, "/proc/%d/task/*/wchan", "block in a write", fileHas("pipe_write"))
}

// waitForBlockedRead waits until the process sleeps in a read of a pipe
// (its stdin).
func waitForBlockedRead(t testing.TB, pid int) {
	t.Helper()
	waitForProc(t, pid, "/proc/%d/task/*/wchan", "block in a read", fileHas("pipe_read"))
}

// waitUntilWatching waits until the process watches the database's files
// (an inotify instance among its open files): chat_wait and the hook's
// waiter start watching just before their first look, so a change after
// this wakes them.
func waitUntilWatching(t testing.TB, pid int) {
	t.Helper()
	waitForProc(t, pid, "/proc/%d/fd/*", "watch the database", func(fd string) bool {
		target, _ := os.Readlink(fd)
		return target == "anon_inode:inotify"
	})
}

// fileHas reports whether a (/proc) file holds want.
func fileHas(want string) func(string) bool {
	return func(path string) bool {
		data, _ := os.ReadFile(path)
		return strings.Contains(string(data), want)
	}
}

// procBound bounds a wait for a state of another process.
const procBound = 10 * time.Second

// waitForProc waits until found holds for one of the files that pattern
// (with the pid for %d) names under /proc. Without /proc it waits a second
// instead. Past procBound it goes on, saying so: a process that does not
// show the state (no inotify left, a kernel naming its wait channels
// otherwise) then meets the test's assertions as it is.
func waitForProc(t testing.TB, pid int, pattern, what string, found func(path string) bool) {
	t.Helper()
	for deadline := time.Now().Add(procBound); ; time.Sleep(10 * time.Millisecond) {
		paths, err := filepath.Glob(fmt.Sprintf(pattern, pid))
		if err != nil || len(paths) == 0 {
			time.Sleep(time.Second) // no /proc here
			return
		}
		for _, p := range paths {
			if found(p) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Logf("process %d did not %s within %v; going on", pid, what, procBound)
			return
		}
	}
}

// `call TOOL -` waiting for a stdin that never ends stops on SIGTERM and
// says so as JSON, having done nothing.
func TestCallStopsOnASignalWhileWaitingForStdin(t *testing.T) {
	w := newWorld(t)
	cmd := exec.Command(chatBin, "call", "chat_say", "-")
	cmd.Dir = w.repo("mesh-gw")
	cmd.Env = w.env
	stdin, err := cmd.StdinPipe() // open, never written
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForBlockedRead(t, cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd, "call after SIGTERM")
	var r callResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Success || !strings.Contains(r.Error, "nothing was done") {
		t.Fatalf("call's answer after SIGTERM: %q (%v)", out.String(), err)
	}
	if _, err := os.Stat(w.db); err == nil {
		t.Fatal("the interrupted call created the database")
	}
}

// doctor with its config on a FIFO answers: opening a FIFO waits for a
// writer that may never come, and a blocked open() does not hear SIGTERM.
func TestDoctorWithItsConfigOnAFIFO(t *testing.T) {
	w := newWorld(t)
	fifo := filepath.Join(w.dir, "config.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	cmd := exec.Command(chatBin, "doctor")
	cmd.Dir = w.repo("mesh-gw")
	cmd.Env = append(w.env, "MCPP_CHAT_CONFIG="+fifo)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(time.Second, func() { cmd.Process.Signal(syscall.SIGTERM) })
	waitExit(t, cmd, "doctor with a FIFO config")
	if !strings.Contains(out.String(), "named pipe") {
		t.Fatalf("doctor does not say what is wrong:\n%s", out.String())
	}
}
