package store

import (
	"context"
	"reflect"
	"testing"
)

func TestChannelsShowSeatsWithUnreadCounts(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelNew(ctx, fw, "fw-only", "firmware", []string{"mesh-gw"}))
		must(t)(db.Say(ctx, gw, SayArgs{Text: "one", Channel: "gw--dash"}))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Q", Body: "b", Slug: "q", Channel: "gw--dash"}))
		must(t)(db.Read(ctx, dash, ReadArgs{Channel: "gw--dash", Limit: 1}))
		got := must2[[]ChannelView](t)(openRO(t, db.Path()).Channels(ctx))
		if len(got) != 2 || got[0].Name != "fw-only" || got[1].Name != "gw--dash" {
			t.Fatalf("channels = %+v", got)
		}
		c := got[1]
		want := []Seat{{Party: "mesh-gw", Unread: 0}, {Party: "node-dash", Unread: 1}}
		if c.About != "gateway <-> dashboard" || c.Newest != 2 || c.LiveItems != 1 || !reflect.DeepEqual(c.Seats, want) {
			t.Fatalf("gw--dash = %+v", c)
		}
	})
}

func TestConversationNewestAndEarlier(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		for _, s := range []string{"a", "b", "c", "d", "e"} {
			must(t)(db.Say(ctx, gw, SayArgs{Text: s, Channel: "gw--dash"}))
		}
		r := openRO(t, db.Path())
		conv := must2[Conversation](t)(r.Conversation(ctx, ConversationArgs{Channel: "gw--dash", Newest: 2}))
		if len(conv.Messages) != 2 || conv.Messages[0].Body != "d" || conv.Messages[1].Body != "e" || conv.Earlier != 3 {
			t.Fatalf("newest 2 = %+v earlier %d", conv.Messages, conv.Earlier)
		}
		conv = must2[Conversation](t)(r.Conversation(ctx, ConversationArgs{Channel: "gw--dash", Since: 1, Before: 4}))
		if len(conv.Messages) != 2 || conv.Messages[0].Seq != 2 || conv.Earlier != 0 {
			t.Fatalf("2..3 = %+v", conv.Messages)
		}
		_, err := r.Conversation(ctx, ConversationArgs{Channel: "nope"})
		refused(t, err, "name one of: gw--dash")
	})
}

func TestOwedFollowsTheItem(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "Q", Body: "b", Slug: "q", Channel: "gw--dash"}))
		r := openRO(t, db.Path())
		owed := func() (Owed, Message) {
			t.Helper()
			conv := must2[Conversation](t)(r.Conversation(ctx, ConversationArgs{Channel: "gw--dash"}))
			for _, m := range conv.Messages {
				if m.Slug == "q" {
					return m.Owed(), m
				}
			}
			t.Fatal("no item q")
			return Owed{}, Message{}
		}
		if o, _ := owed(); o.String() != "ack owed by fw-core, node-dash" {
			t.Fatalf("open: %q", o)
		}
		must(t)(db.Reply(ctx, dash, "q", "answer", ""))
		if o, m := owed(); o.String() != "ack owed by fw-core · resolve owed by mesh-gw" || m.Status != "ack" {
			t.Fatalf("acked by one: %q", o)
		}
		must(t)(db.Resolve(ctx, gw, "q", "", false, ""))
		must(t)(db.PruneOK(ctx, dash, "q", ""))
		if o, _ := owed(); o.String() != "prune-ok owed by fw-core, mesh-gw" {
			t.Fatalf("done: %q", o)
		}
		must(t)(db.PruneOK(ctx, gw, "q", ""))
		must(t)(db.PruneOK(ctx, fw, "q", ""))
		arch := must2[Conversation](t)(r.Conversation(ctx, ConversationArgs{Channel: "gw--dash", Archived: true}))
		if len(arch.Messages) != 2 || !arch.Messages[0].Owed().None() {
			t.Fatalf("archived = %+v", arch.Messages)
		}
	})
}
