package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
	"github.com/mcpp/mcpp-chat/internal/store/fulltext"
)

// reader runs fn in a transaction that only reads the chat: a search
// brings its index up to date beside the writers, never through their
// path.
type reader func(ctx context.Context, fn func(engine.Tx) error) error

// defaultSearchLimit is the page size when a search names none.
const defaultSearchLimit = 20

// Search is engine.Searcher: the index file beside the database, brought
// up to date with what the chat holds, then asked.
func (e *Engine) Search(ctx context.Context, q engine.Query) (engine.Ranked, error) {
	return e.search.run(ctx, e.readChat, e.path, q)
}

// readChat reads the chat for the index.
func (e *Engine) readChat(ctx context.Context, fn func(engine.Tx) error) error {
	_, err := e.Run(ctx, engine.Read, func(t engine.Tx) (*engine.Change, error) { return nil, fn(t) })
	return err
}

// Search is the person's search (engine.Searcher) on the read-only
// handle, which keeps its statements prepared from its first search on: a
// search runs the same few each time, and a handle that searches lives on
// (the page), while the hook's reads once each.
func (r *Reader) Search(ctx context.Context, q engine.Query) (engine.Ranked, error) {
	r.keepStatements()
	return r.search.run(ctx, r.view, r.path, q)
}

// search brings the index up to date and ranks the hits in scope (nil:
// all channels).
func search(ctx context.Context, src reader, dbPath string, idx *searchIndex, query string, q engine.Query) (engine.Ranked, error) {
	out := engine.Ranked{Hits: []engine.Hit{}}
	if q.Scope != nil && len(q.Scope) == 0 {
		return out, nil
	}
	if err := idx.catchUp(ctx, src, dbPath, progressEvery(q.Progress, q.ProgressAfter)); err != nil {
		return out, err
	}
	hits, total, err := idx.rank(ctx, query, q)
	out.Total = total
	if err != nil || len(hits) == 0 {
		return out, idx.damaged(err)
	}
	out.Hits = hits
	return out, nil
}

// rank runs the query on the index: the page of hits, best first, and how
// many there are in all.
func (x *searchIndex) rank(ctx context.Context, query string, q engine.Query) ([]engine.Hit, int, error) {
	var channels any // NULL: every channel
	if q.Scope != nil {
		list, _ := json.Marshal(q.Scope)
		channels = string(list)
	}
	archived := -1
	if q.Archived != nil {
		archived = 0
		if *q.Archived {
			archived = 1
		}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	from := ` FROM hits WHERE hits MATCH ?1 AND ?2 IS NULL AND ?3 < 0` // every parameter is bound
	if channels != nil || archived >= 0 {
		from = ` FROM hits JOIN docs d ON d.id = hits.rowid WHERE hits MATCH ?1
			AND (?2 IS NULL OR d.channel_id IN (SELECT value FROM json_each(?2))) AND (?3 < 0 OR d.archived = ?3)`
	}
	var total int
	x.stmts.prepare(ctx)
	if err := x.row(ctx, nil, `SELECT count(*)`+from, query, channels, archived).Scan(&total); err != nil {
		return nil, 0, describeSearch(err)
	}
	// Titles and slugs weigh more than bodies: a word in an item's title
	// is what the item is about. Ties go to the newer message. Snippets
	// come after the page is chosen: made in the ranking query, one would
	// be cut from every match, not just the page's.
	ids, err := x.ids(ctx, `SELECT hits.rowid`+from+` ORDER BY bm25(hits, 8.0, 8.0, 1.0), hits.rowid DESC LIMIT ?4 OFFSET ?5`,
		query, channels, archived, limit, max(q.Skip, 0))
	if err != nil || len(ids) == 0 {
		return nil, total, describeSearch(err)
	}
	snippets, err := x.snippets(ctx, query, ids)
	if err != nil {
		return nil, total, err
	}
	out := make([]engine.Hit, len(ids))
	for i, id := range ids {
		out[i] = engine.Hit{ID: id, Snippet: snippets[id]}
	}
	return out, total, nil
}

// ids runs a query of one column of ids.
func (x *searchIndex) ids(ctx context.Context, query string, args ...any) ([]int64, error) {
	return engine.IDs(x.query(ctx, nil, query, args...))
}

// snippets cuts the matching passage of each of a page's hits. FTS5's own
// snippet() scores every window around every match, which is quadratic in
// the matches of a message: a message of nine thousand times the same word
// took it minutes. highlight() marks the matches in one pass, and the
// passage is cut around the first of them here.
func (x *searchIndex) snippets(ctx context.Context, query string, ids []int64) (map[int64]string, error) {
	list, _ := json.Marshal(ids)
	rows, err := x.query(ctx, nil, `SELECT rowid, highlight(hits, 0, char(2), char(3)), highlight(hits, 2, char(2), char(3)),
			highlight(hits, 1, char(2), char(3)) FROM hits
		WHERE hits MATCH ?1 AND rowid IN (SELECT value FROM json_each(?2))`, query, string(list))
	if err != nil {
		return nil, describeSearch(err)
	}
	defer rows.Close()
	out := make(map[int64]string, len(ids))
	for rows.Next() {
		var id int64
		var title, body, slug string
		if err := rows.Scan(&id, &title, &body, &slug); err != nil {
			return nil, err
		}
		out[id] = fulltext.Passage(title, body, slug)
	}
	return out, rows.Err()
}

// describeSearch explains an error of the index's query.
func describeSearch(err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "fts5") {
		return engine.UserErrorf("the search words could not be read as a query (%v) — use plain words, \"a phrase\" or a prefix*", err)
	}
	return err
}

// ftsQuery turns what a person types into an FTS5 query. Each term goes
// to FTS5 quoted, so its own syntax (AND, OR, NEAR, column filters, a
// leading -) never turns a search into an error.
func ftsQuery(q string) (string, error) {
	terms, err := fulltext.Terms(q)
	if err != nil {
		return "", err
	}
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = `"` + strings.ReplaceAll(t.Text, `"`, `""`) + `"`
		if t.Prefix {
			out[i] += "*"
		}
	}
	return strings.Join(out, " "), nil
}

// searchHolder opens a handle's index on its first search and keeps it.
// While the handle searched within keepFor, a keeper brings the index up
// to date soon after each commit of any process (keepUp), so that a
// search a moment after a peer's write finds nothing new to index.
type searchHolder struct {
	mu  sync.Mutex
	idx *searchIndex
	// stop, when not nil, stops the running keeper; kept waits for it.
	stop       chan struct{}
	kept       sync.WaitGroup
	lastSearch atomic.Int64 // unix nanoseconds
}

// keepEvery is how often the keeper looks at the database's stamp, and
// keepFor how long after a handle's last search it goes on doing so.
var (
	keepEvery = 250 * time.Millisecond
	keepFor   = 10 * time.Minute
)

// run searches with the handle's index. An index found damaged — when it
// is opened, or by the search itself — is removed and made anew, once; an
// index whose file was replaced meanwhile is opened again.
func (h *searchHolder) run(ctx context.Context, src reader, dbPath string, q engine.Query) (engine.Ranked, error) {
	query, err := ftsQuery(q.Text)
	if err != nil {
		return engine.Ranked{}, err
	}
	h.lastSearch.Store(time.Now().UnixNano())
	for attempt := 1; ; attempt++ {
		idx, err := h.get(ctx, dbPath)
		res := engine.Ranked{Hits: []engine.Hit{}}
		if err == nil {
			res, err = search(ctx, src, dbPath, idx, query, q)
		}
		var damaged *damagedIndex
		switch {
		case err == nil:
			h.keep(src, dbPath, idx)
			return res, nil
		case errors.As(err, &damaged):
			h.drop(idx)
			damaged.remove()
		case errors.Is(err, errIndexReplaced), idx != nil && idx.movedAway():
			// Its file went while it searched (and the keeper may have
			// closed it): the next attempt opens what the path names now.
			h.drop(idx)
		default:
			return res, indexFull(dbPath, err)
		}
		if attempt == 2 {
			if damaged == nil {
				err = engine.StorageErrorf("the search index %s was replaced by another file while this search opened it — search again, and if this repeats, move the file aside", dbPath+SearchIndexSuffix)
			}
			return res, err
		}
	}
}

// indexFull is err, or, when it is the I/O error SQLite gives for a write
// the index's disk had no room for, a StorageError that says so: as a
// write does (describeFile), and not as a failure inside the server.
func indexFull(dbPath string, err error) error {
	if !errors.Is(err, sqlite3.IOERR) && !errors.Is(err, sqlite3.FULL) {
		return err
	}
	if dir := filepath.Dir(dbPath); diskFull(dir) {
		return engine.StorageErrorf("the disk holding %s is full, so the search index %s cannot grow: the search stopped, and nothing in the chat changed — free some space on it and search again", dir, dbPath+SearchIndexSuffix)
	}
	return err
}

// keep starts the keeper of idx, a file's index, unless one runs.
func (h *searchHolder) keep(src reader, dbPath string, idx *searchIndex) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != nil || h.idx != idx || idx.path == "" {
		return
	}
	stop := make(chan struct{})
	h.stop = stop
	h.kept.Add(1)
	go h.keepUp(stop, src, dbPath, idx, keepEvery, keepFor)
}

// keepUp catches idx up once the database's stamp shows a commit and can
// be trusted (see Fingerprint), so that the catch-up records it and the
// next search only compares it. It looks every every, and ends at stop,
// idle after the last search, at an error, which the next search meets
// and reports, or once idx's file is gone from its path (it then closes
// idx).
func (h *searchHolder) keepUp(stop chan struct{}, src reader, dbPath string, idx *searchIndex, every, idle time.Duration) {
	defer h.kept.Done()
	defer func() {
		h.mu.Lock()
		if h.stop == stop {
			h.stop = nil
		}
		h.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	last, _ := Fingerprint(dbPath)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(time.Unix(0, h.lastSearch.Load())) > idle {
			return
		}
		if idx.movedAway() {
			// Its file was deleted or replaced: catching up would write
			// files nobody else sees and hold them open. Closed, the next
			// search opens what the path names now.
			h.drop(idx)
			return
		}
		fp, ok := Fingerprint(dbPath)
		if !ok || fp == last {
			continue
		}
		if err := idx.catchUp(ctx, src, dbPath, nil); err != nil {
			return
		}
		last = fp
	}
}

// stopKeeping stops the keeper, if one runs, and returns at once; the
// keeper ends within its current catch-up.
func (h *searchHolder) stopKeeping() {
	if h.stop != nil {
		close(h.stop)
		h.stop = nil
	}
}

// get is the handle's index, opened on first use and again when its file
// was removed or replaced since.
func (h *searchHolder) get(ctx context.Context, dbPath string) (*searchIndex, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.idx != nil && !h.idx.movedAway() {
		return h.idx, nil
	}
	if h.idx != nil {
		h.stopKeeping()
		h.idx.close()
		h.idx = nil
	}
	idx, err := openSearchIndex(ctx, dbPath)
	if err != nil {
		return nil, err
	}
	h.idx = idx
	return idx, nil
}

// drop closes idx, if it is still the handle's index, so that the next
// search opens the file anew.
func (h *searchHolder) drop(idx *searchIndex) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if idx != nil && h.idx == idx {
		h.stopKeeping()
		h.idx.close()
		h.idx = nil
	}
}

// close stops the keeper and waits for it, so that nothing writes the
// index once the handle is closed, then closes the index.
func (h *searchHolder) close() {
	h.mu.Lock()
	h.stopKeeping()
	h.mu.Unlock()
	h.kept.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.idx != nil {
		h.idx.close()
		h.idx = nil
	}
}
