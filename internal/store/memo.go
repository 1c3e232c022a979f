package store

import (
	"sync"
	"time"
)

// answerMemo keeps the last answer of a read-only call (inbox, whoami) per
// party, with the fingerprint of the state it was read from. A call that
// finds the database at that fingerprint again answers from it without a
// transaction: nothing was committed since, so the answer is the same.
// Agents look at their inbox far more often than anyone writes, and with
// a few hundred live items reading it is most of the call
// (docs/performance.md). It holds only answers of calls that wrote nothing
// (no sweep found anything, no cursor moved, no party was created or
// seen): such a call moved no fingerprint.
type answerMemo struct {
	mu      sync.Mutex
	entries map[string]memoEntry
	hits    int // answers served from the memo (for tests)
}

// memoEntries bounds the memo: an entry per party and call kind, so a
// hub's team fits many times over; past it the memo starts afresh.
const memoEntries = 8192

type memoEntry struct {
	// fp is the state the answer was read at: the store's, or on a team
	// store for a party's inbox the state of what that party sees
	// (partyState), which other channels' writes do not move.
	fp    string
	value any
	// until is when the party's last_seen goes stale: from then on a read
	// writes it (lastSeenEvery), so the memo must not answer for it.
	until time.Time
}

// lookup is the answer kept for key, if it was read at the state fp and
// the party's last_seen is still fresh.
func (m *answerMemo) lookup(fp, key string) (any, bool) {
	if fp == "" {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok || e.fp != fp || !time.Now().Before(e.until) {
		return nil, false
	}
	m.hits++
	return e.value, true
}

// keep records the answer of a call that read the state fp, once it has
// committed; lastSeen is the party's last_seen as the call found it.
func (m *answerMemo) keep(fp, key string, value any, lastSeen string) {
	seen, err := time.Parse(time.RFC3339Nano, lastSeen)
	if err != nil || fp == "" || timely(value) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil || len(m.entries) >= memoEntries {
		m.entries = map[string]memoEntry{}
	}
	m.entries[key] = memoEntry{fp: fp, value: value, until: seen.Add(lastSeenEvery)}
}
