package store

import (
	"context"
	"testing"
	"time"
)

// A sender sees, per recipient, when our hook or wake told it of a
// message and by which event: on its own messages in chat_read
// (told_to), in chat_inbox's unread_by_peers (told_at), and in the
// person's view. The first telling is kept; tellings of a party's own
// message, of a channel it never sat in, of a message that is not there
// or by an unknown event are dropped.
func TestToldShowsPerRecipient(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		said := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Text: "is the enum closed?", Channel: "gw--dash"}))
		asked := must2[AskResult](t)(db.Ask(ctx, gw, AskArgs{Title: "enum", Body: "closed?", Channel: "gw--dash"}))
		at := time.Now().UTC().Add(-time.Minute)
		added, err := db.RecordTold(ctx, dash, []Telling{
			{Channel: "gw--dash", Seq: said.Seq, At: Timestamp(at), Via: ViaWake},
			{Channel: "gw--dash", Seq: asked.Seq, At: Timestamp(at), Via: ViaStop},
			{Channel: "gw--dash", Seq: asked.Seq, At: Timestamp(at.Add(time.Second)), Via: ViaUserPromptSubmit}, // not the first
			{Channel: "gw--dash", Seq: 99, At: Timestamp(at), Via: ViaWake},                                     // no such message
			{Channel: "gw--dash", Seq: said.Seq, At: Timestamp(at), Via: "Guess"},                               // no such event
			{Channel: "gw--dash", Seq: said.Seq, At: "yesterday", Via: ViaWake},                                 // no time
		})
		if err != nil || added != 2 {
			t.Fatalf("added %d (%v), want 2", added, err)
		}
		if n := must2[int](t)(db.RecordTold(ctx, gw, []Telling{{Channel: "gw--dash", Seq: said.Seq, At: Timestamp(at), Via: ViaWake}})); n != 0 {
			t.Fatal("a party was recorded told of its own message")
		}
		if n := must2[int](t)(db.RecordTold(ctx, fw, []Telling{{Channel: "gw--dash", Seq: said.Seq, At: Timestamp(at), Via: ViaWake}})); n != 0 {
			t.Fatal("a party that never sat in the channel was recorded told")
		}

		want := map[int64]Told{said.Seq: {At: Timestamp(at), Via: ViaWake}, asked.Seq: {At: Timestamp(at), Via: ViaStop}}
		for _, m := range readAll(t, db, gw, "gw--dash").Messages {
			if w, ok := want[m.Seq]; ok && (len(m.ToldTo) != 1 || m.ToldTo["node-dash"] != w) {
				t.Errorf("chat_read #%d told_to = %v, want node-dash %v", m.Seq, m.ToldTo, w)
			}
		}
		for _, m := range readAll(t, db, dash, "gw--dash").Messages {
			if m.ToldTo != nil {
				t.Errorf("a peer's message #%d shows told_to %v to its reader", m.Seq, m.ToldTo)
			}
		}
		in := must2[Inbox](t)(db.Inbox(ctx, gw))
		if len(in.UnreadByPeers) != 2 {
			t.Fatalf("unread_by_peers = %+v", in.UnreadByPeers)
		}
		for _, u := range in.UnreadByPeers {
			if u.ToldAt["node-dash"] != want[u.Seq] {
				t.Errorf("unread_by_peers #%d told_at = %v, want node-dash %v", u.Seq, u.ToldAt, want[u.Seq])
			}
		}
		view := must2[Conversation](t)(openRO(t, db.Path()).Conversation(ctx, ConversationArgs{Channel: "gw--dash"}))
		found := 0
		for _, m := range view.Messages {
			if w, ok := want[m.Seq]; ok && m.ToldTo["node-dash"] == w {
				found++
			}
		}
		if found != 2 {
			t.Errorf("the person's view shows %d of 2 tellings", found)
		}
	})
}

// A telling dated ahead of the store's clock (another machine's) is taken
// as now.
func TestToldInTheFutureIsNow(t *testing.T) {
	db := world(t)
	ctx := context.Background()
	said := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Text: "hi", Channel: "gw--dash"}))
	before := time.Now()
	must2[int](t)(db.RecordTold(ctx, dash, []Telling{{Channel: "gw--dash", Seq: said.Seq, At: Timestamp(time.Now().Add(time.Hour)), Via: ViaWake}}))
	m := readAll(t, db, gw, "gw--dash").Messages[0]
	at, err := time.Parse(time.RFC3339Nano, m.ToldTo["node-dash"].At)
	if err != nil || at.After(time.Now()) || at.Before(before.Add(-time.Second)) {
		t.Fatalf("told at %v (%v), want about now", m.ToldTo["node-dash"].At, err)
	}
}

// On a team store a telling moves the state of the message's channel,
// which its author's inbox reads, and not that of a party elsewhere.
func TestToldMovesOnlyItsChannelsState(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelNew(ctx, fw, "fw-only", "", nil))
		said := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Text: "hi", Channel: "gw--dash"}))
		ps := partyStates(db.eng)
		state := func(id Identity) string {
			s, _, ok := ps.PartyState(ctx, id.who())
			if !ok {
				t.Fatalf("no state for %s", id.Name)
			}
			return s
		}
		author, elsewhere := state(gw), state(fw)
		must(t)(db.RecordTold(ctx, dash, []Telling{{Channel: "gw--dash", Seq: said.Seq, At: Now(), Via: ViaWake}}))
		if state(gw) == author {
			t.Error("the author's state did not move at a telling of its message")
		}
		if state(fw) != elsewhere {
			t.Error("a party of other channels saw its state move at a telling in gw--dash")
		}
	})
}
