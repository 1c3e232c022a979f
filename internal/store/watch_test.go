package store

import (
	"context"
	"strings"
	"testing"
)

// A party's arrivals hold the messages of its channels and items only,
// and their newest id names only a message it can read: another
// channel's traffic does not even move it.
func TestArrivalsForStayInThePartysChannels(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelNew(ctx, fw, "fw--dash", "", []string{"node-dash"}))
		must(t)(db.Say(ctx, dash, SayArgs{Channel: "gw--dash", Text: "from dash"}))
		must(t)(db.Say(ctx, gw, SayArgs{Channel: "gw--dash", Text: "from gw"}))
		must(t)(db.Say(ctx, fw, SayArgs{Channel: "fw--dash", Text: "private to fw and dash"}))
		r := openRO(t, db.Path())

		start, err := r.ArrivalsFor(ctx, gw, -1, Readable, 10)
		if err != nil || len(start.Arrivals) != 0 || start.Newest != 2 {
			t.Fatalf("after=-1: %+v, %v; want newest 2, gw's own channel's last", start, err)
		}
		all, err := r.ArrivalsFor(ctx, gw, 0, Readable, 10)
		if err != nil || bodies(all) != "from dash|from gw" || all.Newest != 2 || all.More {
			t.Fatalf("every message of gw's channels: %+v, %v", all, err)
		}
		mine, err := r.ArrivalsFor(ctx, gw, 0, WaitingOn, 10)
		if err != nil || bodies(mine) != "from dash" {
			t.Fatalf("what waits on gw: %+v, %v", mine, err)
		}
		first, err := r.ArrivalsFor(ctx, gw, 0, Readable, 1)
		if err != nil || bodies(first) != "from dash" || !first.More || first.Newest != 1 {
			t.Fatalf("a page of one: %+v, %v", first, err)
		}
		next, err := r.ArrivalsFor(ctx, gw, first.Newest, Readable, 1)
		if err != nil || bodies(next) != "from gw" || next.More || next.Newest != 2 {
			t.Fatalf("the next page: %+v, %v", next, err)
		}
		if _, err := r.ArrivalsFor(ctx, Identity{}, 0, Readable, 10); err == nil {
			t.Fatal("arrivals for nobody listed something")
		}
		stranger, err := r.ArrivalsFor(ctx, Identity{Name: "nobody", Team: true}, 0, Readable, 10)
		if err != nil || len(stranger.Arrivals) != 0 || stranger.Newest != 0 {
			t.Fatalf("an unknown party: %+v, %v", stranger, err)
		}
	})
}

func bodies(p ArrivalPage) string {
	var out []string
	for _, a := range p.Arrivals {
		out = append(out, a.Body)
	}
	return strings.Join(out, "|")
}

// An address that names a channel reaches its messages for the parties
// seated there and for an item's consumers only: to anyone else it says
// nothing of the message, not even its slug (its title's words).
func TestAnItemOutsideYourChannelsIsNotShown(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Channel: "gw--dash", Title: "Hidden rollout date", Body: "when?"}))
		for _, addr := range []string{"gw--dash:1", "gw--dash:#1", "gw--dash:hidden-rollout-date", "gw--dash:9"} {
			for _, try := range []func() error{
				func() error { _, err := db.Ack(ctx, fw, addr, "", ""); return err },
				func() error { _, err := db.Resolve(ctx, fw, addr, "", true, ""); return err },
				func() error { _, err := db.PruneOK(ctx, fw, addr, ""); return err },
				func() error { _, err := db.Reply(ctx, fw, addr, "hi", ""); return err },
			} {
				err := try()
				refused(t, err, "you are not in 'gw--dash'")
				if strings.Contains(strings.ReplaceAll(err.Error(), addr, ""), "hidden") {
					t.Errorf("the refusal shows the item's slug: %v", err)
				}
			}
		}
		// A consumer that left the channel still owes its ack there.
		must(t)(db.ChannelLeave(ctx, dash, "gw--dash"))
		must(t)(db.Ack(ctx, dash, "gw--dash:1", "", ""))
	})
}
