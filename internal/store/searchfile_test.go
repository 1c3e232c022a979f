package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chatSchema is the chat database's schema as sqlite_master lists it.
func chatSchema(t *testing.T, db *DB) string {
	t.Helper()
	rows, err := rawSQL(db).Query(`SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, text string
		if err := rows.Scan(&typ, &name, &text); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %s\n", typ, name, text)
	}
	return b.String()
}

// filesIn is every file of dir with a digest of its bytes: what a test
// compares to show that nothing there was touched.
func filesIn(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%x", sha256.Sum256(data))
	}
	return out
}

// sqliteFile makes an SQLite database at path (rollback journal, as most
// applications leave theirs) holding the statements' tables.
func sqliteFile(t *testing.T, path string, statements string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(statements); err != nil {
		t.Fatal(err)
	}
}

// refusedIndex asserts the error a search gives for an index path it must
// not use: a StorageError that names the file and says what to do.
func refusedIndex(t *testing.T, err error, index, why string) {
	t.Helper()
	var se *StorageError
	if !errors.As(err, &se) {
		t.Fatalf("want a refusal naming %s, got %v", index, err)
	}
	for _, want := range []string{index, why, "the next search makes the index anew"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
}

// A search never opens its index through a symbolic link: linked to the
// chat, it made its tables there; linked to another database, it dropped
// one of that database's tables.
func TestSearchIndexNeverOpensALink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("to the chat", func(t *testing.T) {
		db := world(t)
		must(t)(db.Say(ctx, gw, SayArgs{Text: "armadillo", Channel: "gw--dash"}))
		index := db.Path() + SearchIndexSuffix
		before := chatSchema(t, db)
		if err := os.Symlink(db.Path(), index); err != nil {
			t.Fatal(err)
		}
		_, err := openRO(t, db.Path()).Search(ctx, SearchArgs{Query: "armadillo"})
		refusedIndex(t, err, index, "symbolic link")
		_, err = db.Search(ctx, gw, SearchArgs{Query: "armadillo"})
		refusedIndex(t, err, index, "symbolic link")
		if after := chatSchema(t, db); after != before {
			t.Fatalf("the chat's schema changed:\n%s\nwas:\n%s", after, before)
		}
	})
	t.Run("to another database", func(t *testing.T) {
		db := world(t)
		must(t)(db.Say(ctx, gw, SayArgs{Text: "armadillo", Channel: "gw--dash"}))
		elsewhere := t.TempDir()
		other := filepath.Join(elsewhere, "notes.db")
		sqliteFile(t, other, `CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO docs (body) VALUES ('keep me')`)
		before := filesIn(t, elsewhere)
		index := db.Path() + SearchIndexSuffix
		if err := os.Symlink(other, index); err != nil {
			t.Fatal(err)
		}
		_, err := openRO(t, db.Path()).Search(ctx, SearchArgs{Query: "armadillo"})
		refusedIndex(t, err, index, "symbolic link")
		if after := filesIn(t, elsewhere); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("the other database's folder changed: %v, was %v", after, before)
		}
	})
	t.Run("beside it", func(t *testing.T) {
		db := world(t)
		must(t)(db.Say(ctx, gw, SayArgs{Text: "armadillo", Channel: "gw--dash"}))
		elsewhere := t.TempDir()
		target := filepath.Join(elsewhere, "precious")
		if err := os.WriteFile(target, []byte("not a log"), 0o600); err != nil {
			t.Fatal(err)
		}
		wal := db.Path() + SearchIndexSuffix + "-wal"
		if err := os.Symlink(target, wal); err != nil {
			t.Fatal(err)
		}
		_, err := openRO(t, db.Path()).Search(ctx, SearchArgs{Query: "armadillo"})
		refusedIndex(t, err, wal, "symbolic link")
		if data, _ := os.ReadFile(target); string(data) != "not a log" {
			t.Fatalf("the link's target was written: %q", data)
		}
	})
}

// A regular file of ours at the index's path that holds another
// database's tables is refused and left byte for byte as it was.
func TestSearchIndexLeavesAForeignFileAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, statements := range map[string]string{
		"tables of other names": `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')`,
		"an index's names but no index version": `CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO docs (body) VALUES ('keep me');
			CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)`,
		"a meta table of another shape": `CREATE TABLE meta (name TEXT, value TEXT)`,
	} {
		t.Run(name, func(t *testing.T) {
			db := world(t)
			must(t)(db.Say(ctx, gw, SayArgs{Text: "armadillo", Channel: "gw--dash"}))
			index := db.Path() + SearchIndexSuffix
			sqliteFile(t, index, statements)
			data, _ := os.ReadFile(index)
			_, err := openRO(t, db.Path()).Search(ctx, SearchArgs{Query: "armadillo"})
			refusedIndex(t, err, index, "not a search index's")
			if now, _ := os.ReadFile(index); string(now) != string(data) {
				t.Fatal("the foreign file was written")
			}
			for _, side := range []string{"-wal", "-shm"} {
				if _, err := os.Lstat(index + side); err == nil {
					t.Fatalf("%s made beside the foreign file", side)
				}
			}
		})
	}
}

// Only a regular file of the user's own is an index.
func TestSearchIndexRefusesWhatIsNotAFileOfMine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("a folder", func(t *testing.T) {
		db := world(t)
		index := db.Path() + SearchIndexSuffix
		if err := os.Mkdir(index, 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := openRO(t, db.Path()).Search(ctx, SearchArgs{Query: "armadillo"})
		refusedIndex(t, err, index, "not a regular file")
	})
	t.Run("another user's", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("only root can give a file to another user")
		}
		db := world(t)
		must(t)(db.Say(ctx, gw, SayArgs{Text: "armadillo", Channel: "gw--dash"}))
		r := openRO(t, db.Path())
		must(t)(r.Search(ctx, SearchArgs{Query: "armadillo"}))
		r.Close()
		index := db.Path() + SearchIndexSuffix
		if err := os.Chown(index, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := openRO(t, db.Path()).Search(ctx, SearchArgs{Query: "armadillo"})
		refusedIndex(t, err, index, "belongs to another user")
	})
}

// An index damaged past its first pages (its header and meta table still
// readable, so it opens) is found out by the search that reads it, removed
// and made anew; it used to fail every search, for good.
func TestSearchIndexDamagedAfterItsHeaderIsRebuilt(t *testing.T) {
	t.Parallel()
	db := world(t)
	ctx := context.Background()
	must(t)(db.Say(ctx, gw, SayArgs{Text: "armadillo", Channel: "gw--dash"}))
	r := openRO(t, db.Path())
	must(t)(r.Search(ctx, SearchArgs{Query: "armadillo"}))
	r.Close() // the last connection checkpoints: the whole index is in the file
	index := db.Path() + SearchIndexSuffix
	garbleIndexPages(t, index)

	r2 := openRO(t, db.Path())
	for range 2 {
		if got := must2[SearchResult](t)(r2.Search(ctx, SearchArgs{Query: "armadillo"})); got.Total != 1 {
			t.Fatalf("after the damage: %+v", got)
		}
	}
}

// garbleIndexPages overwrites every page of the index but the first (the
// header and the schema) and the meta table's.
func garbleIndexPages(t *testing.T, index string) {
	t.Helper()
	if _, err := os.Lstat(index + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the index has a -wal still (%v): the damage would not be read", err)
	}
	x, err := sql.Open("sqlite3", "file:"+index+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	var pageSize, metaPage int64
	err = x.QueryRow(`SELECT (SELECT page_size FROM pragma_page_size), (SELECT rootpage FROM sqlite_master WHERE name = 'meta')`).Scan(&pageSize, &metaPage)
	x.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(index, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	garbage := []byte(strings.Repeat("\xde\xad\xbe\xef", int(pageSize)/4))
	for page := int64(2); page*pageSize <= info.Size(); page++ {
		if page == metaPage {
			continue
		}
		if _, err := f.WriteAt(garbage, (page-1)*pageSize); err != nil {
			t.Fatal(err)
		}
	}
}
