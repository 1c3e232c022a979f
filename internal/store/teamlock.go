package store

import (
	"fmt"
	"hash/fnv"
	"slices"
)

// How a team store's calls take turns. There is no store-wide write lock:
// a call that writes in a channel holds that channel's lock (an advisory
// lock keyed by the channel's id) from the moment it finds the channel to
// its commit, so that within a channel
//
//   - seqs are allocated max+1 under the lock: gapless, and committed in
//     seq order (a reader that sees seq n sees every seq below it, so a
//     cursor never passes a row that commits later);
//   - an item's state moves one call at a time: two prune-oks cannot both
//     miss the archive, nor archive one item twice;
//
// while calls in other channels run beside it. A read takes no lock at
// all; what it writes — a cursor, last_seen — only moves forward and
// touches rows of its own party. New parties and channels take a lock on
// their name. Every call also holds a shared lock that the person's own
// commands (parties move/merge/forget, reset-cursor) and migrate's copy
// take exclusively, since they rewrite rows across channels.
//
// Each writing call bumps the clock rows of what it touched (store_clocks:
// a channel's id, or minus a party's id) instead of one store-wide
// counter, which would make every write wait for the one before it at its
// commit. The store's state is the sum of the clocks.

// Advisory lock namespaces (the first key of PostgreSQL's two-key form).
const (
	lockChannel     int32 = 0x6d63_0001 // second key: the channel's id
	lockChannelName int32 = 0x6d63_0002 // second key: a hash of the name
	lockPartyNew    int32 = 0x6d63_0003 // second key: 0
)

// teamTx is one team-store transaction's locks and clocks.
type teamTx struct {
	// writing: this call writes, so the channels it finds are locked.
	writing bool
	// partyLocked: the call holds the lock under which parties are made.
	partyLocked bool
	locked      map[int64]bool
	clocks      map[int64]bool
}

func newTeamTx(writing bool) *teamTx {
	return &teamTx{writing: writing, locked: map[int64]bool{}, clocks: map[int64]bool{}}
}

// lockChannel takes channel id's write lock for the rest of a writing
// call's transaction. fresh reports that the call did not hold it yet:
// anything it read of the channel before may have changed, and must be
// read again. On SQLite, and in reads, it does nothing.
func (t *tx) lockChannel(id int64) (fresh bool, err error) {
	if t.team == nil || !t.team.writing || t.team.locked[id] {
		return false, nil
	}
	if err := t.advisoryLock(lockChannel, int32(id)); err != nil {
		return false, fmt.Errorf("wait for channel %d: %w", id, err)
	}
	t.team.locked[id] = true
	t.team.clocks[id] = true
	return true, nil
}

// tryLockChannel takes channel id's lock if no other call holds it: the
// sweep archives in other channels than the call's own, and waiting there
// could deadlock two calls that each hold the other's channel. A channel
// it cannot have now is swept by a later call. On SQLite it always
// succeeds.
func (t *tx) tryLockChannel(id int64) (bool, error) {
	if t.team == nil || t.team.locked[id] {
		return true, nil
	}
	var got bool
	if err := t.row(`SELECT pg_try_advisory_xact_lock(?, ?)`, lockChannel, int32(id)).Scan(&got); err != nil || !got {
		return false, err
	}
	t.team.locked[id] = true
	t.team.clocks[id] = true
	return true, nil
}

// lockName serializes the calls that create the same named thing (a
// channel, a party), which no row exists yet to lock.
func (t *tx) lockName(space int32, name string) error {
	if t.team == nil {
		return nil
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return t.advisoryLock(space, int32(h.Sum32()))
}

// advisoryLock waits for a transaction-scoped advisory lock (within the
// transaction's lock_timeout). Taking it writes nothing.
func (t *tx) advisoryLock(space, key int32) error {
	var none any
	return t.row(`SELECT pg_advisory_xact_lock(?, ?)`, space, key).Scan(&none)
}

// clock marks a clock row the call's commit bumps: a channel's id, or
// minus a party's id.
func (t *tx) clock(key int64) {
	if t.team != nil {
		t.team.clocks[key] = true
	}
}

// clockKeys are the rows to bump at commit, in one order for every call
// (two calls bumping the same two rows never wait for each other in a
// circle). A call that wrote without marking any bumps row 0.
func (tt *teamTx) clockKeys() []int64 {
	keys := make([]int64, 0, len(tt.clocks))
	for k := range tt.clocks {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		keys = append(keys, 0)
	}
	slices.Sort(keys)
	return keys
}
