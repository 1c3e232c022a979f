package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// smallDisk mounts a 2 MiB tmpfs at a new folder for the test, or skips
// where mounting is not allowed (it needs root).
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small disk here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file until the disk is full and returns it.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			return path
		}
	}
}

// A full disk: a write says what happened, that nothing was written and
// what still works — SQLite's own "disk I/O error" says none of it; a
// plain chat_read moves the cursor, so it is a write too, while a peek
// still reads; once there is room again, writes go on.
func TestDiskFull(t *testing.T) {
	disk := smallDisk(t)
	w := newWorld(t)
	w.db = filepath.Join(disk, "chat.db")
	w.env = append(w.env, "MCPP_CHAT_DB="+w.db)
	dash := w.repo("node-dash")
	w.mustCall(dash, "chat_whoami", nil, nil)
	gw := w.serve(w.repo("mesh-gw"))
	mustTool(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}})
	w.mustCall(dash, "chat_say", map[string]any{"text": "unread for mesh-gw"}, nil)

	filler := fill(t, disk)
	big := strings.Repeat("x", 8000)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{"chat_say", map[string]any{"text": big}}, {"chat_read", map[string]any{}}} {
		_, e := toolCall(t, gw, c.tool, c.args, nil)
		if !strings.Contains(e, "the disk holding "+disk+" is full") || !strings.Contains(e, "nothing was written") || !strings.Contains(e, "peek=true") {
			t.Errorf("%s on a full disk: %q", c.tool, e)
		}
	}
	if _, e := toolCall(t, gw, "chat_read", map[string]any{"peek": true}, nil); e != "" {
		t.Errorf("chat_read peek=true on a full disk: %s", e)
	}
	os.Remove(filler)
	mustTool(t, gw, "chat_say", map[string]any{"text": big})
	mustTool(t, gw, "chat_read", map[string]any{})
}
