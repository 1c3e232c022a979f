package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// BenchmarkAttention is issue 34's bench: 16 parties in one channel, 100
// posts, each naming one party with @name. After each post every party's
// hooks have their say: a party a post wakes gets the wake's report (and
// then reads the channel, as a woken agent does); any other gets what its
// next prompt's UserPromptSubmit would inject. It reports, per post, the
// bytes of hook context summed over all 16 parties, the wakes, and the
// bytes to the parties the post did not address. "all" is every party
// in all mode with no per-sender limit — what every session was told and
// woken by before attention; "mentions" is the default (mentions above
// three parties, attention.wakes_per_10m = 6).
//
//	go test ./hook -run '^$' -bench Attention -benchtime 1x
func BenchmarkAttention(b *testing.B) {
	for _, mode := range []string{store.AttentionAll, store.AttentionMentions} {
		b.Run(mode, func(b *testing.B) {
			var r attentionRun
			for b.Loop() {
				r = runAttention(b, mode)
			}
			b.ReportMetric(float64(r.bytes)/float64(r.posts), "ctx-bytes/post")
			b.ReportMetric(float64(r.wakes)/float64(r.posts), "wakes/post")
			b.ReportMetric(float64(r.othersBytes)/float64(r.posts*(r.parties-2)), "bytes/other/post")
			b.ReportMetric(float64(r.othersMax), "max-bytes/other/post")
			b.ReportMetric(float64(r.countLine), "count-line-bytes")
		})
	}
}

type attentionRun struct {
	posts, parties, wakes int
	// bytes is all hook context; othersBytes what went to the parties a
	// post neither came from nor addressed, othersMax the most one of
	// them got after one post.
	bytes, othersBytes, othersMax, countLine int
}

func runAttention(b *testing.B, mode string) attentionRun {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(b.TempDir(), "chat.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	out := attentionRun{posts: 100, parties: 16}
	ids := make([]store.Identity, out.parties)
	var names []string
	for i := range ids {
		ids[i] = store.Identity{Name: fmt.Sprintf("repo-%02d", i), Workspace: fmt.Sprintf("/srv/repo-%02d", i)}
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
	limit := 6
	if mode == store.AttentionAll {
		limit = 0
		for _, id := range ids {
			if _, err := db.SetAttention(ctx, id, store.AttentionArgs{Channel: "all-hands", Mode: mode}); err != nil {
				b.Fatal(err)
			}
		}
	}
	r, err := store.OpenReadOnly(ctx, db.Path())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	seen := make([]Seen, out.parties)
	wakes := make([]WakeLog, out.parties)
	for i := range seen {
		seen[i].Recorded = true
	}
	now := time.Now()
	for i := range out.posts {
		from, to := i%out.parties, (i+1+i/out.parties)%out.parties
		if to == from {
			to = (to + 1) % out.parties
		}
		text := fmt.Sprintf("@%s the build of change %d is red on your side — can you look?", ids[to].Name, i)
		if _, err := db.Say(ctx, ids[from], store.SayArgs{Channel: "all-hands", Text: text}); err != nil {
			b.Fatal(err)
		}
		now = now.Add(6 * time.Second) // 100 posts in ten minutes
		for p, id := range ids {
			pend, err := r.Pending(ctx, id.Workspace, NewestShown)
			if err != nil {
				b.Fatal(err)
			}
			s := seen[p]
			s.Wakes, s.Limit, s.Now = wakes[p], limit, now
			got := 0
			if ans := wakeAnswer(pend, s); ans.Text != "" {
				out.wakes++
				got = len(ans.Text)
				seen[p].Told, seen[p].Blocked = ans.Told, ans.Blocked
				for _, sender := range ans.Decision.Senders {
					wakes[p].Wakes = append(wakes[p].Wakes, WakeAt{From: sender, At: now})
				}
				if _, err := db.Read(ctx, id, store.ReadArgs{Channel: "all-hands", Limit: 500}); err != nil {
					b.Fatal(err)
				}
			} else {
				ans := Respond(UserPromptSubmit, pend, s)
				seen[p].Told, seen[p].Blocked = ans.Told, ans.Blocked
				got = len(contextText(b, ans.Text))

				if got > 0 && pend.Channels[0].ForYou == 0 && mode == store.AttentionMentions && out.countLine == 0 {
					out.countLine = got
				}
			}
			out.bytes += got
			if p != from && p != to {
				out.othersBytes += got
				out.othersMax = max(out.othersMax, got)
			}
		}
	}
	return out
}

// contextText is the text a UserPromptSubmit answer adds to the context.
func contextText(b *testing.B, out string) string {
	if out == "" {
		return ""
	}
	var c contextOutput
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		b.Fatal(err)
	}
	return c.HookSpecificOutput.AdditionalContext
}
