package store

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// team seats mesh-gw, node-dash, fw-core and n-3 more parties in
// all-hands, mesh-gw's channel.
func team(t *testing.T, db *DB, n int) []Identity {
	t.Helper()
	ctx := context.Background()
	ids := []Identity{gw, dash, fw}
	for i := len(ids); i < n; i++ {
		ids = append(ids, Identity{Name: fmt.Sprintf("repo-%02d", i), Workspace: fmt.Sprintf("/srv/repo-%02d", i)})
	}
	var names []string
	for _, id := range ids {
		must(t)(db.Register(ctx, id))
		if id != gw {
			names = append(names, id.Name)
		}
	}
	must(t)(db.ChannelNew(ctx, gw, "all-hands", "", names))
	return ids
}

func countRows(t *testing.T, db *DB, query string) int {
	t.Helper()
	var n int
	if err := rawSQL(db).QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func messageAt(t *testing.T, db *DB, id Identity, channel string, seq int64) Message {
	t.Helper()
	for _, m := range readAll(t, db, id, channel).Messages {
		if m.Seq == seq {
			return m
		}
	}
	t.Fatalf("no message #%d in %s", seq, channel)
	return Message{}
}

// An @name of a seated party and a to name address the post; the rows
// are kept, and chat_read shows them as to. An @word that names no
// seated party — an e-mail address, code, a party elsewhere — is text.
func TestMentionsAddressThePost(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := openTest(t)
		team(t, db, 5)
		ctx := context.Background()
		must(t)(db.Register(ctx, Identity{Name: "outsider", Workspace: "/srv/outsider"}))
		res, err := db.Say(ctx, gw, SayArgs{Channel: "all-hands", To: []string{"fw-core"},
			Text: "@node-dash, look at `@Override` and mail ops@repo-03.example; @outsider @nobody @mesh-gw."})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"fw-core", "node-dash"}; !reflect.DeepEqual(res.Addressed, want) {
			t.Errorf("addressed = %v, want %v", res.Addressed, want)
		}
		if m := messageAt(t, db, fw, "all-hands", res.Seq); !reflect.DeepEqual(m.To, []string{"fw-core", "node-dash"}) {
			t.Errorf("chat_read's to = %v", m.To)
		}
		if rows := countRows(t, db, `SELECT count(*) FROM mentions`); rows != 2 {
			t.Errorf("mention rows = %d, want 2", rows)
		}
		plain := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Channel: "all-hands", Text: "nobody here"}))
		if plain.Addressed != nil || messageAt(t, db, dash, "all-hands", plain.Seq).To != nil {
			t.Errorf("a post that names nobody: %+v", plain)
		}
	})
}

func TestMentionsInText(t *testing.T) {
	for text, want := range map[string][]string{
		"@node-dash please":           {"node-dash"},
		"(@Node-Dash), and @fw-core.": {"node-dash", "fw-core"},
		"mail a@node-dash.io":         nil,
		"@node-dash.io":               {"node-dash.io"},
		"@@node-dash":                 nil,
		"x@y @name~2!":                {"name~2"},
		"@nöde":                       nil,
		"end @":                       nil,
	} {
		got, _ := mentionsIn(text)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("mentionsIn(%q) = %q, want %q", text, got, want)
		}
	}
	for text, want := range map[string]bool{"@here": true, "hi @ALL.": true, "@all-hands": false, "x@here": false} {
		if _, here := mentionsIn(text); here != want {
			t.Errorf("mentionsIn(%q) here = %v", text, here)
		}
	}
}

// @here and @all address every seated peer, up to attention.max_broadcast;
// above it the post is refused in one sentence and nothing is written.
func TestHereIsCappedByMaxBroadcast(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := openTestWith(t, Options{Attention: &Attention{MaxBroadcast: 8, DefaultAbove: 3, MaxHops: 6}})
		team(t, db, 10)
		ctx := context.Background()
		before := readAll(t, db, gw, "all-hands")
		_, err := db.Say(ctx, gw, SayArgs{Channel: "all-hands", Text: "@here standup in 5"})
		refused(t, err, "9 of them, more than attention.max_broadcast (8)")
		if !strings.Contains(err.Error(), "name the parties you mean") || strings.Count(err.Error(), ". ") > 0 {
			t.Errorf("the refusal is not one sentence that says how to address fewer: %q", err)
		}
		if after := readAll(t, db, gw, "all-hands"); len(after.Messages) != len(before.Messages) {
			t.Errorf("a refused broadcast wrote a message")
		}
		must(t)(db.ChannelLeave(ctx, Identity{Name: "repo-09", Workspace: "/srv/repo-09"}, "all-hands"))
		res, err := db.Say(ctx, gw, SayArgs{Channel: "all-hands", Text: "@all standup in 5"})
		if err != nil || len(res.Addressed) != 8 || slices.Contains(res.Addressed, "mesh-gw") {
			t.Fatalf("8 peers, the author not among them: %+v %v", res, err)
		}
	})
}

// A to name that is not seated is refused with the seated name it most
// likely meant, or the list of those seated; nothing is written.
func TestToNameNotSeatedIsRefused(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		_, err := db.Say(ctx, gw, SayArgs{Channel: "gw--dash", Text: "hi", To: []string{"node-dsh"}})
		refused(t, err, `"node-dsh" does not sit in 'gw--dash' — did you mean node-dash?`)
		_, err = db.Ask(ctx, gw, AskArgs{Channel: "gw--dash", Title: "t", Body: "b", To: []string{"fw-core"}})
		refused(t, err, `"fw-core" does not sit in 'gw--dash' — address parties seated there: mesh-gw, node-dash`)
		if n := len(readAll(t, db, gw, "gw--dash").Messages); n != 0 {
			t.Errorf("refused posts wrote %d messages", n)
		}
		seq := must2[SayResult](t)(db.Say(ctx, dash, SayArgs{Channel: "gw--dash", Text: "hello"})).Seq
		_, err = db.ReplyWith(ctx, gw, ReplyArgs{Item: fmt.Sprint(seq), Text: "hi", To: []string{"@NODE-dash", "nobody-at-all"}})
		refused(t, err, `"nobody-at-all" does not sit in 'gw--dash'`)
		r, err := db.ReplyWith(ctx, gw, ReplyArgs{Item: fmt.Sprint(seq), Text: "hi", To: []string{"@NODE-dash"}})
		if err != nil || !reflect.DeepEqual(r.Addressed, []string{"node-dash"}) {
			t.Errorf("a reply to @NODE-dash: %+v %v", r, err)
		}
	})
}

// A reply addresses the parties of its thread — its root's author, every
// reply's author and whoever they addressed — without naming them in to.
func TestRepliesAddressTheirThread(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := openTest(t)
		ids := team(t, db, 6)
		ctx := context.Background()
		r3, r4 := ids[3], ids[4]
		root := must2[SayResult](t)(db.Say(ctx, dash, SayArgs{Channel: "all-hands", Text: "the build is red"}))
		first := must2[SayResult](t)(db.Say(ctx, fw, SayArgs{Channel: "all-hands", ReplyTo: fmt.Sprint(root.Seq), Text: "@repo-03 broke it"}))
		// A reply to the reply is in the same thread.
		last := must2[SayResult](t)(db.Say(ctx, r4, SayArgs{Channel: "all-hands", ReplyTo: fmt.Sprint(first.Seq), Text: "fixed"}))
		if m := messageAt(t, db, gw, "all-hands", last.Seq); m.To != nil || last.Addressed != nil {
			t.Errorf("thread parties are not listed in to: %+v %+v", m.To, last)
		}
		r := openRO(t, db.Path())
		for _, id := range []Identity{dash, fw, r3} {
			c := pending(t, r, id, 3).Channels[0]
			if c.Attention != AttentionMentions || c.NewestTalk != last.Seq || c.Newest[len(c.Newest)-1].Seq != last.Seq {
				t.Errorf("%s, in the thread, is not told the last reply: %+v", id.Name, c)
			}
		}
		if c := pending(t, r, gw, 3).Channels[0]; c.NewestTalk != 0 || c.ForYou != 0 || c.Unread != 3 {
			t.Errorf("mesh-gw, outside the thread, is woken by it: %+v", c)
		}
	})
}

// Attention defaults to all in a channel of up to attention.default_above
// parties and to mentions above; a party changes its own with
// chat_attention or when it joins.
func TestAttentionDefaultsBySizeAndIsAPartysChoice(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		got := func(id Identity, channel string) ChannelAttention {
			t.Helper()
			res, err := db.SetAttention(ctx, id, AttentionArgs{Channel: channel})
			if err != nil || len(res.Channels) != 1 {
				t.Fatalf("attention of %s in %s: %+v %v", id.Name, channel, res, err)
			}
			return res.Channels[0]
		}
		must(t)(db.ChannelNew(ctx, gw, "trio", "", []string{"node-dash", "fw-core"}))
		if a := got(gw, "trio"); a.Attention != AttentionAll || a.Chosen || a.Parties != 3 {
			t.Errorf("3 parties: %+v", a)
		}
		four := Identity{Name: "four", Workspace: "/srv/four"}
		must(t)(db.ChannelJoinWith(ctx, four, "trio", ""))
		if a := got(gw, "trio"); a.Attention != AttentionMentions || a.Chosen {
			t.Errorf("4 parties: %+v", a)
		}
		res, err := db.SetAttention(ctx, gw, AttentionArgs{Channel: "trio", Mode: "ALL"})
		if err != nil || res.Channels[0].Attention != AttentionAll || !res.Channels[0].Chosen {
			t.Errorf("chosen: %+v %v", res, err)
		}
		if a := got(dash, "trio"); a.Attention != AttentionMentions {
			t.Errorf("a party's choice is its own: node-dash has %+v", a)
		}
		info, err := db.ChannelJoinWith(ctx, dash, "trio", "all")
		if err != nil || info.Attention != AttentionAll || got(dash, "trio").Attention != AttentionAll {
			t.Errorf("join with attention: %+v %v", info, err)
		}
		if n := len(readAll(t, db, gw, "trio").Messages); n != 1 {
			t.Errorf("setting attention in a seat one holds posted a join event: %d messages", n)
		}
		_, err = db.SetAttention(ctx, gw, AttentionArgs{Channel: "trio", Mode: "loud"})
		refused(t, err, `attention "loud" is not a mode`)
		list, err := db.SetAttention(ctx, gw, AttentionArgs{})
		if err != nil || len(list.Channels) != 2 || list.Channels[0].Channel != "gw--dash" {
			t.Errorf("every channel: %+v %v", list, err)
		}
	})
}

// In mentions mode a party's pending holds in full only what is addressed
// to it, counts it, and is woken by nothing else; an item it must ack
// still waits on it. In all mode it is as before.
func TestMentionsModeTellsOnlyWhatIsAddressed(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := openTest(t)
		team(t, db, 5)
		ctx := context.Background()
		for _, text := range []string{"status one", "status two", "@node-dash can you look?", "status three"} {
			must(t)(db.Say(ctx, gw, SayArgs{Channel: "all-hands", Text: text}))
		}
		must(t)(db.Ask(ctx, gw, AskArgs{Channel: "all-hands", Title: "Release?", Body: "ok to tag?", Consumers: []string{"fw-core"}}))
		r := openRO(t, db.Path())
		c := pending(t, r, dash, 3).Channels[0]
		if c.Attention != AttentionMentions || c.Unread != 5 || c.ForYou != 1 || c.NewestTalk != 3 ||
			len(c.Newest) != 1 || c.Newest[0].Seq != 3 || !reflect.DeepEqual(c.Newest[0].To, []string{"node-dash"}) ||
			!reflect.DeepEqual(c.Wakers, []Waker{{From: "mesh-gw", Seq: 3}}) {
			t.Errorf("node-dash, addressed once: %+v", c)
		}
		p := pending(t, r, fw, 3)
		if c := p.Channels[0]; c.ForYou != 0 || c.NewestTalk != 0 || len(c.Newest) != 0 || c.Unread != 5 {
			t.Errorf("fw-core, addressed by nothing: %+v", c)
		}
		if len(p.WaitingOnMe) != 1 || p.WaitingOnMe[0].Needs != NeedAck {
			t.Errorf("fw-core must still ack the item: %+v", p.WaitingOnMe)
		}
		must(t)(db.SetAttention(ctx, fw, AttentionArgs{Channel: "all-hands", Mode: "all"}))
		if c := pending(t, r, fw, 3).Channels[0]; c.Attention != AttentionAll || c.NewestTalk != 5 || len(c.Newest) != 3 {
			t.Errorf("fw-core in all mode: %+v", c)
		}
		// chat_read still shows everything.
		if n := len(readAll(t, db, dash, "all-hands").Messages); n != 5 {
			t.Errorf("chat_read shows %d of 5", n)
		}
	})
}

// A post that carries a chain past attention.max_hops lands, says so to
// its author, and wakes no one: its peers' pending names it as halted.
func TestPostsPastMaxHopsWakeNoOne(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		r := openRO(t, db.Path())
		five, err := db.Say(WithChain(ctx, Chain{ID: "c1", Hop: 5}), gw, SayArgs{Channel: "gw--dash", Text: "hop five"})
		if err != nil || five.Halted != "" {
			t.Fatalf("hop 5 of 6: %+v %v", five, err)
		}
		if c := pending(t, r, dash, 3).Channels[0]; c.NewestTalk != five.Seq || c.Wakers[0].Chain != "c1" || c.Wakers[0].Hop != 5 || c.Halted != nil {
			t.Errorf("hop 5 wakes: %+v", c)
		}
		six, err := db.Say(WithChain(ctx, Chain{ID: "c1", Hop: 6}), gw, SayArgs{Channel: "gw--dash", Text: "hop six"})
		if err != nil || !strings.Contains(six.Halted, "6 agent-only hops") || !strings.Contains(six.Halted, "wakes no one") {
			t.Fatalf("hop 6 of 6: %+v %v", six, err)
		}
		c := pending(t, r, dash, 3).Channels[0]
		if c.NewestTalk != five.Seq || c.Halted == nil || c.Halted.Seq != six.Seq || c.Halted.Hop != 6 || c.Unread != 2 {
			t.Errorf("hop 6 lands but does not wake: %+v", c)
		}
		// A post outside any chain (no turn known) wakes as before.
		plain := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Channel: "gw--dash", Text: "typed"}))
		if c := pending(t, r, dash, 3).Channels[0]; c.NewestTalk != plain.Seq {
			t.Errorf("a post with no chain: %+v", c)
		}
		if _, err := db.Say(WithChain(ctx, Chain{ID: "bad id", Hop: 1}), gw, SayArgs{Channel: "gw--dash", Text: "x"}); err != nil {
			t.Fatal(err)
		}
		if chains := countRows(t, db, `SELECT count(*) FROM chains`); chains != 2 {
			t.Errorf("chain rows = %d: an invalid chain is not kept", chains)
		}
	})
}

// A party that was addressed can still be merged and forgotten: its rows
// of attention go with it.
func TestMergeAndForgetCarryMentions(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelJoinWith(ctx, fw, "gw--dash", "mentions"))
		must(t)(db.Say(ctx, gw, SayArgs{Channel: "gw--dash", Text: "@fw-core @node-dash hi"}))
		if _, err := db.ForgetParty(ctx, "fw-core", true); err == nil {
			t.Fatal("fw-core wrote its join event: forget must refuse it")
		}
		ghost := Identity{Name: "ghost", Workspace: "/srv/ghost"}
		must(t)(db.ChannelJoinWith(ctx, ghost, "gw--dash", "mentions"))
		if _, err := execRaw(t, db, `DELETE FROM messages WHERE author_id = (SELECT id FROM parties WHERE name = 'ghost')`); err != nil {
			t.Fatal(err)
		}
		must(t)(db.Say(ctx, gw, SayArgs{Channel: "gw--dash", Text: "@ghost boo"}))
		if _, err := db.ForgetParty(ctx, "ghost", true); err != nil {
			t.Fatalf("forget a party that was addressed: %v", err)
		}
		if _, err := db.MoveParty(ctx, "node-dash", fw.Workspace, true); err != nil {
			t.Fatalf("merge a party that was addressed: %v", err)
		}
		m := readAll(t, db, gw, "gw--dash").Messages
		if to := m[len(m)-2].To; !reflect.DeepEqual(to, []string{"node-dash"}) {
			t.Errorf("after the merge the post is addressed to %v", to)
		}
	})
}

// In mentions mode the hook's receipts are of the party's messages that
// addressed someone, and say only what those parties did; chat_inbox's
// are unchanged.
func TestMentionsModeReceiptsAreAboutTheAddressed(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := openTest(t)
		ids := team(t, db, 5)
		ctx := context.Background()
		must(t)(db.Say(ctx, gw, SayArgs{Channel: "all-hands", Text: "status"}))
		asked := must2[SayResult](t)(db.Say(ctx, gw, SayArgs{Channel: "all-hands", Text: "@node-dash and @fw-core, please"}))
		must(t)(db.Read(ctx, fw, ReadArgs{Channel: "all-hands", Limit: 50}))
		must(t)(db.Read(ctx, ids[3], ReadArgs{Channel: "all-hands", Limit: 50}))
		p := pending(t, openRO(t, db.Path()), gw, 3)
		if len(p.UnreadByPeers) != 1 {
			t.Fatalf("receipts = %+v", p.UnreadByPeers)
		}
		u := p.UnreadByPeers[0]
		if u.Seq != asked.Seq || !reflect.DeepEqual(u.To, []string{"fw-core", "node-dash"}) ||
			!reflect.DeepEqual(u.ReadBy, []string{"fw-core"}) || !reflect.DeepEqual(u.UnreadBy, []string{"node-dash"}) {
			t.Errorf("the receipt = %+v", u)
		}
		in := must2[Inbox](t)(db.Inbox(ctx, gw))
		if len(in.UnreadByPeers) != 2 || in.UnreadByPeers[1].To != nil {
			t.Errorf("chat_inbox's receipts changed: %+v", in.UnreadByPeers)
		}
	})
}

// The hook's reads of attention reach the history through indexes, so
// that they cost the same however long it is: the newest unread posts
// from the channel's end, the party's mentions as a range of theirs.
func TestAttentionReadsUseAnIndex(t *testing.T) {
	db := openTest(t)
	for _, c := range []struct{ query, index string }{
		{recentTalk, "idx_messages_live"},
		{mentionedTalk, "idx_mentions_party (party_id=? AND message_id>?)"},
	} {
		plan := explain(t, db, c.query)
		if fullScan.MatchString(plan) || !strings.Contains(plan, c.index) {
			t.Errorf("does not reach the history through %s:\n%s\nplan:\n%s", c.index, c.query, plan)
		}
	}
}
