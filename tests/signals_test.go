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

// waitForBlockedWrite gives the server time to fill the pipe. Where /proc
// tells, it waits until the server sleeps in a write; elsewhere a second.
func waitForBlockedWrite(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
		if err != nil || len(tasks) == 0 {
			time.Sleep(time.Second)
			return
		}
		for _, task := range tasks {
			if wchan, _ := os.ReadFile(task); strings.Contains(string(wchan), "pipe_write") {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
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
	time.Sleep(300 * time.Millisecond)
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
