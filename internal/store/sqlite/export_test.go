package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// What the external tests (package sqlite_test, which drive the chat
// through package store) see of the search index's insides.

// SearchBatchBytes bounds the text one indexing step reads.
const SearchBatchBytes = searchBatchBytes

// Index is a search index a test steps through by hand.
type Index struct {
	x     *searchIndex
	ahead <-chan readAhead
}

// OpenIndex opens the index file of the chat at dbPath.
func OpenIndex(ctx context.Context, dbPath string) (*Index, error) {
	x, err := openSearchIndex(ctx, dbPath)
	return &Index{x: x}, err
}

// FreshIndex builds an index of the chat r reads from nothing, in memory.
func FreshIndex(ctx context.Context, r *Reader) (*Index, error) {
	x, err := openIndexMemory(ctx)
	if err != nil {
		return nil, err
	}
	if err := x.catchUp(ctx, r.view, r.path, nil); err != nil {
		x.close()
		return nil, err
	}
	return &Index{x: x}, nil
}

// HeldIndex is the index r's searches keep open.
func HeldIndex(r *Reader) *Index { return &Index{x: r.search.idx} }

func (i *Index) Close() { i.x.close() }

// Step runs one step of a catch-up from the chat r reads, settling what
// was archived first or not; more says another step has work.
func (i *Index) Step(ctx context.Context, r *Reader, settle bool) (more bool, err error) {
	s, err := i.x.step(ctx, r.view, settle, i.ahead, "")
	i.ahead = s.ahead
	return s.more, err
}

// CatchUp brings the index up to date with the chat r reads.
func (i *Index) CatchUp(ctx context.Context, r *Reader) error {
	return i.x.catchUp(ctx, r.view, r.path, nil)
}

// Mark is the newest message the index holds.
func (i *Index) Mark(ctx context.Context) (int64, error) {
	m, err := i.x.readMark(ctx, nil)
	return m.id, err
}

// ForgetLiveAsks makes the index one an earlier release kept: it lists no
// live asks.
func (i *Index) ForgetLiveAsks(ctx context.Context) error {
	_, err := i.x.db.ExecContext(ctx, `DELETE FROM meta WHERE key = 'asks_hwm' OR key > ? AND key < ?`, liveAskKey, liveAskEnd)
	return err
}

// Merging is how FTS5 merges the index's segments, and how many there are.
func (i *Index) Merging(ctx context.Context) (automerge string, segments int, err error) {
	if err := i.x.db.QueryRowContext(ctx, `SELECT v FROM hits_config WHERE k = 'automerge'`).Scan(&automerge); err != nil {
		return "", 0, err
	}
	err = i.x.db.QueryRowContext(ctx, `SELECT count(DISTINCT segid) FROM hits_idx`).Scan(&segments)
	return automerge, segments, err
}

// Rows is what the index holds, row by row: each message's id, channel
// and archived flag, how many hold the word kestrel, and the live asks it
// lists.
func (i *Index) Rows(ctx context.Context) (string, error) {
	x := i.x
	var b strings.Builder
	rows, err := x.db.QueryContext(ctx, `SELECT id, channel_id, archived FROM docs ORDER BY id`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	for rows.Next() {
		var id, channel, archived int64
		if err := rows.Scan(&id, &channel, &archived); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%d:%d:%d ", id, channel, archived)
	}
	var hits int
	if err := x.db.QueryRowContext(ctx, `SELECT count(*) FROM hits WHERE hits MATCH 'kestrel'`).Scan(&hits); err != nil {
		return "", err
	}
	itx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer itx.Rollback()
	live, err := x.liveAsks(ctx, itx)
	if err != nil {
		return "", err
	}
	ids := make([]int64, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fmt.Fprintf(&b, "| %d hits | live asks %v", hits, ids)
	return b.String(), nil
}

// SetKeeper has keepers look every every, and go on for keep after their
// handle's last search, until restore.
func SetKeeper(every, keep time.Duration) (restore func()) {
	was, wasKeep := keepEvery, keepFor
	keepEvery, keepFor = every, keep
	return func() { keepEvery, keepFor = was, wasKeep }
}

// SetKeepFor changes only how long keepers go on.
func SetKeepFor(keep time.Duration) { keepFor = keep }

// Keeping reports a keeper running for r's index.
func (r *Reader) Keeping() bool {
	r.search.mu.Lock()
	defer r.search.mu.Unlock()
	return r.search.stop != nil
}

// RemoveIndexFiles removes an index file and the files beside it.
func RemoveIndexFiles(path string) { removeIndexFiles(path) }
