package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"
)

// Snippets mark the words a search matched with these two characters, so
// that each display marks them its own way (bold on a terminal, <mark> on
// the page) after cleaning and escaping the text around them.
const (
	MarkStart = "\x02"
	MarkEnd   = "\x03"
)

// SearchArgs is a full-text search.
type SearchArgs struct {
	// Query is what a person types: every word must appear (in the body,
	// title or slug), "quoted words" as a phrase, word* as a prefix.
	Query string
	// Channel limits the search to one channel; "" searches them all.
	Channel string
	// Archived nil searches live and archived messages; true only the
	// archived threads, false only live messages.
	Archived *bool
	// Limit is the most hits returned (default 20), after Skip.
	Limit, Skip int
	// Progress, if set, is told how far bringing the search index up to
	// date has come (SQLite only: a first search of a long history takes
	// seconds): after the step that ends ProgressAfter into it, then after
	// one step in each ProgressAfter, and after the last step if it told
	// anything before. A catch-up shorter than ProgressAfter tells nothing.
	Progress      func(IndexProgress)
	ProgressAfter time.Duration
}

// Hit is a message a search found, best first.
type Hit struct {
	Channel  string `json:"channel"`
	Seq      int64  `json:"seq"`
	Kind     string `json:"kind"`
	From     string `json:"from"`
	At       string `json:"at"`
	Slug     string `json:"slug,omitempty"`
	Title    string `json:"title,omitempty"`
	Status   string `json:"status,omitempty"`
	Archived bool   `json:"archived"`
	Re       string `json:"re,omitempty"`
	// Snippet is the matching passage (a few words before the first match
	// and the rest after it), the matched words between MarkStart and MarkEnd.
	Snippet string `json:"snippet"`
}

// SearchResult is a page of hits and how many there are in all.
type SearchResult struct {
	Query string `json:"query"`
	Total int    `json:"total"`
	Hits  []Hit  `json:"hits"`
}

// defaultSearchLimit is the page size when a search names none.
const defaultSearchLimit = 20

// Search is an agent's search: only the channels the caller sits in (the
// ones chat_read can read), or the one it names, which it must sit in.
// Like every tool call, it makes the caller's party at first sight; it
// writes nothing else to the database, and no writer ever waits for it
// (searchread.go).
func (d *DB) Search(ctx context.Context, me Identity, a SearchArgs) (SearchResult, error) {
	query, err := ftsQuery(a.Query)
	if err != nil {
		return SearchResult{}, err
	}
	if d.pg != nil {
		// The whole search, its scope too, is a long read: it queues
		// once, within the party's share (postgres_longread.go).
		long, done, err := d.pg.longRead(ctx, partyKey(me))
		if err != nil {
			return SearchResult{}, err
		}
		defer done()
		ctx = long
	}
	scope, err := d.searchScope(ctx, me, a.Channel)
	if err != nil {
		return SearchResult{}, err
	}
	if d.pg != nil {
		return searchPostgres(ctx, d, a.Query, scope, a)
	}
	return d.search.run(ctx, d, d.path, query, scope, a)
}

// Search is the person's search: every channel, or the one named.
func (r *ReadOnly) Search(ctx context.Context, a SearchArgs) (SearchResult, error) {
	query, err := ftsQuery(a.Query)
	if err != nil {
		return SearchResult{}, err
	}
	if r.pg != nil {
		long, done, err := r.pg.longRead(ctx, "")
		if err != nil {
			return SearchResult{}, err
		}
		defer done()
		ctx = long
	}
	var scope []int64 // nil: every channel
	if strings.TrimSpace(a.Channel) != "" {
		err := r.read(ctx, func(t *tx) error {
			c, err := t.channelByName(a.Channel)
			scope = []int64{c.id}
			return err
		})
		if err != nil {
			return SearchResult{}, err
		}
	}
	if r.pg != nil {
		return searchPostgres(ctx, r, a.Query, scope, a)
	}
	r.keepStatements()
	return r.search.run(ctx, r, r.path, query, scope, a)
}

// search brings the index up to date, ranks the hits in scope (nil: all
// channels) and describes them from the database.
func search(ctx context.Context, src reader, dbPath string, idx *searchIndex, query string, scope []int64, a SearchArgs) (SearchResult, error) {
	out := SearchResult{Query: a.Query, Hits: []Hit{}}
	if scope != nil && len(scope) == 0 {
		return out, nil
	}
	if err := idx.catchUp(ctx, src, dbPath, progressEvery(a.Progress, a.ProgressAfter)); err != nil {
		return out, err
	}
	ranked, total, err := idx.rank(ctx, query, scope, a)
	out.Total = total
	if err != nil || len(ranked) == 0 {
		return out, idx.damaged(err)
	}
	err = src.read(ctx, func(t *tx) error {
		var err error
		out.Hits, err = t.describe(ranked)
		return err
	})
	return out, err
}

// ranked is a hit as the index knows it.
type ranked struct {
	id      int64
	snippet string
}

// rank runs the query on the index: the page of hits, best first, and how
// many there are in all.
func (x *searchIndex) rank(ctx context.Context, query string, scope []int64, a SearchArgs) ([]ranked, int, error) {
	var channels any // NULL: every channel
	if scope != nil {
		list, _ := json.Marshal(scope)
		channels = string(list)
	}
	archived := -1
	if a.Archived != nil {
		archived = 0
		if *a.Archived {
			archived = 1
		}
	}
	limit := a.Limit
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
		query, channels, archived, limit, max(a.Skip, 0))
	if err != nil || len(ids) == 0 {
		return nil, total, describeSearch(err)
	}
	snippets, err := x.snippets(ctx, query, ids)
	if err != nil {
		return nil, total, err
	}
	out := make([]ranked, len(ids))
	for i, id := range ids {
		out[i] = ranked{id: id, snippet: snippets[id]}
	}
	return out, total, nil
}

// ids runs a query of one column of ids.
func (x *searchIndex) ids(ctx context.Context, query string, args ...any) ([]int64, error) {
	return scanIDs(x.query(ctx, nil, query, args...))
}

// scanIDs reads the rows of a query of one column of ids.
func scanIDs(rows *sql.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
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
		out[id] = passage(title, body, slug)
	}
	return out, rows.Err()
}

// snippetWords is how many words a passage holds around its first match.
const snippetWords = 16

// passage is the first marked column's words around its first match: a
// title that matched says most, then the body, then the slug.
func passage(columns ...string) string {
	for _, c := range columns {
		if strings.Contains(c, MarkStart) {
			return window(c, snippetWords)
		}
	}
	return window(columns[1], snippetWords) // matched, but not in words we marked
}

// window keeps n words of text: a few before the first marked one and the
// rest after it, with … where it cut.
func window(text string, n int) string {
	words := strings.Fields(text)
	first := 0
	for i, w := range words {
		if strings.Contains(w, MarkStart) {
			first = i
			break
		}
	}
	from := max(0, first-n/4)
	to := min(len(words), from+n)
	out := strings.Join(words[from:to], " ")
	// A cut may leave a mark open or closed alone: balance it.
	if strings.Count(out, MarkStart) > strings.Count(out, MarkEnd) {
		out += MarkEnd
	}
	if from > 0 {
		out = "…" + out
	}
	if to < len(words) {
		out += "…"
	}
	return out
}

// describeSearch explains an error of the index's query.
func describeSearch(err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "fts5") {
		return userErrorf("the search words could not be read as a query (%v) — use plain words, \"a phrase\" or a prefix*", err)
	}
	return err
}

// describe loads what a hit shows from the database, in the order given:
// its place, author and item fields, never its body (a snippet comes from
// the index) nor an item's consumers, which a hit does not show.
func (t *tx) describe(list []ranked) ([]Hit, error) {
	ids := make([]int64, len(list))
	for i, r := range list {
		ids[i] = r.id
	}
	data, _ := json.Marshal(ids)
	rows, err := t.query(`SELECT m.id, c.name, m.seq, m.kind, a.name, m.created_at, coalesce(m.slug, ''), coalesce(m.title, ''),
			m.status, m.is_archived, coalesce(par.kind, ''), coalesce(par.slug, ''), coalesce(par.seq, 0)
		FROM messages m
		JOIN channels c ON c.id = m.channel_id
		JOIN parties a ON a.id = m.author_id
		LEFT JOIN messages par ON par.id = m.parent_id
		WHERE m.id IN (SELECT value FROM json_each(?))`, string(data))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := make(map[int64]Hit, len(list))
	for rows.Next() {
		var id, parSeq int64
		var h Hit
		var status, parKind, parSlug string
		if err := rows.Scan(&id, &h.Channel, &h.Seq, &h.Kind, &h.From, &h.At, &h.Slug, &h.Title,
			&status, &h.Archived, &parKind, &parSlug, &parSeq); err != nil {
			return nil, err
		}
		if h.Kind == "ask" {
			h.Status = status
		} else {
			h.Re = parentRef(parKind, parSlug, parSeq)
		}
		byID[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]Hit, 0, len(list))
	for _, r := range list {
		h, ok := byID[r.id]
		if !ok {
			continue // indexed, then gone: a database replaced meanwhile
		}
		h.Snippet = r.snippet
		out = append(out, h)
	}
	return out, nil
}

// The most a search looks for at once, the same on both engines. A query
// of 5,000 prefixes took PostgreSQL's parser past its stack ("stack depth
// limit exceeded"); a few words say what a person looks for, and a pasted
// page is better told to pick them than searched for every word in it.
const (
	maxSearchTerms = 64
	maxSearchChars = 1000
)

// searchTerm is one thing every hit must hold: a word, a "quoted phrase"
// (text with spaces) or, with prefix, the start of a word.
type searchTerm struct {
	text   string
	prefix bool
}

func (t searchTerm) phrase() bool { return strings.ContainsFunc(t.text, unicode.IsSpace) }

// searchTerms reads what a person types: every word must appear, "quoted
// words" make a phrase, a word ending in * is a prefix. A term with no
// letter or digit in it finds nothing and is dropped.
func searchTerms(q string) ([]searchTerm, error) {
	if strings.ContainsRune(q, 0) {
		// The page passes on what a person typed in its address. FTS5
		// ends the query at a NUL (an unterminated string), and
		// PostgreSQL refuses one: either way a driver's error.
		return nil, userErrorf("the search contains a NUL character (\\u0000) — remove it and search again")
	}
	if n := utf8.RuneCountInString(q); n > maxSearchChars {
		return nil, userErrorf("the search is %d characters long, and at most %d are looked for — search for the few words that say most", n, maxSearchChars)
	}
	var terms []searchTerm
	for _, t := range splitTerms(q) {
		prefix := strings.HasSuffix(t, "*")
		t = strings.TrimRight(t, "*")
		if strings.ContainsFunc(t, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			terms = append(terms, searchTerm{text: t, prefix: prefix})
		}
	}
	switch {
	case len(terms) == 0:
		return nil, userErrorf("the search has no word to look for — give at least one word of the message, title or slug")
	case len(terms) > maxSearchTerms:
		return nil, userErrorf("the search has %d words, and at most %d are looked for at once — search for the few that say most (a \"quoted phrase\" counts as one)", len(terms), maxSearchTerms)
	}
	return terms, nil
}

// ftsQuery turns what a person types into an FTS5 query. Each term goes
// to FTS5 quoted, so its own syntax (AND, OR, NEAR, column filters, a
// leading -) never turns a search into an error.
func ftsQuery(q string) (string, error) {
	terms, err := searchTerms(q)
	if err != nil {
		return "", err
	}
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = `"` + strings.ReplaceAll(t.text, `"`, `""`) + `"`
		if t.prefix {
			out[i] += "*"
		}
	}
	return strings.Join(out, " "), nil
}

// splitTerms splits on white space, keeping "quoted words" together.
func splitTerms(q string) []string {
	var out []string
	for i, part := range strings.Split(q, `"`) {
		if i%2 == 1 { // inside quotes
			if p := strings.TrimSpace(part); p != "" {
				out = append(out, p)
			}
			continue
		}
		out = append(out, strings.Fields(part)...)
	}
	return out
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
func (h *searchHolder) run(ctx context.Context, src reader, dbPath, query string, scope []int64, a SearchArgs) (SearchResult, error) {
	h.lastSearch.Store(time.Now().UnixNano())
	for attempt := 1; ; attempt++ {
		idx, err := h.get(ctx, dbPath)
		res := SearchResult{Query: a.Query, Hits: []Hit{}}
		if err == nil {
			res, err = search(ctx, src, dbPath, idx, query, scope, a)
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
				err = storageErrorf("the search index %s was replaced by another file while this search opened it — search again, and if this repeats, move the file aside", dbPath+SearchIndexSuffix)
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
		return storageErrorf("the disk holding %s is full, so the search index %s cannot grow: the search stopped, and nothing in the chat changed — free some space on it and search again", dir, dbPath+SearchIndexSuffix)
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
