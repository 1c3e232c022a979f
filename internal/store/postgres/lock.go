package postgres

import (
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"

	"context"
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

// ChannelLock is the advisory lock namespace of the channels' locks (the
// first key of PostgreSQL's two-key form; the second is the channel's
// id): a program that must hold a channel from outside (a test) takes it.
const ChannelLock = lockChannel

// Advisory lock namespaces (the first key of PostgreSQL's two-key form).
const (
	lockChannel     int32 = 0x6d63_0001 // second key: the channel's id
	lockChannelName int32 = 0x6d63_0002 // second key: a hash of the name
	lockPartyNew    int32 = 0x6d63_0003 // second key: a hash of the name asked for
	lockClaims      int32 = 0x6d63_0004 // second key: a hash of the claims' kind
)

// teamTx is one team-store transaction's locks and clocks.
type teamTx struct {
	// writing: this call writes, so the channels it finds are locked.
	writing bool
	// patience is the busy timeout: how long a call waits for a channel
	// in which nothing commits.
	patience time.Duration
	// names are the names the call holds the lock of (LockName).
	names  map[string]bool
	locked map[int64]bool
	clocks map[int64]bool
	// wakes are keys the commit's announcement names beside its clocks:
	// the parties another's call seated, whose waiters do not yet know
	// the channel.
	wakes map[int64]bool
}

func newTeamTx(writing bool, patience time.Duration) *teamTx {
	return &teamTx{writing: writing, patience: patience, names: map[string]bool{}, locked: map[int64]bool{}, clocks: map[int64]bool{}, wakes: map[int64]bool{}}
}

// Wake names a clock key whose waiters the commit concerns although the
// call bumps no clock of it: a party seated in a channel.
func (t *tx) Wake(key int64) {
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

// LockChannel takes channel id's write lock for the rest of a writing
// call's transaction. fresh reports that the call did not hold it yet:
// anything it read of the channel before may have changed, and must be
// read again. In reads it does nothing.
func (t *tx) LockChannel(id int64) (fresh bool, err error) {
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
	if err := t.Row(`SELECT pg_try_advisory_xact_lock(?, ?)`, lockChannel, int32(id)).Scan(&got); err != nil || got {
		return err
	}
	got, err := engine.Wait(t.ctx, t.team.patience, t.team.patience,
		func() (int64, error) { return t.channelClock(id) },
		func(_ context.Context, wait time.Duration) (bool, error) { return t.lockChannelWithin(id, wait) })
	if err == nil && !got {
		err = engine.Busy{Cause: engine.Channel}
	}
	return err
}

// lockChannelWithin waits at most wait for channel id's lock. A lock that
// times out aborts what it ran in: the savepoint keeps the transaction
// going for the next period.
func (t *tx) lockChannelWithin(id int64, wait time.Duration) (bool, error) {
	if _, err := t.ExecContext(t.ctx, `SAVEPOINT channel_turn`); err != nil {
		return false, err
	}
	if _, err := t.ExecContext(t.ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", wait.Milliseconds())); err != nil {
		return false, err
	}
	err := t.advisoryLock(lockChannel, int32(id))
	if err == nil {
		// The period's lock_timeout would outlive the savepoint: the
		// rest of the call waits by the busy timeout again.
		_, err = t.ExecContext(t.ctx, fmt.Sprintf("RELEASE SAVEPOINT channel_turn; SET LOCAL lock_timeout = %d", t.team.patience.Milliseconds()))
		return err == nil, err
	}
	if sqlState(err) != "55P03" {
		return false, err
	}
	_, err = t.ExecContext(t.ctx, `ROLLBACK TO SAVEPOINT channel_turn`)
	return false, err
}

// channelClock is how often channel id's writes have committed.
func (t *tx) channelClock(id int64) (int64, error) {
	var n int64
	err := t.Row(`SELECT coalesce((SELECT n FROM store_clocks WHERE key = ?), 0)`, id).Scan(&n)
	return n, err
}

// TryLockChannel takes channel id's lock if no other call holds it: the
// sweep archives in other channels than the call's own, and waiting there
// could deadlock two calls that each hold the other's channel. A channel
// it cannot have now is swept by a later call. Another call may have
// written in the channel since this one read it, so what it read must be
// read again (recheck).
func (t *tx) TryLockChannel(id int64) (got, recheck bool, err error) {
	if t.team == nil {
		return true, false, nil // a READ ONLY transaction writes nothing
	}
	if t.team.locked[id] {
		return true, true, nil
	}
	if err := t.writes(); err != nil {
		return false, false, err
	}
	if err := t.Row(`SELECT pg_try_advisory_xact_lock(?, ?)`, lockChannel, int32(id)).Scan(&got); err != nil || !got {
		return false, false, err
	}
	t.team.locked[id] = true
	t.team.clocks[id] = true
	return true, true, nil
}

// LockName serializes the calls that create the same named thing (a
// channel, a party), which no row exists yet to lock; a call takes each
// name's lock once. fresh says it did not hold it before.
func (t *tx) LockName(space engine.Space, name string) (fresh bool, err error) {
	if t.team == nil {
		return false, nil
	}
	key := fmt.Sprint(space, " ", name)
	if t.team.names[key] {
		return false, nil
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	if err := t.advisoryLock(nameSpaces[space], int32(h.Sum32())); err != nil {
		return false, err
	}
	t.team.names[key] = true
	return true, nil
}

// nameSpaces are the advisory lock namespaces of LockName's spaces.
var nameSpaces = map[engine.Space]int32{engine.ChannelName: lockChannelName, engine.NewParty: lockPartyNew, engine.Claims: lockClaims}

// advisoryLock waits for a transaction-scoped advisory lock (within the
// transaction's lock_timeout). Taking it writes nothing.
func (t *tx) advisoryLock(space, key int32) error {
	if err := t.writes(); err != nil {
		return err
	}
	var none any
	return t.Row(`SELECT pg_advisory_xact_lock(?, ?)`, space, key).Scan(&none)
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

// Clock marks a clock row the call's commit bumps: a channel's id, or
// minus a party's id.
func (t *tx) Clock(key int64) {
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

// SeenParty writes the party's last_seen. Another call of the same party
// (a session's calls overlap, a party has several sessions) may be
// writing it right now and will hold the row until it commits: then this
// call leaves it to that one, a few milliseconds apart, rather than wait
// its turn — a party's calls never queue behind each other for a time
// stamp.
func (t *tx) SeenParty(id int64, now string) error {
	res, err := t.Exec(`UPDATE parties SET last_seen = ?1
		WHERE id = (SELECT id FROM parties WHERE id = ?2 FOR NO KEY UPDATE SKIP LOCKED) AND last_seen < ?1`, now, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		t.Clock(-id)
	}
	return nil
}
