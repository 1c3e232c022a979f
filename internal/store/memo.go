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
	fp      string // every entry was read at this fingerprint
	entries map[string]memoEntry
	hits    int // answers served from the memo (for tests)
}

type memoEntry struct {
	value any
	// until is when the party's last_seen goes stale: from then on a read
	// writes it (lastSeenEvery), so the memo must not answer for it.
	until time.Time
}

// lookup is the answer kept for key, if the database is still where it was
// read and the party's last_seen is still fresh.
func (m *answerMemo) lookup(s *readSweep, key string) (any, bool) {
	if !s.known {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok || m.fp != s.fp || !time.Now().Before(e.until) {
		return nil, false
	}
	m.hits++
	return e.value, true
}

// unchanged reports whether no commit landed since s's fingerprint was
// taken (a call's own included): then what the call read is the state s.fp
// names.
func (m *answerMemo) unchanged(s *readSweep) bool {
	if !s.known {
		return false
	}
	now, ok := s.state()
	return ok && now == s.fp
}

// keep records the answer of a call that read the state fp, once it has
// committed; lastSeen is the party's last_seen as the call found it.
func (m *answerMemo) keep(fp, key string, value any, lastSeen string) {
	seen, err := time.Parse(time.RFC3339Nano, lastSeen)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fp != fp {
		m.fp, m.entries = fp, map[string]memoEntry{}
	}
	m.entries[key] = memoEntry{value: value, until: seen.Add(lastSeenEvery)}
}
