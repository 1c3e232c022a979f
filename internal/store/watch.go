package store

import (
	"context"
	"database/sql"
	"errors"
)

// Arrival is a message as `mcpp-chat watch` reports it.
type Arrival struct {
	ID      int64
	Channel string
	Seq     int64
	Kind    string
	Author  string
	Title   string
	Body    string
	At      string
}

// Arrivals returns the live messages written after message id after, and
// the newest message id to pass next time. With workspace "" it returns
// every message; otherwise only those that wait on the party rooted there:
// peers' messages in the channels it sits in, and peers' items that name it
// a consumer. A root not seen yet gets nothing. after < 0 returns no
// message, only the newest id: where a watcher starts.
func (r *ReadOnly) Arrivals(ctx context.Context, workspace string, after int64) ([]Arrival, int64, error) {
	var out []Arrival
	var newest int64
	err := r.longView(ctx, partyKey(Identity{Workspace: workspace}), func(t *tx) error {
		var err error
		out, newest, err = t.arrivals(workspace, after)
		return err
	})
	return out, newest, err
}

// ArrivalScope is which of a party's messages ArrivalsFor lists.
type ArrivalScope int

const (
	// WaitingOn lists what waits on the party: peers' messages in the
	// channels it sits in, and peers' items that name it a consumer.
	WaitingOn ArrivalScope = iota
	// Readable lists every message the party can read: those of the
	// channels it sits in, its own too, and the items it consumes.
	Readable
)

// ArrivalPage is a page of a party's arrivals.
type ArrivalPage struct {
	Arrivals []Arrival
	// Newest is the after of the next page: the newest message the party
	// can read, or the last of this page when More.
	Newest int64
	More   bool
}

// errNoParty refuses to list arrivals for nobody, which would list
// every message: a hub must never show one party another's channels.
var errNoParty = errors.New("arrivals for a party need its name or its root")

// ArrivalsFor is Arrivals for one party (a team party is found by its
// name), within what it can read and at most limit messages at a time.
// Newest names only messages the party can read, so that the page tells
// it nothing of other channels, not even how busy they are. after < 0
// returns no message, only where the newest is.
func (r *ReadOnly) ArrivalsFor(ctx context.Context, id Identity, after int64, scope ArrivalScope, limit int) (ArrivalPage, error) {
	if id.Name == "" && id.Workspace == "" {
		return ArrivalPage{}, errNoParty
	}
	var out ArrivalPage
	err := r.longView(ctx, partyKey(id), func(t *tx) error {
		p, err := t.existingParty(id)
		if errors.Is(err, ErrUnknownParty) {
			return nil // nothing waits on a party not made yet
		}
		if err != nil {
			return err
		}
		out, err = t.arrivalsOf(p, after, scope, limit)
		return err
	})
	return out, err
}

// newestReadable is the newest message p can read, archived or not: the
// last of each of its channels (the channel's index walked from its
// end) and the last of the items it consumes.
func (t *tx) newestReadable(p party) (int64, error) {
	var newest int64
	err := t.row(`SELECT coalesce(max(id), 0) FROM (
		SELECT (SELECT m.id FROM messages m WHERE m.channel_id = cp.channel_id ORDER BY m.seq DESC LIMIT 1) AS id
		FROM channel_parties cp WHERE cp.party_id = ?1 AND cp.left_at IS NULL
		UNION ALL SELECT max(message_id) FROM item_consumers WHERE party_id = ?1) AS readable`, p.id).Scan(&newest)
	return newest, err
}

func (t *tx) arrivalsOf(p party, after int64, scope ArrivalScope, limit int) (ArrivalPage, error) {
	limit = max(limit, 1)
	newest, err := t.newestReadable(p)
	if err != nil || after < 0 || after >= newest {
		return ArrivalPage{Newest: newest}, err
	}
	rows, err := t.query(`SELECT m.id, c.name, m.seq, m.kind, a.name, coalesce(m.title, ''), m.body, m.created_at
		FROM messages m JOIN channels c ON c.id = m.channel_id JOIN parties a ON a.id = m.author_id
		WHERE m.id > ?1 AND m.id <= ?3 AND m.is_archived = 0 AND (?4 = 1 OR m.author_id <> ?2) AND (
			m.channel_id IN (SELECT channel_id FROM channel_parties WHERE left_at IS NULL AND party_id = ?2)
			OR (m.kind = 'ask' AND m.id IN (SELECT message_id FROM item_consumers WHERE party_id = ?2)))
		ORDER BY m.id LIMIT ?5`, after, p.id, newest, scope == Readable, limit+1)
	if err != nil {
		return ArrivalPage{}, err
	}
	found, err := scanArrivals(rows)
	if err != nil {
		return ArrivalPage{}, err
	}
	page := ArrivalPage{Arrivals: found, Newest: newest}
	if len(found) > limit {
		page.Arrivals, page.More = found[:limit], true
		page.Newest = found[limit-1].ID
	}
	return page, nil
}

func scanArrivals(rows *sql.Rows) ([]Arrival, error) {
	defer rows.Close()
	var out []Arrival
	for rows.Next() {
		var a Arrival
		if err := rows.Scan(&a.ID, &a.Channel, &a.Seq, &a.Kind, &a.Author, &a.Title, &a.Body, &a.At); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func (t *tx) arrivals(workspace string, after int64) ([]Arrival, int64, error) {
	var newest int64
	if err := t.row(`SELECT coalesce(max(id), 0) FROM messages`).Scan(&newest); err != nil {
		return nil, 0, err
	}
	if after < 0 || after >= newest {
		return nil, newest, nil
	}
	rows, err := t.query(`WITH me(id) AS (SELECT id FROM parties WHERE workspace_path = ?2)
		SELECT m.id, c.name, m.seq, m.kind, a.name, coalesce(m.title, ''), m.body, m.created_at
		FROM messages m JOIN channels c ON c.id = m.channel_id JOIN parties a ON a.id = m.author_id
		WHERE m.id > ?1 AND m.id <= ?3 AND m.is_archived = 0 AND (?2 = '' OR (
			m.author_id <> coalesce((SELECT id FROM me), 0) AND (
				m.channel_id IN (SELECT channel_id FROM channel_parties WHERE left_at IS NULL AND party_id = (SELECT id FROM me))
				OR (m.kind = 'ask' AND m.id IN (SELECT message_id FROM item_consumers WHERE party_id = (SELECT id FROM me))))))
		ORDER BY m.id`, after, workspace, newest)
	if err != nil {
		return nil, 0, err
	}
	out, err := scanArrivals(rows)
	return out, newest, err
}
