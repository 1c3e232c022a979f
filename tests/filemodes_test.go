package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// permissiveUmask runs the binaries under the common umask 022, with which
// anything not created owner-only on purpose comes out world-readable.
func permissiveUmask(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
}

// TestFilesAreOwnerOnly: the database folder we create, the database, its
// -wal and -shm (which SQLite creates and recreates), the tick file, the
// backup folder and the backup are readable by their owner only.
func TestFilesAreOwnerOnly(t *testing.T) {
	permissiveUmask(t)
	w := newWorld(t)
	dir := w.repo("mesh-gw")
	s := w.serve(dir) // holds the database open: -wal and -shm exist
	mustTool(t, s, "chat_channel_new", map[string]any{"name": "solo"})
	mustTool(t, s, "chat_say", map[string]any{"text": "hello"})

	data := filepath.Dir(w.db)
	backup := waitForBackup(t, filepath.Join(data, ".backups")) // made in the background after the first write
	want := map[string]os.FileMode{
		data:                 0o700,
		w.db:                 0o600,
		w.db + "-wal":        0o600,
		w.db + "-shm":        0o600,
		filepath.Dir(backup): 0o700,
		backup:               0o600,
		w.db + ".told":       0o700, // the hook's journal, which serve folds in
	}
	if tick := filepath.Join(data, ".tick"); fileExistsT(tick) {
		want[tick] = 0o600
	}
	for path, mode := range want {
		info, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if got := info.Mode().Perm(); got != mode {
			t.Errorf("%s has mode %04o, want %04o", path, got, mode)
		}
	}
}

// waitForBackup waits for the day's backup in dir and returns its path. It
// does not predict the name from the clock: a test running at midnight
// would look for the wrong day.
func waitForBackup(t *testing.T, dir string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if found, _ := filepath.Glob(filepath.Join(dir, "chat.db.[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]")); len(found) == 1 {
			return found[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no backup appeared in %s", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDoctorWarnsAboutAReadableDatabase: doctor flags a database other
// users can read, with the command that fixes it, and is quiet otherwise.
func TestDoctorWarnsAboutAReadableDatabase(t *testing.T) {
	w := newWorld(t)
	dir := w.repo("mesh-gw")
	w.mustCall(dir, "chat_whoami", nil, nil)
	doctor := func() string {
		cmd := exec.Command(chatBin, "doctor")
		cmd.Dir = dir
		cmd.Env = w.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("doctor: %v %s", err, out)
		}
		return string(out)
	}
	if out := doctor(); strings.Contains(out, "readable by other users") {
		t.Fatalf("doctor warns about an owner-only database:\n%s", out)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		if err := os.Chmod(w.db, mode); err != nil {
			t.Fatal(err)
		}
		out := doctor()
		if !strings.Contains(out, "readable by other users") || !strings.Contains(out, "chmod 600 "+w.db) {
			t.Fatalf("mode %04o: doctor does not warn with the fix:\n%s", mode, out)
		}
	}
}

// callWithStderr runs `mcpp-chat call` and returns its stdout JSON and its
// stderr separately.
func callWithStderr(t *testing.T, w *world, dir, tool string) (callResult, string) {
	t.Helper()
	cmd := exec.Command(chatBin, "call", tool)
	cmd.Dir = dir
	cmd.Env = w.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	var r callResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("call %s: %v: %q", tool, err, out)
	}
	return r, stderr.String()
}

// TestDailyBackupThroughTheBinary: the first write of the day leaves a
// copy that opens and passes integrity_check; later calls make no new copy;
// only the newest backup_retain_days copies stay, others' files stay; a backup
// folder that cannot be written is reported but never fails the call;
// daily_backup: false makes none.
func TestDailyBackupThroughTheBinary(t *testing.T) {
	w := newWorld(t)
	dir := w.repo("mesh-gw")
	backups := filepath.Join(filepath.Dir(w.db), ".backups")
	if err := os.MkdirAll(backups, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	day := func(d int) string { return filepath.Join(backups, "chat.db."+now.AddDate(0, 0, -d).Format("20060102")) }
	oldDay := func(d int) string { return filepath.Join(backups, "chat.db."+now.AddDate(0, 0, -d).Format("060102")) }
	writeFile(t, filepath.Join(backups, "keep.txt"), "old")
	for d := 3; d <= 10; d++ { // eight copies, in the older yymmdd naming
		writeFile(t, oldDay(d), "old")
	}
	w.mustCall(dir, "chat_whoami", nil, nil) // registers the party: a write
	today := day(0)
	if tomorrow := day(-1); fileExistsT(tomorrow) {
		today = tomorrow // the call ran past midnight
	}
	copyDB := roDB(t, today)
	checkIntegrity(t, copyDB)
	if n := dbInt(t, copyDB, `SELECT count(*) FROM parties WHERE name = 'mesh-gw'`); n != 1 {
		t.Fatalf("the backup lacks the day's first write (%d parties)", n)
	}
	copyDB.Close()
	if fileExistsT(oldDay(10)) || fileExistsT(oldDay(9)) || !fileExistsT(oldDay(8)) || !fileExistsT(oldDay(3)) || !fileExistsT(filepath.Join(backups, "keep.txt")) {
		t.Fatal("retention: want the newest 7 copies kept (today's and days 3 to 8), days 9 and 10 gone, keep.txt kept")
	}
	before, _ := os.Stat(today)
	w.mustCall(dir, "chat_channel_new", map[string]any{"name": "solo"}, nil)
	w.mustCall(dir, "chat_say", map[string]any{"text": "again"}, nil)
	after, _ := os.Stat(today)
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("a later call the same day made a new copy")
	}

	// A backup folder that cannot be created: the call succeeds anyway.
	w2 := newWorld(t)
	dir2 := w2.repo("mesh-gw")
	if err := os.MkdirAll(filepath.Dir(w2.db), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(filepath.Dir(w2.db), ".backups"), "a file where the folder should be")
	r, stderr := callWithStderr(t, w2, dir2, "chat_whoami")
	if !r.Success {
		t.Fatalf("a failed backup failed the call: %s", r.Error)
	}
	if !strings.Contains(stderr, "backup") || !strings.Contains(stderr, "daily_backup") {
		t.Fatalf("the failed backup was not reported on stderr: %q", stderr)
	}

	// daily_backup: false makes no copy.
	w3 := newWorld(t)
	w3.configure("storage:\n  daily_backup: false\n")
	w3.mustCall(w3.repo("mesh-gw"), "chat_whoami", nil, nil)
	if fileExistsT(filepath.Join(filepath.Dir(w3.db), ".backups")) {
		t.Fatal("daily_backup: false still made a backup folder")
	}
}
