package sqlite

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"
)

// Fingerprint names the committed state of the database at path without
// opening SQLite: it changes whenever a committed write becomes visible, so
// a caller that saw the same fingerprint before knows nothing was written
// since. ok is false when it cannot tell (no file, a -wal without a
// readable, initialised WAL-index); the caller must then read the database.
//
// It reads what SQLite itself uses to notice writes by other connections
// (https://sqlite.org/walformat.html, https://sqlite.org/fileformat.html):
//   - with a -wal, the WAL-index header at the start of the -shm file: its
//     change counter, last commit frame and salts move with every commit, and
//     SQLite writes it twice so that a torn read shows as two unequal copies;
//     the -wal's and the file's stat are added, for a writer that died
//     between appending its commit and publishing it and for a WAL started
//     afresh, and are trusted only once old enough (see trusted);
//   - without one (every connection has closed, and the last one folded the
//     log into the file), the file's modification and change times, which
//     that checkpoint moved — trusted only once they are older than a clock
//     tick of the file system, so that a later write cannot share them —
//     and the header's change counter, which commits outside WAL mode bump.
//
// The hook uses it to skip opening SQLite — most of its run time — when
// nothing was written since it last told the session everything.
func Fingerprint(path string) (fp string, ok bool) {
	return fingerprintAt(path, time.Now())
}

// fingerprintAt is Fingerprint with the files' times judged at now.
func fingerprintAt(path string, now time.Time) (fp string, ok bool) {
	db, err := stampOf(path)
	if err != nil {
		return "", false
	}
	head, err := readPrefix(path, 100)
	if err != nil || !isSQLite(head) {
		return "", false
	}
	fp = fmt.Sprintf("%s|db %d %d %x %x", path, db.ino, db.size, head[24:32], head[92:100])
	wal, err := stampOf(path + "-wal")
	if err != nil {
		if !trusted(db, now) {
			return "", false
		}
		return fmt.Sprintf("%s|no-wal %d %d", fp, db.mtime.UnixNano(), db.ctime.UnixNano()), true
	}
	shm, err := readPrefix(path+"-shm", 96)
	if err != nil || !bytes.Equal(shm[:48], shm[48:96]) || shm[12] != 1 {
		return "", false // not initialised, or caught mid-write: read the database
	}
	// A fresh, empty WAL has the same header every time, and its file can
	// come back with the same inode: after "commit, last connection closes
	// (checkpoint, -wal deleted), another opens" only the -wal's and the
	// file's times differ from before, so both must be trusted.
	if !trusted(wal, now) || !trusted(db, now) {
		return "", false
	}
	return fmt.Sprintf("%s|times %d %d|wal %d %d %d %d|shm %s", fp, db.mtime.UnixNano(), db.ctime.UnixNano(),
		wal.ino, wal.size, wal.mtime.UnixNano(), wal.ctime.UnixNano(), hex.EncodeToString(shm[:48])), true
}

// readPrefix reads the first n bytes of a file.
func readPrefix(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// CommitMark names the last commit published in the database's WAL-index
// (the header of its -shm file) and the database file's own state, for a
// watcher that hears of many writes per commit (the -wal's frames, then its
// looks again while the commit becomes visible) and must tell a new commit
// from a look again. Unlike Fingerprint it leaves out the -wal's stat,
// which moves with every frame of a commit still being written, and needs
// no time to pass after a commit: a mark that moved means a commit (or a
// checkpoint that restarted the log). ok is false when the files cannot
// tell: no -wal, an uninitialised or torn WAL-index. The database file's
// own stat is in the mark too, so a checkpoint moves it (a look too many,
// never one too few); its times need no trusting, since commits show in
// the WAL-index header. It is meant for looks
// moments apart: a writer that died between appending its commit and
// publishing it leaves the mark as it was.
func CommitMark(path string) (mark string, ok bool) {
	db, err := stampOf(path)
	if err != nil || !fileExists(path+"-wal") {
		return "", false
	}
	shm, err := readPrefix(path+"-shm", 96)
	if err != nil || !bytes.Equal(shm[:48], shm[48:96]) || shm[12] != 1 {
		return "", false
	}
	return fmt.Sprintf("db %d %d %d %d|shm %s", db.ino, db.size, db.mtime.UnixNano(), db.ctime.UnixNano(), hex.EncodeToString(shm[:48])), true
}
