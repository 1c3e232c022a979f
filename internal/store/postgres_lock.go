package store

import (
	"fmt"
	"hash/fnv"
	"slices"
	"time"
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
	lockPartyNew    int32 = 0x6d63_0003 // second key: a hash of the name asked for
)

// teamTx is one team-store transaction's locks and clocks.
type teamTx struct {
	// writing: this call writes, so the channels it finds are locked.
	writing bool
	// patience is the busy timeout: how long a call waits for a channel
	// in which nothing commits.
	patience time.Duration
	// partyLocked: the call holds the lock under which parties are made.
	partyLocked bool
	locked      map[int64]bool
	clocks      map[int64]bool
	// wakes are keys the commit's announcement names beside its clocks:
	// the parties another's call seated, whose waiters do not yet know
	// the channel.
	wakes map[int64]bool
}

func newTeamTx(writing bool, patience time.Duration) *teamTx {
	return &teamTx{writing: writing, patience: patience, locked: map[int64]bool{}, clocks: map[int64]bool{}, wakes: map[int64]bool{}}
}

// wake names a clock key whose waiters the commit concerns although the
// call bumps no clock of it: a party seated in a channel.
func (t *tx) wake(key int64) {
	if t.team != nil {
		t.team.wakes[key] = true
	}
}

// wakeKeys are the keys a commit's announcement names: every clock the
// call marked (bumped or not, see clockKeys) and every key it woke.
func (tt *teamTx) wakeKeys() []int64 {
	keys := make([]int64, 0, len(tt.clocks)+len(tt.wakes))
	for k := range tt.clocks {
		keys = append(keys, k)
	}
	for k := range tt.wakes {
		if !tt.clocks[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// lockChannel takes channel id's write lock for the rest of a writing
// call's transaction. fresh reports that the call did not hold it yet:
// anything it read of the channel before may have changed, and must be
// read again. On SQLite, and in reads, it does nothing.
func (t *tx) lockChannel(id int64) (fresh bool, err error) {
	if t.team == nil || !t.team.writing || t.team.locked[id] {
		return false, nil
	}
	if err := t.writes(); err != nil {
		return false, err
	}
	if err := t.waitForChannel(id); err != nil {
		return false, err
	}
	t.team.locked[id] = true
	t.team.clocks[id] = true
	return true, nil
}

// waitForChannel waits for channel id's lock while the channel makes
// progress. The busy timeout is how long a call waits for a channel in
// which nothing commits, not how long a queue may be: a burst of a few
// hundred calls in one channel commits one after another, and the last
// of them is as good as the first. So a period of waiting that ends
// without the lock is followed by another as long as the channel's clock
// moved during it; a channel that stood still for a whole busy timeout
// fails the call with ErrBusy.
func (t *tx) waitForChannel(id int64) error {
	var got bool
	if err := t.row(`SELECT pg_try_advisory_xact_lock(?, ?)`, lockChannel, int32(id)).Scan(&got); err != nil || got {
		return err
	}
	last, err := t.channelClock(id)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(t.team.patience)
	for {
		wait := time.Until(deadline)
		// A lock that times out aborts what it ran in: the savepoint keeps
		// the transaction going for the next period.
		if _, err := t.ExecContext(t.ctx, `SAVEPOINT channel_turn`); err != nil {
			return err
		}
		if _, err := t.ExecContext(t.ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", wait.Milliseconds())); err != nil {
			return err
		}
		err = t.advisoryLock(lockChannel, int32(id))
		if err == nil {
			// The period's lock_timeout would outlive the savepoint: the
			// rest of the call waits by the busy timeout again.
			_, err = t.ExecContext(t.ctx, fmt.Sprintf("RELEASE SAVEPOINT channel_turn; SET LOCAL lock_timeout = %d", t.team.patience.Milliseconds()))
			return err
		}
		if sqlState(err) != "55P03" {
			return err
		}
		if _, err := t.ExecContext(t.ctx, `ROLLBACK TO SAVEPOINT channel_turn`); err != nil {
			return err
		}
		now, err := t.channelClock(id)
		if err != nil {
			return err
		}
		if now == last {
			return busyError{cause: waitedChannel}
		}
		last, deadline = now, time.Now().Add(t.team.patience)
	}
}

// channelClock is how often channel id's writes have committed.
func (t *tx) channelClock(id int64) (int64, error) {
	var n int64
	err := t.row(`SELECT coalesce((SELECT n FROM store_clocks WHERE key = ?), 0)`, id).Scan(&n)
	return n, err
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
	if err := t.writes(); err != nil {
		return false, err
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
	if err := t.writes(); err != nil {
		return err
	}
	var none any
	return t.row(`SELECT pg_advisory_xact_lock(?, ?)`, space, key).Scan(&none)
}

// inChannel reports a call that holds a channel's lock.
func (tt *teamTx) inChannel() bool {
	for k := range tt.clocks {
		if k > 0 {
			return true
		}
	}
	return false
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
// circle). Any one row moves the store's state; a channel's is preferred,
// which only the holder of its lock bumps, over a party's, which the
// party's calls in other channels would each wait for at their commit.
// A call that wrote without marking any bumps row 0.
func (tt *teamTx) clockKeys() []int64 {
	keys := make([]int64, 0, len(tt.clocks))
	for k := range tt.clocks {
		if k > 0 || !tt.inChannel() {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		keys = append(keys, 0)
	}
	slices.Sort(keys)
	return keys
}
