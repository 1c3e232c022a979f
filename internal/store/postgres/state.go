package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// WaitKeys are the clock keys of what the party me sees on a team store,
// for a waiter to be woken only by the commits that concern it
// (announcement): the channels it ever sat in, its own, and 0, the
// person's commands. nil on a database file, or for a party not made yet:
// then every change concerns the waiter.
func (e *Engine) WaitKeys(ctx context.Context, who engine.Who) ([]int64, error) {
	by, key := who.Key()
	var id int64
	var channels string
	err := e.sql.QueryRowContext(ctx, `SELECT me.id, coalesce((SELECT string_agg(channel_id::text, ',') FROM channel_parties WHERE party_id = me.id), '')
		FROM parties me WHERE me.`+by+` = $1`, key).Scan(&id, &channels)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, e.Describe(err)
	}
	keys := []int64{0, -id}
	for _, f := range strings.Split(channels, ",") {
		if k, err := strconv.ParseInt(f, 10, 64); err == nil {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// PartyState names the state of what one party sees: the clocks of the
// channels it has ever sat in, its own, and row 0 (the person's commands).
// Every write that changes the party's inbox bumps one of them — it
// happens in one of those channels under its lock (a consumer is seated
// when its item is raised, and leaving keeps the seat's row), or is the
// party's own — so other channels' writes leave it where it was. The set
// itself is read with the clocks: a channel the party joins enters it and
// changes the name. So do the cursors of its channels: a peer's read
// moves only the peer's own clock, and the party's read receipts
// (unread_by_peers) move with it. Cursors only go forward (the person's
// commands that set one bump row 0), so their sum moves at every read
// that moves one. One probe per seat, whatever the size of the history:
// every inbox on a team store asks it.
//
// It gives the party's row too, which a read call then need not look up
// again (engine.PartyStates).
func (e *Engine) PartyState(ctx context.Context, who engine.Who) (string, engine.Party, bool) {
	by, key := who.Key()
	var state sql.NullString
	var me engine.Party
	err := e.sql.QueryRowContext(ctx, `SELECT me.id, me.name, me.last_seen, me.id || '|' || coalesce((
			SELECT string_agg(k.key || ':' || k.n, ',' ORDER BY k.key) FROM store_clocks k
			WHERE k.key IN (0, -me.id) OR k.key IN (SELECT channel_id FROM channel_parties WHERE party_id = me.id)), '') || '|' ||
		       (SELECT coalesce(sum(c.last_seq), 0) FROM cursors c
		        WHERE c.channel_id IN (SELECT channel_id FROM channel_parties WHERE party_id = me.id))
		FROM parties me WHERE me.`+by+` = $1`,
		key).Scan(&me.ID, &me.Name, &me.LastSeen, &state)
	if err != nil || !state.Valid {
		return "", engine.Party{}, false // no such party yet: nothing to keep
	}
	return e.where + "|" + state.String, me, true
}

// State is the store's state: the sum of its clocks, which every commit
// that wrote moves forward.
func (e *Engine) State() (string, bool) {
	var n int64
	if err := e.sql.QueryRowContext(context.Background(), `SELECT coalesce(sum(n), 0) FROM store_clocks`).Scan(&n); err != nil {
		return "", false
	}
	return fmt.Sprintf("%s|%d", e.where, n), true
}
