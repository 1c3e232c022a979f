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
	err := r.view(ctx, func(t *tx) error {
		var err error
		out, newest, err = t.arrivals(workspace, after)
		return err
	})
	return out, newest, err
}

// ArrivalsFor is Arrivals for any caller: a team party is found by its
// name. A zero Identity means every message.
func (r *ReadOnly) ArrivalsFor(ctx context.Context, id Identity, after int64) ([]Arrival, int64, error) {
	var out []Arrival
	var newest int64
	err := r.view(ctx, func(t *tx) error {
		workspace := id.Workspace
		if id.Team {
			err := t.row(`SELECT workspace_path FROM parties WHERE name = ?`, id.Name).Scan(&workspace)
			if errors.Is(err, sql.ErrNoRows) {
				workspace = TeamWorkspace(id.Name) // no party yet: nothing waits on it
			} else if err != nil {
				return err
			}
		}
		var err error
		out, newest, err = t.arrivals(workspace, after)
		return err
	})
	return out, newest, err
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
	defer rows.Close()
	var out []Arrival
	for rows.Next() {
		var a Arrival
		if err := rows.Scan(&a.ID, &a.Channel, &a.Seq, &a.Kind, &a.Author, &a.Title, &a.Body, &a.At); err != nil {
			return nil, 0, err
		}
		out = append(out, a)
	}
	return out, newest, rows.Err()
}
