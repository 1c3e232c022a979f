package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"sync"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"
)

// The full-text index lives in its own file beside the database,
// <db>.search, and never in the database itself:
//
//   - searching must not write the chat database (a person's view and an
//     agent's search are reads);
//   - the schema is shared with the Python edition, whose SQLite may lack
//     FTS5: an FTS table (or a trigger feeding one) in chat.db could make
//     its writes fail;
//   - it is derived data: deleting it loses nothing, and a missing or
//     damaged one is made anew from the messages, as is one made for
//     another database. A file that is not an index of ours is never
//     written: see searchfile.go.
//
// It is brought up to date on each search from a high-water mark, the
// newest message id indexed: ids only grow (AUTOINCREMENT), and a row's
// indexed text (body, title, slug) never changes after it is written, so
// new rows are all there is to add — whichever edition wrote them. The one
// thing that changes later is whether a row is archived; that is checked
// by count and synced when the count moved. Several processes may search
// at once: each step is one BEGIN IMMEDIATE transaction on the index file.

// SearchIndexSuffix is appended to the database's path to name its index.
const SearchIndexSuffix = ".search"

// searchIndexVersion names the layout below; an index of another layout
// is dropped and rebuilt.
const searchIndexVersion = "1"

// searchBatch and searchBatchBytes bound what one indexing step reads and
// writes — so many messages, or the first to reach so much text — so that
// a first index of a large history never holds the index's write lock, a
// read snapshot of the chat (which keeps a checkpoint from finishing) or
// memory for long, and processes indexing at the same time take turns.
// Five thousand bodies of 64 KiB were 320 MB in one read.
const (
	searchBatch      = 5000
	searchBatchBytes = 4 << 20
)

const searchSchema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docs (
	id         INTEGER PRIMARY KEY, -- messages.id
	channel_id INTEGER NOT NULL,
	archived   INTEGER NOT NULL,
	title      TEXT NOT NULL,
	slug       TEXT NOT NULL,
	body       TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS hits USING fts5(title, slug, body,
	content = 'docs', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2');
`

// searchIndex is an open index file.
type searchIndex struct {
	path string      // "" for an index kept in memory
	info fs.FileInfo // the file opened, as indexFile found it
	db   *sql.DB
	// mu lets one search of this process bring the index up to date at a
	// time; the others wait for it here instead of on the file's lock.
	mu sync.Mutex
}

// openSearchIndex opens (creating it if needed) the index of the database
// at dbPath. One that cannot be made beside the database (a folder the
// user may not write) is kept in memory for this process instead. A path
// the index must not use is refused, and one SQLite cannot read comes back
// as a *damagedIndex, for the caller to remove and open again.
func openSearchIndex(ctx context.Context, dbPath string) (*searchIndex, error) {
	path := dbPath + SearchIndexSuffix
	x, err := openIndexFile(ctx, path)
	var se *StorageError
	var damaged *damagedIndex
	if err == nil || errors.As(err, &se) || errors.As(err, &damaged) || errors.Is(err, errIndexReplaced) {
		return x, err
	}
	return openIndexMemory(ctx)
}

func openIndexFile(ctx context.Context, path string) (*searchIndex, error) {
	info, err := indexFile(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("_txlock", "immediate")
	db, err := driver.Open("file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode(),
		func(c *sqlite3.Conn) error { return setUpIndexConn(c, path, info) })
	if err != nil {
		return nil, fmt.Errorf("open the search index %s: %w", path, err)
	}
	x := &searchIndex{path: path, info: info, db: db}
	if err := x.prepare(ctx); err != nil {
		db.Close()
		if isCorrupt(err) {
			return nil, &damagedIndex{path: path, info: info, err: err}
		}
		return nil, err
	}
	return x, nil
}

// setUpIndexConn checks what a new connection opened (checkOpened) and
// only then sets it up: even switching to WAL writes to the file.
func setUpIndexConn(c *sqlite3.Conn, path string, info fs.FileInfo) error {
	if err := fts5.Register(c); err != nil {
		return err
	}
	if err := c.BusyTimeout(DefaultBusyTimeout); err != nil {
		return err
	}
	if err := checkOpened(c, path, info); err != nil {
		return err
	}
	// synchronous=normal: derived data, a lost tail is indexed again.
	return c.Exec(`PRAGMA journal_mode = wal; PRAGMA synchronous = normal`)
}

// movedAway reports that the index's path no longer names the file this
// index has open: removed, or replaced (another process made a damaged
// index anew). Searching on would use a file nobody else sees.
func (x *searchIndex) movedAway() bool {
	if x.path == "" {
		return false
	}
	info, err := os.Lstat(x.path)
	return err != nil || !os.SameFile(info, x.info)
}

// damaged is err, as a *damagedIndex when it says the index file cannot
// be read. Errors of the chat database read beside it (fromChat) are left
// as they are: the chat is not ours to remove.
func (x *searchIndex) damaged(err error) error {
	var chat fromChat
	if x.path == "" || !isCorrupt(err) || errors.As(err, &chat) {
		return err
	}
	return &damagedIndex{path: x.path, info: x.info, err: err}
}

// fromChat marks an error of the chat database met while indexing.
type fromChat struct{ error }

func (e fromChat) Unwrap() error { return e.error }

// openIndexMemory is an index for this process alone, rebuilt by its first
// search.
func openIndexMemory(ctx context.Context) (*searchIndex, error) {
	db, err := driver.Open("file::memory:?_txlock=immediate", fts5.Register)
	if err != nil {
		return nil, fmt.Errorf("open an in-memory search index: %w", err)
	}
	db.SetMaxOpenConns(1) // each connection would have its own memory
	x := &searchIndex{db: db}
	if err := x.prepare(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return x, nil
}

// prepare creates the tables, or drops an index of another layout and
// creates them afresh.
// It is one transaction, so that two processes opening a new index at once
// never drop what the other has just made.
func (x *searchIndex) prepare(ctx context.Context) error {
	itx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer itx.Rollback()
	if _, err := itx.ExecContext(ctx, searchSchema); err != nil {
		return err
	}
	version, err := x.meta(ctx, itx, "version")
	if err != nil {
		return err
	}
	if version != searchIndexVersion {
		if err := x.reset(ctx, itx); err != nil {
			return err
		}
	}
	return itx.Commit()
}

// reset empties the index: everything is indexed again from message 1.
func (x *searchIndex) reset(ctx context.Context, q execer) error {
	_, err := q.ExecContext(ctx, `DROP TABLE IF EXISTS hits; DROP TABLE IF EXISTS docs; DELETE FROM meta;`+searchSchema+
		`INSERT INTO meta (key, value) VALUES ('version', '`+searchIndexVersion+`')`)
	return err
}

func (x *searchIndex) close() error { return x.db.Close() }

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// meta reads a value of the meta table; a missing one is "".
func (x *searchIndex) meta(ctx context.Context, q execer, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

func setMeta(ctx context.Context, q execer, key, value string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?1, ?2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}

// mark is where the index stands: the newest message indexed, that
// message's time (a database replaced by another has other times), and
// how many archived rows the chat had up to it.
type mark struct {
	id       int64
	at       string
	archived int64
}

func (x *searchIndex) readMark(ctx context.Context, q execer) (mark, error) {
	var m mark
	var err error
	get := func(key string) string {
		if err != nil {
			return ""
		}
		var v string
		v, err = x.meta(ctx, q, key)
		return v
	}
	m.id, _ = strconv.ParseInt(get("hwm"), 10, 64)
	m.at = get("hwm_at")
	m.archived, _ = strconv.ParseInt(get("archived"), 10, 64)
	return m, err
}

func writeMark(ctx context.Context, q execer, m mark) error {
	for key, v := range map[string]string{"hwm": strconv.FormatInt(m.id, 10), "hwm_at": m.at, "archived": strconv.FormatInt(m.archived, 10)} {
		if err := setMeta(ctx, q, key, v); err != nil {
			return err
		}
	}
	return nil
}

// catchUp indexes what the chat database at dbPath holds beyond the mark.
// When the database's Fingerprint is the one the index was last brought
// up to date at, nothing was written since and it reads nothing.
func (x *searchIndex) catchUp(ctx context.Context, src reader, dbPath string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.damaged(x.catchUpLocked(ctx, src, dbPath))
}

func (x *searchIndex) catchUpLocked(ctx context.Context, src reader, dbPath string) error {
	fp, known := Fingerprint(dbPath)
	if known {
		if last, err := x.meta(ctx, x.db, "fingerprint"); err == nil && last == fp {
			return nil
		}
	}
	for {
		more, err := x.step(ctx, src)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	if !known {
		fp = ""
	}
	return setMeta(ctx, x.db, "fingerprint", fp)
}

// newDoc is a message about to be indexed.
type newDoc struct {
	id, channelID    int64
	kind             string
	archived         bool
	at               string
	title, slug, msg string
}

// step indexes one batch in one transaction of the index; more reports
// that the chat holds more messages beyond it.
func (x *searchIndex) step(ctx context.Context, src reader) (more bool, err error) {
	itx, err := x.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock): one indexer at a time
	if err != nil {
		return false, fmt.Errorf("search index: %w", err)
	}
	defer itx.Rollback()
	m, err := x.readMark(ctx, itx)
	if err != nil {
		return false, err
	}
	var batch []newDoc
	var full bool           // the batch stopped at a bound: more may follow
	var nowArchived []int64 // set when rows up to the mark were archived since
	var replaced bool
	next := m
	err = src.read(ctx, func(t *tx) error {
		var err error
		batch, full, nowArchived, next = nil, false, nil, m
		if replaced, err = t.replacedSince(m); err != nil || replaced {
			return err
		}
		if batch, full, err = t.docsAfter(m.id, searchBatch, searchBatchBytes); err != nil {
			return err
		}
		if n := len(batch); n > 0 {
			next.id, next.at = batch[n-1].id, batch[n-1].at
		}
		var before int64
		if err := t.row(`SELECT count(*) FILTER (WHERE id <= ?1), count(*) FROM messages WHERE is_archived = 1 AND id <= ?2`,
			m.id, next.id).Scan(&before, &next.archived); err != nil {
			return err
		}
		if before == m.archived {
			return nil
		}
		// Rows already indexed were archived since (or the count went
		// back: a database replaced under the index): list them all.
		if before < m.archived {
			replaced = true
			return nil
		}
		return t.archivedUpTo(m.id, &nowArchived)
	})
	if err != nil {
		return false, fromChat{err}
	}
	if replaced {
		if err := x.reset(ctx, itx); err != nil {
			return false, err
		}
		return true, itx.Commit()
	}
	if err := x.write(ctx, itx, batch, nowArchived); err != nil {
		return false, err
	}
	if err := writeMark(ctx, itx, next); err != nil {
		return false, err
	}
	if err := itx.Commit(); err != nil {
		return false, fmt.Errorf("search index: %w", err)
	}
	return full, nil
}

// replacedSince reports that the database is not the one the mark was
// taken on: the message at the mark is gone or has another time.
func (t *tx) replacedSince(m mark) (bool, error) {
	if m.id == 0 {
		return false, nil
	}
	var at string
	err := t.row(`SELECT created_at FROM messages WHERE id = ?`, m.id).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	return err == nil && at != m.at, err
}

// docsAfter loads the messages after id, in id order: up to n, and none
// after the first that brings their text to maxBytes. full reports that
// it stopped at either bound: more may follow.
func (t *tx) docsAfter(id int64, n, maxBytes int) (docs []newDoc, full bool, err error) {
	rows, err := t.query(`SELECT id, channel_id, kind, is_archived, created_at, coalesce(title, ''), coalesce(slug, ''), body
		FROM messages WHERE id > ? ORDER BY id LIMIT ?`, id, n)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	size := 0
	for rows.Next() {
		var d newDoc
		if err := rows.Scan(&d.id, &d.channelID, &d.kind, &d.archived, &d.at, &d.title, &d.slug, &d.msg); err != nil {
			return nil, false, err
		}
		docs = append(docs, d)
		if size += len(d.title) + len(d.slug) + len(d.msg); size >= maxBytes {
			return docs, true, nil
		}
	}
	return docs, len(docs) == n, rows.Err()
}

// archivedUpTo lists the archived rows up to id.
func (t *tx) archivedUpTo(id int64, out *[]int64) error {
	rows, err := t.query(`SELECT id FROM messages WHERE is_archived = 1 AND id <= ?`, id)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return err
		}
		*out = append(*out, v)
	}
	return rows.Err()
}

// write adds a batch to the index and marks rows archived. Events (acks,
// joins, archive notes) are bookkeeping, not words anyone searches for,
// and are left out.
func (x *searchIndex) write(ctx context.Context, itx *sql.Tx, batch []newDoc, archived []int64) error {
	if len(archived) > 0 {
		list, _ := json.Marshal(archived)
		if _, err := itx.ExecContext(ctx, `UPDATE docs SET archived = 1 WHERE archived = 0 AND id IN (SELECT value FROM json_each(?))`, string(list)); err != nil {
			return err
		}
	}
	doc, err := itx.PrepareContext(ctx, `INSERT INTO docs (id, channel_id, archived, title, slug, body) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer doc.Close()
	hit, err := itx.PrepareContext(ctx, `INSERT INTO hits (rowid, title, slug, body) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer hit.Close()
	for _, d := range batch {
		if d.kind == "event" {
			continue
		}
		if _, err := doc.ExecContext(ctx, d.id, d.channelID, d.archived, d.title, d.slug, d.msg); err != nil {
			return err
		}
		if _, err := hit.ExecContext(ctx, d.id, d.title, d.slug, d.msg); err != nil {
			return err
		}
	}
	return nil
}
