package turns

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestWriteThenRead(t *testing.T) {
	dir := t.TempDir()
	c := Client{PID: 4242, Start: 7}
	if _, ok := Read(dir, c, "/srv/gw"); ok {
		t.Fatal("a record that was never written")
	}
	want := Turn{Chain: NewChain(), Hop: 3, Cause: Wake, At: time.Now().UTC().Truncate(time.Second)}
	if err := Write(dir, c, "/srv/gw", want); err != nil {
		t.Fatal(err)
	}
	got, ok := Read(dir, c, "/srv/gw")
	if !ok || got != want {
		t.Errorf("read %+v %v, want %+v", got, ok, want)
	}
	if _, ok := Read(dir, Client{PID: 4242, Start: 8}, "/srv/gw"); ok {
		t.Error("another process with the same pid reads the record")
	}
	if _, ok := Read(dir, c, "/srv/dash"); ok {
		t.Error("another party reads the record")
	}
	if a, b := NewChain(), NewChain(); a == b || len(a) != 16 {
		t.Errorf("chains %q %q", a, b)
	}
}

// A hook runs under `sh -c` under the client, and may hand its event to
// mcpp-chat hook; the server runs under the client itself. Both find the
// same client: here, this test's process stands for the client, and a
// shell under it for the hook's.
func TestClientOfSkipsTheShell(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the client is found through /proc")
	}
	self, ok := look(os.Getpid())
	if !ok {
		t.Fatal("cannot read this process")
	}
	cmd := exec.Command("sh", "-c", "sleep 5; true") // a second command: sh stays, as under Claude Code

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sleeper := waitForChild(t, cmd.Process.Pid)
	if sleeper == cmd.Process.Pid {
		t.Fatal("sh did not stay between this process and its command")
	}
	c, ok := ClientOf(sleeper)
	if !ok || c.PID != os.Getpid() || c.Start != self.start {
		t.Errorf("the client of sleep under sh = %+v %v, want pid %d", c, ok, os.Getpid())
	}
}

// waitForChild is sh's child, or sh itself once it exec'd its command.
func waitForChild(t *testing.T, sh int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if p, ok := look(sh); ok && p.comm == "sleep" {
			return sh
		}
		data, _ := os.ReadFile("/proc/" + strconv.Itoa(sh) + "/task/" + strconv.Itoa(sh) + "/children")
		if f := strings.Fields(string(data)); len(f) > 0 {
			pid, _ := strconv.Atoi(f[0])
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("sh started no child")
	return 0
}
