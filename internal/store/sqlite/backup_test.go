package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// backupWorld is a database with a party in a channel.
func backupWorld(t *testing.T) *Engine {
	t.Helper()
	e, err := Open(context.Background(), filepath.Join(t.TempDir(), "data", "chat.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	seat(t, e)
	return e
}

// openBackup opens a copy read-only and checks it as a database.
func openBackup(t *testing.T, path string) *sql.DB {
	t.Helper()
	copyDB, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { copyDB.Close() })
	var check string
	if err := copyDB.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("backup %s: integrity_check %q %v", path, check, err)
	}
	return copyDB
}

func TestBackupIsAConsistentCopyTakenWhileOthersWrite(t *testing.T) {
	ctx := context.Background()
	db := backupWorld(t)
	// Another handle (as another process would) writes all the time.
	other, err := Open(ctx, db.Where(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	writes := 0
	writing := make(chan struct{}) // closed at its first commit
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := say(ctx, other, fmt.Sprint("w", writes)); err != nil {
				t.Error(err)
				return
			}
			if writes++; writes == 1 {
				close(writing)
			}
		}
	}()
	select {
	case <-writing:
	case <-time.After(time.Minute):
		t.Fatal("the other handle never wrote")
	}
	dir := filepath.Join(filepath.Dir(db.Where()), ".backups")
	// Noon, so that "a minute later" is the same day whenever the test runs.
	y, m, day := time.Now().Date()
	now := time.Date(y, m, day, 12, 0, 0, 0, time.Local)
	path, made, err := db.Backup(ctx, dir, 7, now)
	close(stop)
	wg.Wait()
	if err != nil || !made {
		t.Fatalf("backup: made=%v %v", made, err)
	}
	if want := filepath.Join(dir, "chat.db."+now.Format("20060102")); path != want {
		t.Fatalf("backup at %s, want %s", path, want)
	}
	copyDB := openBackup(t, path)
	var version, n, maxSeq int
	if err := copyDB.QueryRow(`SELECT version FROM schema_version`).Scan(&version); err != nil || version != engine.SchemaVersion() {
		t.Fatalf("backup schema version %d %v", version, err)
	}
	if err := copyDB.QueryRow(`SELECT count(*), coalesce(max(seq), 0) FROM messages`).Scan(&n, &maxSeq); err != nil || n == 0 || n != maxSeq {
		t.Fatalf("backup holds %d messages up to seq %d (%v): not one consistent snapshot", n, maxSeq, err)
	}
	t.Logf("backup taken during %d concurrent writes holds %d messages", writes, n)
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700 | os.ModeDir} {
		if info, err := os.Stat(p); err != nil || info.Mode() != want {
			t.Errorf("%s: mode %v, want %v (%v)", p, info.Mode(), want, err)
		}
	}

	// The same day again: no new copy, the first one untouched.
	before, _ := os.Stat(path)
	if _, made, err := db.Backup(ctx, dir, 7, now.Add(time.Minute)); made || err != nil {
		t.Fatalf("second backup the same day: made=%v %v", made, err)
	}
	after, _ := os.Stat(path)
	if !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
		t.Fatal("the day's backup was rewritten")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("backup folder holds %d files, want 1", len(entries))
	}
}

// The newest retain copies are kept, whichever names they have (six-digit
// dates from before, eight-digit ones now); no other file is touched.
func TestBackupKeepsTheNewestCopies(t *testing.T) {
	ctx := context.Background()
	db := backupWorld(t)
	dir := filepath.Join(filepath.Dir(db.Where()), ".backups")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 5, 10, 0, 0, 0, time.Local)
	day := func(d int) string { return "chat.db." + now.AddDate(0, 0, -d).Format("20060102") }
	oldDay := func(d int) string { return "chat.db." + now.AddDate(0, 0, -d).Format("060102") }
	old := now.Add(-2 * time.Hour)
	files := map[string]time.Time{
		day(1): now, oldDay(6): now, day(7): now, oldDay(10): now, day(400): now,
		"chat.db.notes": now, "other.db." + now.AddDate(0, 0, -30).Format("060102"): now,
		day(2) + ".tmp-123": old, // left by a killed backup
		day(0) + ".tmp-456": now, // another process's backup in progress
	}
	writeBackups(t, dir, files)
	if _, made, err := db.Backup(ctx, dir, 3, now); !made || err != nil {
		t.Fatalf("backup: made=%v %v", made, err)
	}
	want := []string{day(0), day(0) + ".tmp-456", day(1), oldDay(6), "chat.db.notes", "other.db." + now.AddDate(0, 0, -30).Format("060102")}
	if got := backupNames(t, dir); fmt.Sprint(got) != fmt.Sprint(sorted(want)) {
		t.Fatalf("after pruning to the newest 3 copies:\n got  %v\n want %v", got, sorted(want))
	}
}

// A clock that jumps forward once must not delete the backups: pruning
// keeps the newest copies by the date in their names, so one call dated
// 2031 must not make every other copy look old, nor one dated 2070, whose
// two-digit year (the older naming) could read back as 1970.
func TestBackupsSurviveAClockJump(t *testing.T) {
	ctx := context.Background()
	db := backupWorld(t)
	dir := filepath.Join(filepath.Dir(db.Where()), ".backups")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	today := time.Date(2026, 3, 7, 10, 0, 0, 0, time.Local)
	files := map[string]time.Time{}
	for d := range 7 {
		files["chat.db."+today.AddDate(0, 0, -d).Format("060102")] = today
	}
	writeBackups(t, dir, files)
	for _, jump := range []time.Time{time.Date(2031, 1, 1, 10, 0, 0, 0, time.Local), time.Date(2070, 1, 1, 10, 0, 0, 0, time.Local)} {
		path, made, err := db.Backup(ctx, dir, 7, jump)
		if !made || err != nil {
			t.Fatalf("backup at %v: made=%v %v", jump, made, err)
		}
		got := backupNames(t, dir)
		if len(got) != 7 || !slices.Contains(got, filepath.Base(path)) {
			t.Fatalf("after a backup at %v: %v, want the 7 newest including %s", jump.Year(), got, filepath.Base(path))
		}
	}
	// Back to the right time: the copies of the last days are still there.
	if got := backupNames(t, dir); !slices.Contains(got, "chat.db.260307") || !slices.Contains(got, "chat.db.260303") {
		t.Fatalf("the copies of the days before the jump are gone: %v", got)
	}
}

func writeBackups(t *testing.T, dir string, files map[string]time.Time) {
	t.Helper()
	for name, mtime := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mtime, mtime)
	}
}

func backupNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names // ReadDir sorts by name
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func TestDailyBackupOncePerDayAndNeverFailsACall(t *testing.T) {
	ctx := context.Background()
	db := backupWorld(t)
	dir := filepath.Join(filepath.Dir(db.Where()), ".backups")
	var mu sync.Mutex
	var failures []error
	db.DailyBackup(dir, 7, func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	})
	clock := time.Date(2026, 3, 5, 23, 59, 0, 0, time.Local)
	db.clock = func() time.Time { return clock }
	say := func() {
		t.Helper()
		if err := say(ctx, db, "x"); err != nil {
			t.Fatalf("a call failed: %v", err)
		}
		db.waitBackup()
	}
	count := func() int {
		entries, _ := os.ReadDir(dir)
		return len(entries)
	}
	say()
	first := filepath.Join(dir, "chat.db."+clock.Format("20060102"))
	openBackup(t, first)
	info1, _ := os.Stat(first)
	say()
	if info2, _ := os.Stat(first); count() != 1 || !info2.ModTime().Equal(info1.ModTime()) {
		t.Fatal("a second write the same day made another copy")
	}
	clock = clock.Add(2 * time.Minute) // the next day
	say()
	if count() != 2 {
		t.Fatalf("no copy on the next day: %d files", count())
	}

	// An unwritable backup folder (here: a file in its place) is reported,
	// once a day, and the calls go on.
	blocked := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db.DailyBackup(filepath.Join(blocked, ".backups"), 7, func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	})
	say()
	say()
	mu.Lock()
	defer mu.Unlock()
	if len(failures) != 1 || !strings.Contains(failures[0].Error(), "daily_backup") {
		t.Fatalf("want the failed backup reported once, saying how to turn it off; got %v", failures)
	}
}
