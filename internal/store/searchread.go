package store

import (
	"context"
	"errors"
	"strings"
)

// A search reads, however long it takes, and must never make a writer
// wait: it runs as engine.Read (DB.read) — on SQLite the index catch-up
// and the query beside chat.db's writers, never through their path (the
// process's writer slot, the writers' queue on chat.db.lock, BEGIN
// IMMEDIATE); on PostgreSQL in a READ ONLY transaction on the pool,
// without the advisory lock every write takes, within the share of the
// pool long reads may hold. A search of a large channel that went through
// DB.view held that lock for all its seconds, and every say beside it
// waited, then failed as busy.

// reader is a handle that reads the chat database for a search: DB or
// ReadOnly.
type reader interface {
	read(ctx context.Context, fn func(*tx) error) error
}

// searchScope is the channels an agent's search looks in: the one named,
// which the caller must sit in, or all it sits in. It is read on the read
// path. Only a party seen for the first time, or not for a while, is
// written first, as every call writes it (DB.view: a short transaction of
// its own, before the search and never during it).
func (d *DB) searchScope(ctx context.Context, me Identity, channel string) ([]int64, error) {
	var scope []int64
	var seen string
	err := d.read(ctx, func(t *tx) error {
		p, err := t.existingParty(me)
		if err != nil {
			return err
		}
		seen = p.lastSeen
		scope, err = t.searchScope(p, channel)
		return err
	})
	if errors.Is(err, ErrUnknownParty) || err == nil && stale(seen, Timestamp(d.clock())) {
		err = d.view(ctx, func(t *tx) error {
			p, err := t.me(me, false)
			if err != nil {
				return err
			}
			scope, err = t.searchScope(p, channel)
			return err
		})
	}
	return scope, err
}

func (t *tx) searchScope(p party, channel string) ([]int64, error) {
	if strings.TrimSpace(channel) != "" {
		c, err := t.seatedChannel(p, channel, "")
		return []int64{c.id}, err
	}
	seats, err := t.seats(p.id)
	scope := make([]int64, len(seats))
	for i, c := range seats {
		scope[i] = c.id
	}
	return scope, err
}
