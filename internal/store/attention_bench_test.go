package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkPendingInMentionsMode reads what waits on one party of a
// channel where its attention is mentions, with a history of 1,000 or
// 100,000 messages (one in ten addressed to it, 100 unread) and 4, 16 or
// 64 parties seated: the hook's read must cost the same whatever the
// history, and little more with more parties.
//
//	go test ./internal/store -run '^$' -bench 'InMentionsMode' -benchtime 200x
func BenchmarkPendingInMentionsMode(b *testing.B) {
	for _, history := range []int{1_000, 100_000} {
		for _, parties := range []int{4, 16, 64} {
			b.Run(fmt.Sprintf("history=%d/parties=%d", history, parties), func(b *testing.B) {
				ctx := context.Background()
				db, err := Open(ctx, filepath.Join(b.TempDir(), "chat.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				reader := seedTeam(b, db, history, parties)
				r, err := OpenReadOnly(ctx, db.Path())
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				b.ResetTimer()
				for b.Loop() {
					p, err := r.Pending(ctx, reader.Workspace, 3)
					if err != nil || p.Channels[0].Attention != AttentionMentions || p.Channels[0].Unread != 100 || p.Channels[0].ForYou != 10 {
						b.Fatalf("pending: %v %+v", err, p.Channels)
					}
				}
			})
		}
	}
}

// seedTeam seats parties in all-hands and writes history messages from
// its first party, every tenth addressed to the reader (the second),
// who has read all but the newest 100.
func seedTeam(b *testing.B, db *DB, history, parties int) Identity {
	b.Helper()
	ctx := context.Background()
	ids := make([]Identity, parties)
	var names []string
	for i := range ids {
		ids[i] = Identity{Name: fmt.Sprintf("repo-%02d", i), Workspace: fmt.Sprintf("/srv/repo-%02d", i)}
		if _, err := db.Register(ctx, ids[i]); err != nil {
			b.Fatal(err)
		}
		if i > 0 {
			names = append(names, ids[i].Name)
		}
	}
	if _, err := db.ChannelNew(ctx, ids[0], "all-hands", "", names); err != nil {
		b.Fatal(err)
	}
	seed := func(query string, args ...any) {
		b.Helper()
		if _, err := execRaw(b, db, query, args...); err != nil {
			b.Fatal(err)
		}
	}
	seed(`WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1)
		INSERT INTO messages (channel_id, seq, kind, body, author_id, status, created_at, updated_at)
		SELECT (SELECT id FROM channels WHERE name = 'all-hands'), i, 'say', 'status ' || i,
		       (SELECT id FROM parties WHERE name = 'repo-00'), 'none', ?2, ?2 FROM k`, history, Now())
	seed(`INSERT INTO mentions (message_id, party_id, via)
		SELECT m.id, (SELECT id FROM parties WHERE name = 'repo-01'), 'at' FROM messages m WHERE m.seq % 10 = 0`)
	seed(`INSERT INTO cursors (channel_id, party_id, last_seq, updated_at)
		SELECT (SELECT id FROM channels WHERE name = 'all-hands'), id, ?1, ?2 FROM parties`, history-100, Now())
	return ids[1]
}
