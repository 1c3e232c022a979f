package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// The index file is the one file beside the database that a search may
// create tables in, drop them from, and delete — and it must never be any
// other file. SQLite opens a database by path and follows a symbolic link
// to wherever it points: an index path linked to chat.db made a search
// create its tables inside the chat, and one linked to another database
// dropped a table there. So the index is opened only when its path names
// a regular file of this user's; each connection checks that SQLite opened
// that very file (a link or another file put there since fails the check)
// and that it holds an index's tables or none, before any statement that
// could write to it.

// indexSidecars are the files SQLite keeps beside an index, and opens
// without asking.
var indexSidecars = []string{"-wal", "-shm", "-journal"}

// indexTables are the names an index holds: its own tables and the ones
// FTS5 keeps for hits.
var indexTables = map[string]bool{
	"meta": true, "docs": true, "hits": true,
	"hits_data": true, "hits_idx": true, "hits_content": true, "hits_docsize": true, "hits_config": true,
}

// errIndexReplaced reports that the file at the index's path is no longer
// the one checked: replaced between the check and SQLite's open, or since.
var errIndexReplaced = errors.New("the search index file was replaced while it was being opened")

// indexFile makes sure the index's path names a file the index may live
// in — a regular file of this user's, made empty and owner-only if missing
// — and returns it as found, for the open to be checked against. A path
// the index must not use is refused with a StorageError that says what to
// do; any other error means no file can be made here.
func indexFile(path string) (fs.FileInfo, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = createIndexFile(path); err == nil || errors.Is(err, fs.ErrExist) {
			info, err = os.Lstat(path)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := checkIndexFile(path, info); err != nil {
		return nil, err
	}
	for _, side := range indexSidecars {
		if info, err := os.Lstat(path + side); err == nil {
			if err := checkIndexFile(path+side, info); err != nil {
				return nil, err
			}
		}
	}
	return info, nil
}

// createIndexFile makes an empty index file, owner-only, and never through
// a link planted at the path.
func createIndexFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|noFollow, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// checkIndexFile refuses a file the index must not be opened in.
func checkIndexFile(name string, info fs.FileInfo) error {
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return engine.StorageErrorf("the search index %s is a symbolic link, and an index is never opened through one — remove the link (what it points to stays as it is); the next search makes the index anew as a file of its own", name)
	case !info.Mode().IsRegular():
		return engine.StorageErrorf("the search index %s is not a regular file — move it aside; the next search makes the index anew", name)
	case !ownedByMe(info):
		return engine.StorageErrorf("the search index %s belongs to another user — remove it or move it aside; the next search makes the index anew as yours", name)
	}
	return nil
}

// checkOpened runs on every new connection of an index, before anything
// that could write: SQLite must have opened the file indexFile checked,
// and the file must hold an index's tables or none.
func checkOpened(c *sqlite3.Conn, path string, want fs.FileInfo) error {
	got, err := openedFile(c)
	if err != nil {
		return fmt.Errorf("search index %s: %w", path, err)
	}
	if !os.SameFile(got, want) || !got.Mode().IsRegular() {
		return fmt.Errorf("%w: %s", errIndexReplaced, path)
	}
	foreign, err := foreignTables(c)
	if err != nil {
		return err
	}
	if len(foreign) > 0 {
		return engine.StorageErrorf("the search index %s holds tables that are not a search index's (%s), so it was left as it is — move it aside (or remove it if it is nobody's); the next search makes the index anew", path, strings.Join(foreign, ", "))
	}
	return nil
}

// openedFile is the file SQLite opened as the connection's main database.
// Stat on it is fstat: the file behind the descriptor, whatever the path
// names by now.
func openedFile(c *sqlite3.Conn) (fs.FileInfo, error) {
	f, err := c.FileControl("main", sqlite3.FCNTL_FILE_POINTER)
	if err != nil {
		return nil, err
	}
	for {
		if s, ok := f.(interface{ Stat() (fs.FileInfo, error) }); ok {
			return s.Stat()
		}
		u, ok := f.(vfs.FileUnwrap)
		if !ok {
			return nil, fmt.Errorf("cannot tell which file SQLite opened (%T)", f)
		}
		f = u.Unwrap()
	}
}

// foreignTables lists what the file holds that an index does not: every
// table of another name, and, when it has tables of the index's names,
// any sign that it is not an index after all (no meta table with a
// version: an index gets both in the transaction that makes it).
func foreignTables(c *sqlite3.Conn) ([]string, error) {
	names, err := column(c, `SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	var foreign []string
	for _, n := range names {
		if !indexTables[n] {
			foreign = append(foreign, n)
		}
	}
	if len(foreign) > 0 {
		return foreign, nil
	}
	if !slices.Contains(names, "meta") {
		return names, nil
	}
	version, err := column(c, `SELECT value FROM meta WHERE key = 'version'`)
	switch {
	case isCorrupt(err):
		return nil, err
	case err != nil || len(version) == 0: // a meta table of another shape, or without a version
		return names, nil
	}
	return nil, nil
}

// column runs a query of one text column on a bare connection.
func column(c *sqlite3.Conn, query string) ([]string, error) {
	st, _, err := c.Prepare(query)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var out []string
	for st.Step() {
		out = append(out, st.ColumnText(0))
	}
	return out, st.Err()
}

// damagedIndex is an index SQLite cannot read (SQLITE_CORRUPT or NOTADB):
// derived data of ours, removed and made anew by the next search.
type damagedIndex struct {
	path string
	info fs.FileInfo // the file found damaged
	err  error
}

func (e *damagedIndex) Error() string {
	return fmt.Sprintf("the search index %s is damaged (%v) and could not be made anew — remove it and the files named like it with -wal and -shm; the next search rebuilds it", e.path, e.err)
}

func (e *damagedIndex) Unwrap() error { return e.err }

// remove deletes the damaged file, if the path still names it: another
// process may have put a sound index there meanwhile.
func (e *damagedIndex) remove() {
	if info, err := os.Lstat(e.path); err == nil && os.SameFile(info, e.info) {
		removeIndexFiles(e.path)
	}
}

func removeIndexFiles(path string) {
	os.Remove(path)
	for _, side := range indexSidecars {
		os.Remove(path + side)
	}
}

// isCorrupt reports SQLite's errors for a file it cannot read as a
// database.
func isCorrupt(err error) bool {
	return errors.Is(err, sqlite3.CORRUPT) || errors.Is(err, sqlite3.NOTADB)
}
