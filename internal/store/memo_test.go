package store

import (
	"context"
	"reflect"
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
	t.Parallel()
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
	t.Parallel()
	db := world(t)
	fingerprint(t, db)
	s := db.readSweep()
	if !s.known {
		t.Skip("fingerprint unknown")
	}
	old := time.Now().Add(-lastSeenEvery - time.Second).UTC().Format(time.RFC3339Nano)
	db.answers.keep(s.fp, "k", "v", old)
	if _, ok := db.answers.lookup(s.fp, "k"); ok {
		t.Fatal("an entry whose last_seen is stale still answers")
	}
	db.answers.keep(s.fp, "k", "v", time.Now().UTC().Format(time.RFC3339Nano))
	if _, ok := db.answers.lookup(s.fp, "k"); !ok {
		t.Fatal("a fresh entry at an unchanged state does not answer")
	}
}

// On a team store a party's inbox is kept by the state of what the party
// sees: writes in channels it is not in leave it answered from memory,
// and every write that concerns it — a say in its channel, an item in a
// channel it has left, an ack of its item — is seen at once.
func TestTeamInboxMemoIsPerParty(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		other := secondHandle(t, db)
		must(t)(db.ChannelNew(ctx, fw, "fw--gw", "", []string{"mesh-gw"}))
		inbox := func(want int) {
			t.Helper()
			in, err := db.Inbox(ctx, dash)
			if err != nil || in.UnreadTotal != want {
				t.Fatalf("inbox: unread %d, %v; want %d", in.UnreadTotal, err, want)
			}
		}
		inbox(0)
		inbox(0)
		hits := db.answers.hitCount()
		for i := range 3 {
			must(t)(other.Say(ctx, fw, SayArgs{Text: "elsewhere", Channel: "fw--gw"}))
			inbox(0)
			if got := db.answers.hitCount() - hits; got != i+1 {
				t.Fatalf("after %d writes in a channel node-dash is not in: %d inboxes from memory, want %d", i+1, got, i+1)
			}
		}
		must(t)(other.Say(ctx, gw, SayArgs{Text: "to dash", Channel: "gw--dash"}))
		inbox(1)

		// What the party sees, read afresh by a handle with no memo.
		truth := func() Inbox {
			t.Helper()
			in, err := secondHandle(t, db).Inbox(ctx, dash)
			if err != nil {
				t.Fatal(err)
			}
			return in
		}
		same := func(step string) {
			t.Helper()
			db.Inbox(ctx, dash) // kept, or answered from memory
			in, err := db.Inbox(ctx, dash)
			want := truth()
			in.State, want.State = "", ""
			if err != nil || !reflect.DeepEqual(in, want) {
				t.Fatalf("%s: inbox %+v, %v; want %+v", step, in, err, want)
			}
		}
		must(t)(other.Ask(ctx, dash, AskArgs{Title: "left behind", Channel: "gw--dash", Consumers: []string{"mesh-gw"}}))
		must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 50}))
		must(t)(db.ChannelLeave(ctx, dash, "gw--dash"))
		same("after leaving the item's channel")
		must(t)(other.Ack(ctx, gw, "gw--dash:left-behind", "", ""))
		same("after mesh-gw's ack in a channel dash left")
		must(t)(other.Resolve(ctx, dash, "gw--dash:left-behind", "", false, ""))
		same("after the resolve")
		must(t)(other.PruneOK(ctx, gw, "gw--dash:left-behind", ""))
		same("after mesh-gw's prune-ok")
	})
}

// A peer's read changes the caller's read receipts, so the inbox kept in
// the memo must not answer for the state before it. On a team store that
// read moves neither the channel's clock nor the caller's — only the
// peer's own and its cursor — so the party's state must name the cursors.
func TestInboxMemoMovesWithAPeersRead(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		other := secondHandle(t, db)
		must(t)(db.Say(ctx, gw, SayArgs{Text: "flashed", Channel: "gw--dash"}))
		unreadBy := func() []Receipt {
			t.Helper()
			return must2[Inbox](t)(db.Inbox(ctx, gw)).UnreadByPeers
		}
		for tries := 0; ; tries++ {
			trustedFingerprint(t, db)
			hits := db.answers.hitCount()
			if got := unreadBy(); len(got) != 1 {
				t.Fatalf("before node-dash reads: %+v", got)
			}
			if db.answers.hitCount() > hits {
				break // answered from the memo: it holds this inbox
			}
			if tries == 5 {
				t.Fatal("the inbox never answered from the memo")
			}
		}
		must(t)(other.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 50}))
		if got := unreadBy(); len(got) != 0 {
			t.Fatalf("after node-dash read it, the inbox still says it is unread: %+v", got)
		}
	})
}
