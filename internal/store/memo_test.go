package store

import (
	"context"
	"testing"
	"time"
)

func (m *answerMemo) hitCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hits
}

// Inbox and whoami answer from the memo while nothing is committed, and
// see at once every commit of another handle (another process).
func TestAnswerMemoSeesEveryCommit(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		other := secondHandle(t, db)
		check := func(want int) {
			t.Helper()
			in, err := db.Inbox(ctx, dash)
			if err != nil || in.UnreadTotal != want {
				t.Fatalf("inbox: unread %d, %v; want %d", in.UnreadTotal, err, want)
			}
			w, err := db.Whoami(ctx, dash, "")
			if err != nil || w.UnreadTotal != want {
				t.Fatalf("whoami: unread %d, %v; want %d", w.UnreadTotal, err, want)
			}
		}
		for i := 0; i < 5; i++ {
			trustedFingerprint(t, db)
			check(i) // read at a fingerprinted state: kept
			hits := db.answers.hitCount()
			check(i) // the same state: answered from the memo
			if db.answers.hitCount() != hits+2 {
				t.Fatalf("round %d: %d memo answers at an unchanged, fingerprinted state, want 2", i, db.answers.hitCount()-hits)
			}
			must(t)(other.Say(ctx, gw, SayArgs{Text: "news"}))
			check(i + 1) // at once, before the new state has a fingerprint
			trustedFingerprint(t, db)
			check(i + 1) // and once it has
		}
		must(t)(db.Whoami(ctx, dash, "about dash"))
		if w, _ := db.Whoami(ctx, dash, ""); w.About == nil || *w.About != "about dash" {
			t.Errorf("whoami after setting about: %v", w.About)
		}
	})
}

// An entry stops answering once the party's last_seen would be written again.
func TestAnswerMemoExpiresWithLastSeen(t *testing.T) {
	db := world(t)
	fingerprint(t, db.path)
	s := db.readSweep()
	if !s.known {
		t.Skip("fingerprint unknown")
	}
	old := time.Now().Add(-lastSeenEvery - time.Second).UTC().Format(time.RFC3339Nano)
	db.answers.keep(s.fp, "k", "v", old)
	if _, ok := db.answers.lookup(s, "k"); ok {
		t.Fatal("an entry whose last_seen is stale still answers")
	}
	db.answers.keep(s.fp, "k", "v", time.Now().UTC().Format(time.RFC3339Nano))
	if _, ok := db.answers.lookup(s, "k"); !ok {
		t.Fatal("a fresh entry at an unchanged state does not answer")
	}
}
