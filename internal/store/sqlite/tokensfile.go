package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"

	"github.com/mcpp/mcpp-chat/internal/store/engine"

	"context"
)

// A SQLite hub's tokens live in <db>.hub, and it must never be any other
// file. SQLite follows a symbolic link: one at <db>.hub to chat.db had
// hub_tokens made inside the chat, and one to any other database put the
// table there. So the file is taken as the search index's is
// (searchfile.go): only when its path names a regular file of this
// user's, made owner-only if missing and never through a link; each
// connection checks that SQLite opened that very file, and that it holds
// the tokens' table or nothing, before anything that could write.

// tokenSidecars are the files SQLite keeps beside the token file.
var tokenSidecars = []string{"-journal", "-wal", "-shm"}

// openTokenFile opens the token file at path, refusing one it must not
// use with a StorageError that says what to do.
func openTokenFile(path string) (*sql.DB, error) {
	info, err := tokenFile(path)
	if err != nil {
		return nil, err
	}
	name := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_txlock=deferred"
	db, err := driver.Open(name, func(c *sqlite3.Conn) error {
		if err := c.BusyTimeout(engine.DefaultBusyTimeout); err != nil {
			return err
		}
		if err := checkTokensOpened(c, path, info); err != nil {
			return err
		}
		return c.Exec(`PRAGMA synchronous = full`)
	})
	if err != nil {
		return nil, fmt.Errorf("open the hub's tokens %s: %w", path, err)
	}
	return db, nil
}

// tokenFile makes sure path names a file the tokens may live in, and
// returns it as found.
func tokenFile(path string) (fs.FileInfo, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = createIndexFile(path); err == nil || errors.Is(err, fs.ErrExist) {
			info, err = os.Lstat(path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot make the hub's token file %s: %w — give your user write access to its folder", path, err)
	}
	if err := checkTokenFile(path, info); err != nil {
		return nil, err
	}
	for _, side := range tokenSidecars {
		if info, err := os.Lstat(path + side); err == nil {
			if err := checkTokenFile(path+side, info); err != nil {
				return nil, err
			}
		}
	}
	return info, nil
}

// checkTokenFile refuses a file the tokens must not be opened in.
func checkTokenFile(name string, info fs.FileInfo) error {
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return engine.StorageErrorf("the hub's token file %s is a symbolic link, and it is never opened through one (tokens would land in whatever it points to) — put the file itself there instead of the link, or remove the link (what it points to stays as it is) and issue the tokens again (mcpp-chat hub token issue)", name)
	case !info.Mode().IsRegular():
		return engine.StorageErrorf("the hub's token file %s is not a regular file — move it aside and issue the tokens again (mcpp-chat hub token issue)", name)
	case !ownedByMe(info):
		return engine.StorageErrorf("the hub's token file %s belongs to another user, who could add a token of their own — move it aside and issue the tokens again (mcpp-chat hub token issue)", name)
	}
	return nil
}

// checkTokensOpened runs on every new connection of the token file: SQLite
// must have opened the file tokenFile checked, and it must hold the
// tokens' table or nothing.
func checkTokensOpened(c *sqlite3.Conn, path string, want fs.FileInfo) error {
	got, err := openedFile(c)
	if err != nil {
		return fmt.Errorf("the hub's token file %s: %w", path, err)
	}
	if !os.SameFile(got, want) || !got.Mode().IsRegular() {
		return engine.StorageErrorf("the hub's token file %s was replaced while it was being opened — check who else writes there, then run the command again", path)
	}
	// The names and the size in pages in one statement, one snapshot: a
	// hub starting beside this one may be making the table.
	rows, err := column(c, `SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'
		UNION ALL SELECT '' WHERE (SELECT page_count FROM pragma_page_count()) > 0`)
	if err != nil {
		return fmt.Errorf("the hub's token file %s: %w", path, err)
	}
	var foreign []string
	for _, n := range rows {
		if n != "hub_tokens" && n != "" {
			foreign = append(foreign, n)
		}
	}
	if len(rows) == 1 && rows[0] == "" {
		// Pages but no table: not a file this hub made (empty until its
		// table is in) — a database whose tables are in a -wal of
		// another name, say.
		foreign = []string{"none that can be seen, in a file that is not empty"}
	}
	if len(foreign) > 0 {
		return engine.StorageErrorf("the hub's token file %s holds tables that are not the hub's tokens (%s), so it was left as it is — is it another name for a database? Move it aside and issue the tokens again (mcpp-chat hub token issue)", path, strings.Join(foreign, ", "))
	}
	return nil
}

// TokenDB is where a SQLite hub keeps its tokens (engine.TokenStore): the
// file <db>.hub beside the database, never the chat's own file, opened as
// openTokenFile allows.
func (e *Engine) TokenDB(ctx context.Context) (*sql.DB, func(string) string, func() error, error) {
	db, err := openTokenFile(e.path + ".hub")
	if err != nil {
		return nil, nil, nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	return db, nil, db.Close, nil
}

// HubTokens is the token file a SQLite hub kept beside the database the
// reader reads, for migrate to carry the tokens over; nil where no hub
// ever ran (the reader makes no file). It is opened as a hub opens it,
// with the same checks.
func (r *Reader) HubTokens(ctx context.Context) (*sql.DB, error) {
	path := r.path + ".hub"
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	db, err := openTokenFile(path)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open the hub's tokens %s: %w", path, err)
	}
	return db, nil
}
