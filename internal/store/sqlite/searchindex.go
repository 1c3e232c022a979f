package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
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
// thing that changes later is whether a row is archived, and a row is
// archived with its thread when the thread's ask is: the index lists the
// asks it holds as live, and each catch-up reads the flags again of the
// threads whose ask is no longer live (settle). Nothing it does reads the
// whole history but a first index: a catch-up costs what was written and
// archived since, and the live asks. Several processes may search at
// once: each step is one BEGIN IMMEDIATE transaction on the index file.

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
	// stmts keeps the index's statements prepared: a search after a
	// write runs a dozen, and parsing them took as long as running them.
	stmts *stmtCache
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
	var se *engine.StorageError
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
	x := &searchIndex{path: path, info: info, db: db, stmts: newStmtCache(db)}
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
	if err := c.BusyTimeout(engine.DefaultBusyTimeout); err != nil {
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
	x := &searchIndex{db: db, stmts: newStmtCache(db)}
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
//
// FTS5 merges its segments when automerge of them are alike in size; at
// its default of 4, a posting of a long history was written again at every
// fourth step's size, and merging was a fifth of a first index's time. At
// 16 (the most) it is written half as often, and a search reads a few
// more segments, which costs it nothing measurable.
func (x *searchIndex) reset(ctx context.Context, q execer) error {
	_, err := q.ExecContext(ctx, `DROP TABLE IF EXISTS hits; DROP TABLE IF EXISTS docs; DELETE FROM meta;`+searchSchema+
		`INSERT INTO hits (hits, rank) VALUES ('automerge', 16);
		INSERT INTO meta (key, value) VALUES ('version', '`+searchIndexVersion+`')`)
	return err
}

func (x *searchIndex) close() error {
	x.stmts.close()
	return x.db.Close()
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// exec, query and row run one statement (never several) on the index, in
// itx or, when it is nil, on the handle; prepared once it ran before
// (stmts), which x.stmts.prepare does outside any transaction.
func (x *searchIndex) exec(ctx context.Context, itx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := x.stmts.in(ctx, itx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	if itx != nil {
		return itx.ExecContext(ctx, query, args...)
	}
	return x.db.ExecContext(ctx, query, args...)
}

func (x *searchIndex) query(ctx context.Context, itx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := x.stmts.in(ctx, itx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	if itx != nil {
		return itx.QueryContext(ctx, query, args...)
	}
	return x.db.QueryContext(ctx, query, args...)
}

func (x *searchIndex) row(ctx context.Context, itx *sql.Tx, query string, args ...any) *sql.Row {
	if st := x.stmts.in(ctx, itx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	if itx != nil {
		return itx.QueryRowContext(ctx, query, args...)
	}
	return x.db.QueryRowContext(ctx, query, args...)
}

// meta reads a value of the meta table; a missing one is "".
func (x *searchIndex) meta(ctx context.Context, itx *sql.Tx, key string) (string, error) {
	var v string
	err := x.row(ctx, itx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// mark is where the index stands: the newest message indexed and that
// message's time (a database replaced by another has other times), the
// newest message up to which the index lists the live asks it holds
// (liveAsks), and the newest the chat held when archiving was last
// settled. An index an earlier release brought further (it kept no such
// list) has asks behind id; an earlier release also kept "archived", a
// count it alone reads.
type mark struct {
	id      int64
	at      string
	asks    int64
	settled int64 // see searchHead
}

// The meta rows that list the live asks are keyed liveAskKey and the
// ask's id; liveAskEnd sorts after all of them. They are rows of meta, not
// a table: an earlier release, which may still run beside this one,
// refuses an index file with a table it does not know.
const (
	liveAskKey = "ask:"
	liveAskEnd = "ask;"
)

func (x *searchIndex) readMark(ctx context.Context, itx *sql.Tx) (mark, error) {
	rows, err := x.query(ctx, itx, `SELECT key, value FROM meta WHERE key IN ('hwm', 'hwm_at', 'asks_hwm', 'settled')`)
	if err != nil {
		return mark{}, err
	}
	defer rows.Close()
	var m mark
	for rows.Next() {
		var key, v string
		if err := rows.Scan(&key, &v); err != nil {
			return m, err
		}
		switch key {
		case "hwm":
			m.id, _ = strconv.ParseInt(v, 10, 64)
		case "hwm_at":
			m.at = v
		case "asks_hwm":
			m.asks, _ = strconv.ParseInt(v, 10, 64)
		case "settled":
			m.settled, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return m, rows.Err()
}

// writeMark moves the mark, and records the chat's fingerprint (see
// catchUp) when the catch-up ends here.
func (x *searchIndex) writeMark(ctx context.Context, itx *sql.Tx, m mark, fingerprint *string) error {
	query := `INSERT INTO meta (key, value) VALUES ('hwm', ?1), ('hwm_at', ?2), ('asks_hwm', ?3), ('settled', ?4)`
	args := []any{strconv.FormatInt(m.id, 10), m.at, strconv.FormatInt(m.asks, 10), strconv.FormatInt(m.settled, 10)}
	if fingerprint != nil {
		query += `, ('fingerprint', ?5)`
		args = append(args, *fingerprint)
	}
	_, err := x.exec(ctx, itx, query+` ON CONFLICT (key) DO UPDATE SET value = excluded.value`, args...)
	return err
}

// liveAsks lists the asks the index holds as not archived.
func (x *searchIndex) liveAsks(ctx context.Context, itx *sql.Tx) (map[int64]bool, error) {
	rows, err := x.query(ctx, itx, `SELECT substr(key, ?1) FROM meta WHERE key > ?2 AND key < ?3`,
		len(liveAskKey)+1, liveAskKey, liveAskEnd)
	ids, err := engine.IDs(rows, err)
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}

// countLiveAsks counts the asks the index lists as live.
func (x *searchIndex) countLiveAsks(ctx context.Context, itx *sql.Tx) (int64, error) {
	var n int64
	err := x.row(ctx, itx, `SELECT count(*) FROM meta WHERE key > ? AND key < ?`, liveAskKey, liveAskEnd).Scan(&n)
	return n, err
}

// progressEvery is tell, told at most once in each interval from the
// start, and at the end (last) if it was told anything before; nil when
// tell is.
func progressEvery(tell func(engine.Progress), interval time.Duration) func(p engine.Progress, last bool) {
	if tell == nil {
		return nil
	}
	start := time.Now()
	next, told := start.Add(interval), false
	return func(p engine.Progress, last bool) {
		if now := time.Now(); !now.Before(next) || last && told {
			tell(p)
			next, told = now.Add(interval), true
		}
	}
}

// catchUp indexes what the chat database at dbPath holds beyond the mark,
// telling progress (if not nil) after each step. When the database's
// Fingerprint is the one the index was last brought up to date at (the
// last step records the one taken before the first), nothing was written
// since and it reads nothing.
func (x *searchIndex) catchUp(ctx context.Context, src reader, dbPath string, progress func(p engine.Progress, last bool)) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.damaged(x.catchUpLocked(ctx, src, dbPath, progress))
}

func (x *searchIndex) catchUpLocked(ctx context.Context, src reader, dbPath string, progress func(p engine.Progress, last bool)) error {
	x.stmts.prepare(ctx)
	fp, known := Fingerprint(dbPath)
	if known {
		if last, err := x.meta(ctx, nil, "fingerprint"); err == nil && last == fp {
			return nil
		}
	} else {
		fp = ""
	}
	// Archiving since the last catch-up is settled once, by the first
	// step; the later ones only add rows, each read with its flag as it is.
	from := int64(-1) // the mark the catch-up began at
	steps := 1
	var ahead <-chan readAhead
	for settle := true; ; settle = false {
		s, err := x.step(ctx, src, settle, ahead, fp)
		if err != nil {
			return err
		}
		if from < 0 || s.from < from {
			from = s.from // a first step, or an index made anew
		}
		if progress != nil && s.newest > 0 {
			progress(engine.Progress{Done: s.to - from, Total: s.newest - from}, !s.more)
		}
		if !s.more {
			if steps > 1 {
				return x.mergeSegments(ctx)
			}
			return nil
		}
		steps++
		ahead = s.ahead
		x.stmts.prepare(ctx)
	}
}

// mergeSegments ends a catch-up of more than one batch (a build): it
// merges FTS5's segments as far as automerge 4 would have, and keeps 4
// from here on. A build writes at 16, which halves its time, but leaves
// up to 15 segments on each level, and every search reads each of them:
// at 1M messages a search took 0.8 ms where the merged index takes 0.3
// (docs/performance.md); the merge adds little to the build.
func (x *searchIndex) mergeSegments(ctx context.Context) error {
	conn, err := x.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `INSERT INTO hits (hits, rank) VALUES ('automerge', 4)`); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	for {
		var before, after int64
		if err := conn.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		// usermerge is 4 by default: levels of 4 or more segments only.
		if _, err := conn.ExecContext(ctx, `INSERT INTO hits (hits, rank) VALUES ('merge', 2000)`); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		// The command counts one change; any more are the merge's work.
		if err := conn.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&after); err != nil || after-before < 2 {
			return err
		}
	}
}

// newDoc is a message about to be indexed.
type newDoc struct {
	id, channelID    int64
	kind             string
	archived         bool
	at               string
	title, slug, msg string
}

// liveAsk reports an ask the index lists as live once it holds it.
func (d newDoc) liveAsk() bool { return d.kind == "ask" && !d.archived }

// stepped is what one step did: it moved the mark from one message to
// another, the chat's newest was newest (0 when the step made the index
// anew), and more reports that it holds more beyond the mark.
type stepped struct {
	more             bool
	from, to, newest int64
	ahead            <-chan readAhead // the next batch, being read
}

// settled is what settling found: rows up to the mark archived since,
// the listed live asks among them, and — when the index did not list its
// live asks (relisted) — the list anew.
type settled struct {
	archived []int64
	gone     []int64
	relist   []int64
	relisted bool
	replaced bool
}

// step indexes one batch in one transaction of the index, after settling
// archiving up to the mark when settle is set. ahead, when not nil, is the
// batch after the mark the step before wrote, read meanwhile; fingerprint
// is recorded if this is the last step.
func (x *searchIndex) step(ctx context.Context, src reader, settle bool, ahead <-chan readAhead, fingerprint string) (stepped, error) {
	itx, err := x.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock): one indexer at a time
	if err != nil {
		return stepped{}, fmt.Errorf("search index: %w", err)
	}
	defer itx.Rollback()
	m, err := x.readMark(ctx, itx)
	if err != nil {
		return stepped{}, err
	}
	b, err := x.batchAfter(ctx, itx, src, m, settle, ahead)
	if err != nil {
		return stepped{}, err
	}
	if b.st.replaced {
		if err := x.reset(ctx, itx); err != nil {
			return stepped{}, err
		}
		return stepped{more: true}, itx.Commit()
	}
	next := m
	if n := len(b.docs); n > 0 {
		next.id, next.at = b.docs[n-1].id, b.docs[n-1].at
	}
	if settle {
		next.settled = b.newest
	}
	if m.asks == m.id || b.st.relisted {
		// The list of live asks reaches the mark, and so the batch too.
		// (Otherwise an earlier release indexed between two steps:
		// the next catch-up lists them anew.)
		next.asks = next.id
	}
	s := stepped{more: b.full, from: m.id, to: next.id, newest: max(b.newest, next.id)}
	if s.more {
		// The next batch is read from the chat while this one is
		// written: two cores, when there are, share the work.
		s.ahead = readBatchAhead(ctx, src, next)
	}
	if err := x.write(ctx, itx, b.docs, b.st); err != nil {
		return stepped{}, err
	}
	var fp *string
	if !s.more {
		fp = &fingerprint
	}
	if err := x.writeMark(ctx, itx, next, fp); err != nil {
		return stepped{}, err
	}
	if err := itx.Commit(); err != nil {
		return stepped{}, fmt.Errorf("search index: %w", err)
	}
	return s, nil
}

// batch is what a step reads of the chat after the mark from: the
// messages to add (full: more may follow), what settling found, and the
// id of the chat's newest message.
type batch struct {
	from   mark
	docs   []newDoc
	full   bool
	st     settled
	newest int64
}

// readAhead is a batch read in the background.
type readAhead struct {
	b   batch
	err error
}

// batchAfter is the batch after mark m: the one read ahead, if it was read
// after that very mark (no other process indexed since), else read now.
func (x *searchIndex) batchAfter(ctx context.Context, itx *sql.Tx, src reader, m mark, settle bool, ahead <-chan readAhead) (batch, error) {
	if ahead != nil {
		if r := <-ahead; r.err == nil && r.b.from == m && !settle {
			return r.b, nil
		}
	}
	listed := askList{known: m.asks == m.id}
	if settle && listed.known {
		listed.count = func() (int64, error) { return x.countLiveAsks(ctx, itx) }
		listed.load = func() (map[int64]bool, error) { return x.liveAsks(ctx, itx) }
	}
	return readBatch(ctx, src, m, settle, listed)
}

// readBatchAhead reads the batch after m in the background.
func readBatchAhead(ctx context.Context, src reader, m mark) <-chan readAhead {
	out := make(chan readAhead, 1)
	go func() {
		b, err := readBatch(ctx, src, m, false, askList{})
		out <- readAhead{b, err}
	}()
	return out
}

// readBatch reads the chat for the step after mark m, settling archiving
// up to m first when settle is set.
func readBatch(ctx context.Context, src reader, m mark, settle bool, listed askList) (batch, error) {
	var b batch
	err := src(ctx, func(t engine.Tx) error {
		var err error
		b = batch{from: m}
		var events bool
		if b.st.replaced, b.newest, events, err = searchHead(t, m, settle); err != nil || b.st.replaced {
			return err
		}
		if settle && (events || !listed.known) {
			if b.st, err = settleAsks(t, m, listed); err != nil || b.st.replaced {
				return err
			}
		}
		b.docs, b.full, err = docsAfter(t, m.id, searchBatch, searchBatchBytes)
		return err
	})
	if err != nil {
		return b, fromChat{err}
	}
	return b, nil
}

// askList is the index's list of live asks as settle reads it: known when
// it reaches the mark, how many, and which, loaded only when needed.
type askList struct {
	known bool
	count func() (int64, error)
	load  func() (map[int64]bool, error)
}

// settle finds the rows up to the mark archived since the index read
// them. A row is archived with its thread, when the thread's ask is, so it
// reads only the live asks (ranges of idx_messages_open, never a row of
// the history) and, for each ask the index lists as live that no longer
// is, its thread: the cost is the live asks and what was archived, however
// long the history. An index whose list does not reach the mark (one an
// earlier release brought up to date) has every archived row up to the
// mark read once, and the list made anew.
func settleAsks(t engine.Tx, m mark, listed askList) (settled, error) {
	var st settled
	if m.id == 0 {
		return st, nil
	}
	if !listed.known {
		now, err := liveAsksUpTo(t, m.id)
		if err != nil {
			return st, err
		}
		st.relist, st.relisted = now, true
		return st, archivedUpTo(t, m.id, &st.archived)
	}
	listedCount, err := listed.count()
	if err != nil {
		return st, err
	}
	var n int64
	if err := t.Row(`SELECT count(*)`+liveAsksFrom, m.id).Scan(&n); err != nil || n == listedCount {
		// Every ask the index lists as live still is: rows do not
		// come back from the archive, so the chat's live asks are
		// among them, and as many are the same.
		return st, err
	}
	live, err := listed.load()
	if err != nil {
		return st, err
	}
	now, err := liveAsksUpTo(t, m.id)
	if err != nil {
		return st, err
	}
	still := make(map[int64]bool, len(now))
	for _, id := range now {
		if !live[id] {
			// A live ask the index holds as archived, or never listed:
			// this is another database than the one indexed.
			st.replaced = true
			return st, nil
		}
		still[id] = true
	}
	for id := range live {
		if !still[id] {
			st.gone = append(st.gone, id)
		}
	}
	list, _ := json.Marshal(st.gone)
	st.archived, err = engine.IDs(t.Query(`WITH RECURSIVE thread(id) AS (
			SELECT value FROM json_each(?1) UNION SELECT m.id FROM messages m JOIN thread ON m.parent_id = thread.id)
		SELECT m.id FROM thread JOIN messages m ON m.id = thread.id WHERE m.is_archived = 1 AND m.id <= ?2`, string(list), m.id))
	return st, err
}

// liveAsksUpTo lists the asks up to id that are not archived, from ranges
// of idx_messages_open (channel_id, status, is_archived) alone: an ask's
// status is open, ack or done, every other row's none. CROSS JOIN keeps
// the channels outside, so each channel is a range of the index; the other
// way round the planner scanned all of it.
func liveAsksUpTo(t engine.Tx, id int64) ([]int64, error) {
	return engine.IDs(t.Query(`SELECT m.id`+liveAsksFrom, id))
}

const liveAsksFrom = ` FROM channels c CROSS JOIN messages m ON m.channel_id = c.id
	WHERE m.status IN ('open', 'ack', 'done') AND m.is_archived = 0 AND m.id <= ?`

// searchHead reads what a step needs to know before the batch: whether
// the database is not the one the mark was taken on (the message at the
// mark is gone or has another time), the id of its newest message, and,
// when settle is set, whether archiving may have happened since it was
// last settled. Items are archived by the sweep, which posts an event for
// each in the same transaction (as both editions do): with no event since,
// there is nothing to settle, and the cost is the rows written since.
// Any event will do, so an archive that came without one (no writer does
// that) would be settled at the next ack, join or archive.
func searchHead(t engine.Tx, m mark, settle bool) (replaced bool, newest int64, events bool, err error) {
	var at sql.NullString
	eventsAfter := int64(math.MaxInt64) // none asked for
	if settle && m.id > 0 {
		eventsAfter = m.settled
	}
	err = t.Row(`SELECT (SELECT created_at FROM messages WHERE id = ?1), (SELECT coalesce(max(id), 0) FROM messages),
			EXISTS (SELECT 1 FROM messages WHERE id > ?2 AND kind = 'event')`, m.id, eventsAfter).Scan(&at, &newest, &events)
	if err != nil || m.id == 0 {
		return false, newest, events, err
	}
	return !at.Valid || at.String != m.at, newest, events, nil
}

// docsAfter loads the messages after id, in id order: up to n, and none
// after the first that brings their text to maxBytes. full reports that
// it stopped at either bound: more may follow.
func docsAfter(t engine.Tx, id int64, n, maxBytes int) (docs []newDoc, full bool, err error) {
	rows, err := t.Query(`SELECT id, channel_id, kind, is_archived, created_at, coalesce(title, ''), coalesce(slug, ''), body
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
func archivedUpTo(t engine.Tx, id int64, out *[]int64) error {
	ids, err := engine.IDs(t.Query(`SELECT id FROM messages WHERE is_archived = 1 AND id <= ?`, id))
	*out = append(*out, ids...)
	return err
}

// write adds a batch to the index and what settling found. Events (acks,
// joins, archive notes) are bookkeeping, not words anyone searches for,
// and are left out. The docs go in many rows to a statement, and the hits
// are made from them in one: a statement per row cost a first index of a
// long history more in its round trips than in its writing.
func (x *searchIndex) write(ctx context.Context, itx *sql.Tx, batch []newDoc, st settled) error {
	if len(st.archived) > 0 {
		list, _ := json.Marshal(st.archived)
		if _, err := x.exec(ctx, itx, `UPDATE docs SET archived = 1 WHERE archived = 0 AND id IN (SELECT value FROM json_each(?))`, string(list)); err != nil {
			return err
		}
	}
	if err := x.listAsks(ctx, itx, batch, st); err != nil {
		return err
	}
	if len(batch) == 0 {
		return nil
	}
	docs := slices.DeleteFunc(slices.Clone(batch), func(d newDoc) bool { return d.kind == "event" })
	for len(docs) > 0 {
		n, query := 1, insertDoc
		if len(docs) >= docsPerInsert {
			n, query = docsPerInsert, insertDocs
		}
		args := make([]any, 0, 6*n)
		for _, d := range docs[:n] {
			args = append(args, d.id, d.channelID, d.archived, d.title, d.slug, d.msg)
		}
		if _, err := x.exec(ctx, itx, query, args...); err != nil {
			return err
		}
		docs = docs[n:]
	}
	_, err := x.exec(ctx, itx, `INSERT INTO hits (rowid, title, slug, body) SELECT id, title, slug, body FROM docs WHERE id >= ? AND id <= ?`,
		batch[0].id, batch[len(batch)-1].id)
	return err
}

// insertDoc adds a row to docs, insertDocs docsPerInsert rows.
const docsPerInsert = 100

var (
	insertDoc  = `INSERT INTO docs (id, channel_id, archived, title, slug, body) VALUES (?, ?, ?, ?, ?, ?)`
	insertDocs = insertDoc + strings.Repeat(`, (?, ?, ?, ?, ?, ?)`, docsPerInsert-1)
)

// listAsks keeps the index's list of live asks: the batch's added, the
// ones archived since dropped, or the whole list made anew.
func (x *searchIndex) listAsks(ctx context.Context, itx *sql.Tx, batch []newDoc, st settled) error {
	drop := st.gone
	add := st.relist
	if st.relisted {
		if _, err := x.exec(ctx, itx, `DELETE FROM meta WHERE key > ?1 AND key < ?2`, liveAskKey, liveAskEnd); err != nil {
			return err
		}
	}
	for _, d := range batch {
		if d.liveAsk() {
			add = append(add, d.id)
		}
	}
	for _, change := range []struct {
		ids   []int64
		query string
	}{
		{drop, `DELETE FROM meta WHERE key IN (SELECT ?1 || value FROM json_each(?2))`},
		{add, `INSERT INTO meta (key, value) SELECT ?1 || value, '' FROM json_each(?2) WHERE true ON CONFLICT (key) DO NOTHING`},
	} {
		if len(change.ids) == 0 {
			continue
		}
		list, _ := json.Marshal(change.ids)
		if _, err := x.exec(ctx, itx, change.query, liveAskKey, string(list)); err != nil {
			return err
		}
	}
	return nil
}
