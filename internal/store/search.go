package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
	"github.com/mcpp/mcpp-chat/internal/store/fulltext"

	"time"
)

// Snippets mark the words a search matched with these two characters, so
// that each display marks them its own way (bold on a terminal, <mark> on
// the page) after cleaning and escaping the text around them.
const (
	MarkStart = fulltext.MarkStart
	MarkEnd   = fulltext.MarkEnd
)

// IndexProgress says how far bringing the search index up to date has
// come.
type IndexProgress = engine.Progress

// IndexProgressLine says p in words, for a person or an agent waiting on
// a search.
func IndexProgressLine(p IndexProgress) string {
	return fmt.Sprintf("building the search index: %d of %d messages (once per database; later searches add only what is new)", p.Done, p.Total)
}

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

// Search is an agent's search: only the channels the caller sits in (the
// ones chat_read can read), or the one it names, which it must sit in.
// Like every tool call, it makes the caller's party at first sight; it
// writes nothing else to the database, and no writer ever waits for it
// (searchread.go). The whole search, its scope too, is a long read: on a
// team store it queues once, within the party's share.
func (d *DB) Search(ctx context.Context, me Identity, a SearchArgs) (SearchResult, error) {
	if _, err := fulltext.Terms(a.Query); err != nil {
		return SearchResult{}, err
	}
	ctx, done, err := longRead(ctx, d.eng, partyKey(me))
	if err != nil {
		return SearchResult{}, d.wrap(err)
	}
	defer done()
	scope, err := d.searchScope(ctx, me, a.Channel)
	if err != nil {
		return SearchResult{}, err
	}
	return search(ctx, d.eng, d, scope, a)
}

// Search is the person's search: every channel, or the one named.
func (r *ReadOnly) Search(ctx context.Context, a SearchArgs) (SearchResult, error) {
	if _, err := fulltext.Terms(a.Query); err != nil {
		return SearchResult{}, err
	}
	ctx, done, err := longRead(ctx, r.eng, "")
	if err != nil {
		return SearchResult{}, wrap(r.eng, err)
	}
	defer done()
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
	return search(ctx, r.eng, r, scope, a)
}

// partyKey names a party for its share of long reads: a team party by
// its name, any other by its folder. (The person's own reads, on the
// read-only handle, share "".)
func partyKey(id Identity) string {
	if id.Team {
		return "name:" + id.Name
	}
	return "path:" + id.Workspace
}

// search has the engine rank the hits in scope (nil: all channels), then
// describes them from the chat.
func search(ctx context.Context, eng engine.Engine, src reader, scope []int64, a SearchArgs) (SearchResult, error) {
	out := SearchResult{Query: a.Query, Hits: []Hit{}}
	searcher, ok := eng.(engine.Searcher)
	if !ok {
		return out, fmt.Errorf("the store %s cannot search", eng.Where())
	}
	ranked, err := searcher.Search(ctx, engine.Query{Text: a.Query, Scope: scope, Archived: a.Archived,
		Limit: a.Limit, Skip: a.Skip, Progress: a.Progress, ProgressAfter: a.ProgressAfter})
	out.Total = ranked.Total
	if err != nil || len(ranked.Hits) == 0 {
		return out, err // the engine's own sentence: an index file is not the chat's
	}
	err = src.read(ctx, func(t *tx) error {
		var err error
		out.Hits, err = t.describe(ranked.Hits)
		return err
	})
	return out, err
}

// describe loads what a hit shows from the database, in the order given:
// its place, author and item fields, never its body (a snippet comes from
// the index) nor an item's consumers, which a hit does not show.
func (t *tx) describe(list []engine.Hit) ([]Hit, error) {
	ids := make([]int64, len(list))
	for i, r := range list {
		ids[i] = r.ID
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
		h, ok := byID[r.ID]
		if !ok {
			continue // indexed, then gone: a database replaced meanwhile
		}
		h.Snippet = r.Snippet
		out = append(out, h)
	}
	return out, nil
}
