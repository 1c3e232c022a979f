package sqlite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// backupDay is the date suffix of a backup file: <db file name>.<yyyymmdd>.
const backupDay = "20060102"

// oldBackupDay is the suffix copies had before: still read (a copy of today
// under it counts, and old copies are pruned in turn), never written. Two
// digits read a year of 2070 as 1970.
const oldBackupDay = "060102"

// staleTemp is how old an unfinished copy (a process killed mid-backup)
// must be before any process deletes it.
const staleTemp = time.Hour

// dailyBackup is the per-handle state of storage.daily_backup.
type dailyBackup struct {
	dir     string
	retain  int
	onError func(error)

	mu      sync.Mutex
	day     string // the last day this process made or found a backup
	running sync.WaitGroup
}

// DailyBackup makes every committed call check, once per day and process,
// that today's copy of the database exists in dir, and make it in the
// background if not, keeping the newest retainDays copies. A failed backup is
// reported to onError and never fails a call. Close waits for a running copy.
func (e *Engine) DailyBackup(dir string, retainDays int, onError func(error)) {
	e.backup = &dailyBackup{dir: dir, retain: retainDays, onError: onError}
}

// afterCommit starts today's backup if this process has not seen it yet.
// It costs a clock read and a string compare on every later commit.
func (e *Engine) afterCommit() {
	b := e.backup
	if b == nil {
		return
	}
	now := e.clock()
	day := now.Format(backupDay)
	b.mu.Lock()
	if b.day == day {
		b.mu.Unlock()
		return
	}
	b.day = day // one attempt per day: a failing backup is not retried on every call
	b.running.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.running.Done()
		if _, _, err := e.Backup(context.Background(), b.dir, b.retain, now); err != nil && b.onError != nil {
			b.onError(err)
		}
	}()
}

// waitBackup lets a running backup finish before the handle closes.
func (e *Engine) waitBackup() {
	if e.backup != nil {
		e.backup.running.Wait()
	}
}

// Backup copies the database to dir/<db file name>.<yyyymmdd of now> unless
// today's copy exists, then keeps the newest retainDays copies. The copy
// is a consistent snapshot taken with VACUUM INTO inside a read transaction,
// so writers in this and other processes go on meanwhile; it is written to a
// temporary owner-only file and renamed into place, so a crash never leaves
// a half copy under the day's name. made reports whether a copy was made.
func (e *Engine) Backup(ctx context.Context, dir string, retainDays int, now time.Time) (path string, made bool, err error) {
	base := filepath.Base(e.path)
	path = filepath.Join(dir, base+"."+now.Format(backupDay))
	if _, err := os.Lstat(path); err == nil {
		return path, false, nil
	}
	if old := filepath.Join(dir, base+"."+now.Format(oldBackupDay)); fileExists(old) {
		return old, false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return path, false, fmt.Errorf("cannot create the backup folder %s: %w — make it writable or set storage.daily_backup: false", dir, err)
	}
	if err := e.copyTo(ctx, path); err != nil {
		return path, false, err
	}
	return path, true, pruneBackups(dir, base, retainDays, now)
}

func (e *Engine) copyTo(ctx context.Context, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write a backup in %s: %w — make it writable or set storage.daily_backup: false", filepath.Dir(path), err)
	}
	tmp.Close() // VACUUM INTO writes into an existing file only if it is empty
	defer os.Remove(tmp.Name())
	if _, err := e.sql.ExecContext(ctx, `VACUUM INTO ?`, tmp.Name()); err != nil {
		return fmt.Errorf("back up %s to %s: %w", e.path, path, e.Describe(err))
	}
	if err := syncFile(tmp.Name()); err != nil {
		return fmt.Errorf("back up %s: %w", e.path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("back up %s: %w", e.path, err)
	}
	syncFile(filepath.Dir(path)) // the rename survives a power loss; best effort
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// pruneBackups keeps this database's newest retain copies, by the date in
// their names, and deletes the older ones, and temporary copies a killed
// process left behind. It touches no other file. Which copies are newest
// does not depend on the clock: a call made while the clock is years ahead
// adds one copy and deletes only the oldest, never all of them.
func pruneBackups(dir, base string, retain int, now time.Time) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list backups in %s: %w", dir, err)
	}
	dated := regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `\.([0-9]{8}|[0-9]{6})(\.tmp-[0-9]+)?$`)
	type backup struct {
		path string
		day  time.Time
	}
	var copies []backup
	var errs []error
	for _, e := range entries {
		match := dated.FindStringSubmatch(e.Name())
		if match == nil || !e.Type().IsRegular() {
			continue
		}
		full := filepath.Join(dir, e.Name())
		if match[2] != "" {
			if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > staleTemp {
				errs = append(errs, removeBackup(full))
			}
			continue
		}
		layout := backupDay
		if len(match[1]) == len(oldBackupDay) {
			layout = oldBackupDay
		}
		if day, err := time.ParseInLocation(layout, match[1], now.Location()); err == nil {
			copies = append(copies, backup{full, day})
		}
	}
	slices.SortFunc(copies, func(a, b backup) int {
		return cmp.Or(b.day.Compare(a.day), strings.Compare(b.path, a.path))
	})
	for _, c := range copies[min(max(retain, 1), len(copies)):] {
		errs = append(errs, removeBackup(c.path))
	}
	return errors.Join(errs...)
}

func removeBackup(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete old backup: %w", err)
	}
	return nil
}
