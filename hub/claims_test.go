package hub

import (
	"context"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// hubs runs body on a hub over a database file and on one over a team
// store.
func hubs(t *testing.T, body func(t *testing.T, h *testHub)) {
	t.Run("sqlite", func(t *testing.T) { body(t, startHub(t)) })
	t.Run("postgres", func(t *testing.T) { body(t, startTeamHub(t)) })
}

// Claims through the hub act as the token's party; /v1/claims and the
// hook's summary show a party the claims of those it shares a channel
// with, and no others; a peer's claim wakes the party's wait.
func TestClaimsThroughTheHub(t *testing.T) {
	hubs(t, func(t *testing.T, h *testHub) {
		ctx := context.Background()
		gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
		dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
		fw := h.client(t, h.issue("fw", time.Hour, "fw-core"), "")
		call(t, dash, "chat_whoami", `{}`)
		call(t, fw, "chat_whoami", `{}`)
		call(t, gw, "chat_channel_new", `{"name":"gw--dash","parties":["node-dash"]}`)
		before, _, err := dash.Pending(ctx, "", 3)
		if err != nil {
			t.Fatal(err)
		}
		woke := make(chan string, 1)
		go func() {
			tag, err := dash.Wait(ctx, before.ETag, 20*time.Second)
			if err != nil {
				t.Error(err)
			}
			woke <- tag
		}()
		got := call(t, gw, "chat_claim", `{"resource":"path:node-dash/proto/**","reason":"regenerating"}`)
		if got["granted"] != true || got["resource"] != "path:node-dash/proto/**" {
			t.Fatalf("claim: %v", got)
		}
		select {
		case tag := <-woke:
			if tag == before.ETag {
				t.Error("node-dash's wait ended on its old state")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the claim did not wake node-dash's wait")
		}
		refused := call(t, dash, "chat_claim", `{"resource":"path:proto/frame.proto"}`)
		if refused["granted"] != false || refused["held_by"] != "mesh-gw" {
			t.Errorf("node-dash's claim: %v", refused)
		}
		l, err := dash.Claims(ctx)
		if err != nil || len(l.Claims) != 1 || l.Claims[0].Holder != "mesh-gw" || l.Claims[0].OwnerRoot != "" {
			t.Errorf("/v1/claims for node-dash: %+v, %v", l, err)
		}
		if l, err := fw.Claims(ctx); err != nil || len(l.Claims) != 0 {
			t.Errorf("fw-core, in no channel with mesh-gw, sees %+v (%v)", l, err)
		}
		var s Summary
		for deadline := time.Now().Add(10 * time.Second); len(s.Pending.Claims) != 1; time.Sleep(20 * time.Millisecond) {
			if s, _, err = dash.Pending(ctx, "", 3); err != nil || time.Now().After(deadline) {
				t.Fatalf("the hook's summary never held the claim: %+v (%v)", s.Pending.Claims, err)
			}
		}
		if c := s.Pending.Claims[0]; c.Owner != "node-dash" || c.Pattern != "proto/**" || !c.Exclusive {
			t.Errorf("the summary's claim: %+v", c)
		}
	})
}

// POST /v1/renew moves the party's claims on, as its running serve does
// on a store of its own.
func TestRenewThroughTheHub(t *testing.T) {
	hubs(t, func(t *testing.T, h *testHub) {
		ctx := context.Background()
		gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
		call(t, gw, "chat_whoami", `{}`)
		// Claimed (a minute for 40 seconds) 20 seconds ago.
		then := time.Now().Add(-20 * time.Second)
		old := reopen(t, h, store.Options{Clock: func() time.Time { return then }})
		res, err := old.Claim(ctx, store.Identity{Name: "mesh-gw", Team: true}, store.ClaimArgs{Resource: "env:staging", TTL: time.Minute, Exclusive: true, MaxLifetime: time.Hour})
		if err != nil || !res.Granted {
			t.Fatal(res, err)
		}
		next, err := gw.RenewClaims(ctx)
		if err != nil || next != 15*time.Second {
			t.Fatalf("renew: %v, %v", next, err)
		}
		l, err := gw.Claims(ctx)
		if err != nil || len(l.Claims) != 1 || l.Claims[0].Until <= res.Until {
			t.Errorf("after the renewal: %+v (%v), until was %s", l.Claims, err, res.Until)
		}
	})
}

// A claim that runs out changes what its waiter sees though nothing is
// written: the waiter's wait ends, and its summary says the claim ended.
func TestExpiryWakesTheWaiterThroughTheHub(t *testing.T) {
	hubs(t, func(t *testing.T, h *testHub) {
		ctx := context.Background()
		gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
		dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
		call(t, dash, "chat_whoami", `{}`)
		call(t, gw, "chat_channel_new", `{"name":"gw--dash","parties":["node-dash"]}`)
		then := time.Now().Add(-8 * time.Second)
		old := reopen(t, h, store.Options{Clock: func() time.Time { return then }})
		res, err := old.Claim(ctx, store.Identity{Name: "mesh-gw", Team: true}, store.ClaimArgs{Resource: "env:staging", TTL: 10 * time.Second, Exclusive: true, MaxLifetime: time.Hour})
		if err != nil || !res.Granted {
			t.Fatal(res, err)
		}
		if got := call(t, dash, "chat_claim", `{"resource":"env:staging"}`); got["granted"] != false {
			t.Fatalf("granted while held: %v", got)
		}
		var s Summary
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if s, _, err = dash.Pending(ctx, "", 3); err != nil || time.Now().After(deadline) {
				t.Fatalf("the summary: %+v (%v)", s.Pending, err)
			}
			if len(s.Pending.Claims) == 1 && store.Now() < res.Until {
				break
			}
		}
		tag, err := dash.Wait(ctx, s.ETag, 30*time.Second)
		if err != nil || tag == s.ETag {
			t.Fatalf("the wait did not end at the expiry: %q (%v)", tag, err)
		}
		s, _, err = dash.Pending(ctx, "", 3)
		if err != nil || len(s.Pending.Claims) != 0 || len(s.Pending.ClaimNews) != 1 || s.Pending.ClaimNews[0].How != "expired" {
			t.Errorf("after the expiry: %+v, %+v (%v)", s.Pending.Claims, s.Pending.ClaimNews, err)
		}
	})
}

// reopen is a second handle on h's store, with o.
func reopen(t *testing.T, h *testHub, o store.Options) *store.DB {
	t.Helper()
	ctx := context.Background()
	var db *store.DB
	var err error
	if h.db.Reader() != nil {
		db, err = store.OpenPostgres(ctx, h.db.Path(), o)
	} else {
		db, err = store.OpenWith(ctx, h.db.Path(), o)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
