package sqlite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ClaimsMarkSuffix is appended to a database file's path to name the file
// that says until when a claim on a path may be live: the hook reads it
// before every edit, and while it names no time still to come, lets the
// edit pass without opening SQLite (engine.PathClaimMarks). A file of one
// line, the time; missing when no path was ever claimed on this database.
const ClaimsMarkSuffix = ".claims"

// maxMark bounds what a reader takes of the mark: one time stamp.
const maxMark = 128

// MarkPathClaims writes until into the mark, inside the transaction that
// makes it true: a writing call on SQLite is alone, so marks are written
// in commit order, each before its commit. The mark is replaced in one
// step (a reader sees the old line or the new one) and kept as it is when
// it already says until.
func (t *tx) MarkPathClaims(until string) error {
	if t.claimsMark == "" {
		return errors.New("a read-only transaction marks no claims")
	}
	line := []byte(until + "\n")
	if old, err := os.ReadFile(t.claimsMark); err == nil && bytes.Equal(old, line) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(t.claimsMark), "."+filepath.Base(t.claimsMark)+".*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("mark the path claims: %w", err)
	}
	_, err = tmp.Write(line)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), t.claimsMark)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("mark the path claims: %w", err)
	}
	return nil
}

// PathClaimsUntil reads the mark beside the database file at db: the time
// until which a claim on a path may be live ("" when none was ever made).
// ok is false when the mark cannot be read: then any claim may be live.
func PathClaimsUntil(db string) (until string, ok bool) {
	f, err := os.Open(db + ClaimsMarkSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return "", true
	}
	if err != nil {
		return "", false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMark+1))
	if err != nil || len(data) > maxMark {
		return "", false
	}
	return string(bytes.TrimSpace(data)), true
}
