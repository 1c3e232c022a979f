package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clockAt is a store clock a test moves on by hand.
type clockAt struct{ ns atomic.Int64 }

func newClock(at time.Time) *clockAt {
	c := &clockAt{}
	c.ns.Store(at.UnixNano())
	return c
}

func (c *clockAt) now() time.Time               { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clockAt) pass(d time.Duration)         { c.ns.Add(int64(d)) }
func (c *clockAt) options() Options             { return Options{Clock: c.now} }
func (c *clockAt) stamp(d time.Duration) string { return Timestamp(c.now().Add(d)) }

func claimArgs(resource, reason string) ClaimArgs {
	return ClaimArgs{Resource: resource, Reason: reason, TTL: DefaultClaimTTL, Exclusive: true, MaxLifetime: DefaultClaimMaxLifetime}
}

func claimOK(t *testing.T, db *DB, id Identity, a ClaimArgs) ClaimResult {
	t.Helper()
	res, err := db.Claim(context.Background(), id, a)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Granted {
		t.Fatalf("%s's claim on %s was refused: held by %s (%s)", id.Name, a.Resource, res.HeldBy, res.Reason)
	}
	return res
}

func claimsOf(t *testing.T, db *DB, id Identity) ClaimList {
	t.Helper()
	l, err := db.Claims(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A claim is granted, refused to a peer with who holds it, why and until
// when, and granted again to its holder as a renewal; a party that shares
// no channel with the holder neither sees the claim nor is stopped by it.
func TestClaimIsGrantedOnceAndNamesItsHolder(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		clock := newClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
		db := worldWith(t, clock.options())
		ctx := context.Background()
		got := claimOK(t, db, gw, claimArgs("env:staging", "migrating the schema"))
		if got.Resource != "env:staging" || got.Until != clock.stamp(30*time.Minute) || got.Reason != "migrating the schema" || !got.Exclusive {
			t.Errorf("granted = %+v", got)
		}
		res, err := db.Claim(ctx, dash, claimArgs("env:staging", "deploying"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Granted || res.HeldBy != "mesh-gw" || res.Reason != "migrating the schema" || res.Until != got.Until || res.HeldResource != "env:staging" {
			t.Errorf("a peer's claim = %+v, want refused, held by mesh-gw", res)
		}
		// fw-core sits in no channel with mesh-gw: it does not see the
		// claim, and its own is granted.
		if l := claimsOf(t, db, fw); len(l.Claims) != 0 {
			t.Errorf("fw-core sees %+v", l.Claims)
		}
		claimOK(t, db, fw, claimArgs("env:staging", "its own staging"))
		clock.pass(time.Minute)
		again := claimOK(t, db, gw, claimArgs("env:staging", "still migrating"))
		if !again.Renewed || again.Until != clock.stamp(30*time.Minute) {
			t.Errorf("claimed again = %+v, want renewed to 30 minutes from now", again)
		}
		l := claimsOf(t, db, dash)
		if len(l.Claims) != 1 || l.Claims[0].Holder != "mesh-gw" || l.Claims[0].Reason != "still migrating" {
			t.Errorf("node-dash sees %+v", l.Claims)
		}
	})
}

// Patterns that hold a path in common conflict, in the same repository
// only; two claims that are both shared do not; a claim of one's own
// never stands in one's way.
func TestOverlappingClaimsConflict(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		got := claimOK(t, db, gw, claimArgs("path:node-dash/proto/**", "regenerating"))
		if got.Resource != "path:node-dash/proto/**" {
			t.Errorf("resource = %q", got.Resource)
		}
		for _, c := range []struct {
			who      Identity
			resource string
			granted  bool
		}{
			{dash, "path:proto/frame.proto", false},        // node-dash's own proto, under the claim
			{dash, "path:node-dash/proto", false},          // the folder itself
			{dash, "path:**/*.proto", false},               // every .proto of node-dash's
			{dash, "path:docs/**", true},                   // elsewhere in the repository
			{dash, "path:mesh-gw/proto/frame.proto", true}, // another repository
			{gw, "path:node-dash/proto/a.proto", true},     // its own claim is no conflict
			{dash, "branch:proto", true},                   // another kind
		} {
			res, err := db.Claim(ctx, c.who, claimArgs(c.resource, "x"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Granted != c.granted {
				t.Errorf("%s claiming %s: granted %v, want %v (%+v)", c.who.Name, c.resource, res.Granted, c.granted, res)
			}
		}
		shared := claimArgs("schema:billing", "reading")
		shared.Exclusive = false
		claimOK(t, db, gw, shared)
		claimOK(t, db, dash, shared)
		if res, _ := db.Claim(ctx, dash, claimArgs("schema:bill*", "altering")); res.Granted || res.HeldBy != "mesh-gw" {
			t.Errorf("an exclusive claim over a shared one = %+v, want refused", res)
		}
	})
}

// A claim nobody renews ends at its time: a peer may then have it, its
// holder is told it ran out and the peer that waited that it is free —
// each once the claim ended, and no longer once a day has passed.
func TestClaimExpiresAndIsNews(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		clock := newClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
		db := worldWith(t, clock.options())
		ctx := context.Background()
		a := claimArgs("port:8080", "load test")
		a.TTL = time.Minute
		claimOK(t, db, gw, a)
		if res, _ := db.Claim(ctx, dash, claimArgs("port:8080", "dev server")); res.Granted {
			t.Fatal("granted while held")
		}
		if l := claimsOf(t, db, dash); len(l.News) != 0 {
			t.Errorf("news while the claim stands: %+v", l.News)
		}
		clock.pass(61 * time.Second)
		// mesh-gw's own call would renew it; node-dash asks first.
		dl := claimsOf(t, db, dash)
		if len(dl.Claims) != 0 || len(dl.News) != 1 || dl.News[0].How != "expired" || dl.News[0].Yours || dl.News[0].Holder != "mesh-gw" {
			t.Fatalf("node-dash after the expiry: %+v", dl)
		}
		gl := claimsOf(t, db, gw) // a call of mesh-gw's: too late to renew
		if len(gl.Claims) != 0 || len(gl.News) != 1 || !gl.News[0].Yours || gl.News[0].At != clock.stamp(-time.Second) {
			t.Fatalf("mesh-gw after the expiry: %+v", gl)
		}
		claimOK(t, db, dash, claimArgs("port:8080", "dev server"))
		clock.pass(claimNewsFor + time.Minute)
		if l := claimsOf(t, db, gw); len(l.News) != 0 {
			t.Errorf("a day later mesh-gw still hears %+v", l.News)
		}
	})
}

// Every call of the holder moves its claims on, a quarter of their time
// at a time, up to claims.max_lifetime from the claim; RenewClaims, what a
// running serve calls, does the same without counting as activity.
func TestClaimRenewsWhileItsHolderWorks(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		clock := newClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
		db := worldWith(t, clock.options())
		ctx := context.Background()
		a := claimArgs("env:staging", "migrating")
		a.TTL, a.MaxLifetime = time.Minute, 3*time.Minute
		claimOK(t, db, gw, a)
		until := func() string {
			l := claimsOf(t, db, dash)
			if len(l.Claims) != 1 {
				t.Fatalf("node-dash sees %+v", l.Claims)
			}
			return l.Claims[0].Until
		}
		clock.pass(10 * time.Second)
		must(t)(db.Say(ctx, gw, SayArgs{Text: "working"}))
		if got := until(); got != clock.stamp(50*time.Second) {
			t.Errorf("after 10 s: until %s — a call before a quarter of its time has passed moves nothing", got)
		}
		clock.pass(10 * time.Second)
		must(t)(db.Say(ctx, gw, SayArgs{Text: "still working"}))
		if got := until(); got != clock.stamp(time.Minute) {
			t.Errorf("after 20 s: until %s, want a minute from now", got)
		}
		// The serve's renewal, with nothing else going on, until the
		// claim is 3 minutes old.
		for range 7 {
			clock.pass(20 * time.Second)
			next, err := db.RenewClaims(ctx, gw)
			if err != nil {
				t.Fatal(err)
			}
			if next != 15*time.Second {
				t.Errorf("next renewal in %v, want a quarter of the minute", next)
			}
		}
		if got := until(); got != Timestamp(time.Date(2026, 12, 1, 9, 3, 0, 0, time.UTC)) {
			t.Errorf("at 09:02:40 until %s, want the max lifetime, 09:03", got)
		}
		clock.pass(20 * time.Second)
		if next, err := db.RenewClaims(ctx, gw); err != nil || next != time.Minute {
			t.Errorf("with nothing to renew: %v, %v", next, err)
		}
		l := claimsOf(t, db, gw)
		if len(l.Claims) != 0 || len(l.News) != 1 || l.News[0].How != "expired" || l.News[0].At != Timestamp(time.Date(2026, 12, 1, 9, 3, 0, 0, time.UTC)) {
			t.Errorf("past the max lifetime: %+v, want ended at 09:03", l)
		}
		if next, err := db.RenewClaims(ctx, Identity{Name: "nobody", Workspace: "/srv/nobody"}); err != nil || next != time.Minute {
			t.Errorf("a party not made yet: %v, %v", next, err)
		}
	})
}

// Releasing says who waited; they hear it is free, the holder does not
// hear of its own release, and a second release says it had ended.
func TestReleaseTellsWhoWaited(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		claimOK(t, db, gw, claimArgs("branch:release/1.4", "cutting the release"))
		db.Claim(ctx, dash, claimArgs("branch:release/*", "hotfix"))
		rel, err := db.Release(ctx, gw, " branch:release/1.4 ")
		if err != nil {
			t.Fatal(err)
		}
		if !rel.Released || !slices.Equal(rel.Waiting, []string{"node-dash"}) || len(rel.News) != 0 {
			t.Errorf("release = %+v", rel)
		}
		if l := claimsOf(t, db, dash); len(l.News) != 1 || l.News[0].How != "released" || l.News[0].By != "mesh-gw" {
			t.Errorf("node-dash hears %+v", l.News)
		}
		again, err := db.Release(ctx, gw, "branch:release/1.4")
		if err != nil || again.Released || again.How != "released" {
			t.Errorf("again = %+v, %v", again, err)
		}
		_, err = db.Release(ctx, gw, "branch:main")
		refused(t, err, "you hold no claim on branch:main")
	})
}

// Resolving an item ends the claims that serve it; the holder hears so
// when another resolved it.
func TestResolveEndsTheClaimsOfItsItem(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, dash, AskArgs{Title: "Regenerate the proto", Body: "please"}))
		a := claimArgs("path:node-dash/gen/**", "regenerating")
		a.Item = "regenerate-the-proto"
		got := claimOK(t, db, gw, a)
		if got.Item != "gw--dash:regenerate-the-proto" {
			t.Errorf("item = %q", got.Item)
		}
		must(t)(db.Resolve(ctx, dash, "regenerate-the-proto", "done", false, ""))
		l := claimsOf(t, db, gw)
		if len(l.Claims) != 0 || len(l.News) != 1 || l.News[0].How != "resolved" || l.News[0].By != "node-dash" {
			t.Errorf("after the resolve mesh-gw has %+v", l)
		}
		a.Item = "regenerate-the-proto"
		_, err := db.Claim(ctx, gw, a)
		refused(t, err, "is done")
	})
}

// A reply hands the replier's claim to the party it answers, in the same
// call: the claim is never free, whoever waited waits on, and the channel
// says so.
func TestReplyHandsAClaimOver(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		claimOK(t, db, gw, claimArgs("env:staging", "migrating"))
		db.Claim(ctx, fw, claimArgs("env:staging", "testing"))
		must(t)(db.Ask(ctx, dash, AskArgs{Title: "Is staging free?", Body: "I need it next", Slug: "staging"}))
		r, handed, err := db.ReplyHandingOver(ctx, gw, ReplyArgs{Item: "staging", Text: "migrated; it is yours"}, "env:staging", DefaultClaimMaxLifetime)
		if err != nil {
			t.Fatal(err)
		}
		if !r.AutoAcked || handed.To != "node-dash" || handed.Resource != "env:staging" {
			t.Errorf("reply %+v handed %+v", r, handed)
		}
		l := claimsOf(t, db, fw)
		if len(l.Claims) != 1 || l.Claims[0].Holder != "node-dash" || l.Claims[0].Reason != "migrating" || len(l.News) != 0 {
			t.Errorf("fw-core sees %+v", l)
		}
		if res, _ := db.Claim(ctx, fw, claimArgs("env:staging", "testing")); res.Granted || res.HeldBy != "node-dash" {
			t.Errorf("fw-core's claim = %+v", res)
		}
		if gl := claimsOf(t, db, gw); len(gl.News) != 0 {
			t.Errorf("mesh-gw hears of its own hand-over: %+v", gl.News)
		}
		if !slices.Contains(kinds(readAll(t, db, fw, "gw--dash")), "event:[env:staging] claim handed by mesh-gw to node-dash") {
			t.Errorf("the channel does not say so: %v", kinds(readAll(t, db, fw, "gw--dash")))
		}
		rel, err := db.Release(ctx, dash, "env:staging")
		if err != nil || !slices.Equal(rel.Waiting, []string{"fw-core"}) {
			t.Errorf("node-dash's release = %+v, %v", rel, err)
		}
		before := len(readAll(t, db, gw, "gw--dash").Messages)
		_, _, err = db.ReplyHandingOver(ctx, gw, ReplyArgs{Item: "staging", Text: "and again"}, "env:staging", DefaultClaimMaxLifetime)
		refused(t, err, "you hold no claim on env:staging")
		if n := len(readAll(t, db, gw, "gw--dash").Messages); n != before {
			t.Errorf("the refused hand-over wrote: %d messages, %d before", n, before)
		}
	})
}

// The person frees a claim by its resource, whoever holds it; the holder
// hears so, as does who waited.
func TestForceReleaseFreesAClaim(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		claimOK(t, db, gw, claimArgs("path:node-dash/proto/**", "regenerating"))
		db.Claim(ctx, dash, claimArgs("path:proto/a.proto", "editing"))
		_, err := db.ForceRelease(ctx, "path:node-dash/proto")
		refused(t, err, "path:node-dash/proto/** (held by mesh-gw)")
		_, err = db.ForceRelease(ctx, "path:nobody/x")
		refused(t, err, "names no party first")
		freed, err := db.ForceRelease(ctx, "path:node-dash/proto/**")
		if err != nil || len(freed) != 1 || freed[0].Holder != "mesh-gw" || !slices.Equal(freed[0].Waiting, []string{"node-dash"}) {
			t.Fatalf("freed %+v, %v", freed, err)
		}
		if l := claimsOf(t, db, gw); len(l.News) != 1 || l.News[0].How != "freed" || !l.News[0].Yours {
			t.Errorf("mesh-gw hears %+v", l.News)
		}
		if l := claimsOf(t, db, dash); len(l.News) != 1 || l.News[0].How != "freed" || l.News[0].Yours {
			t.Errorf("node-dash hears %+v", l.News)
		}
	})
}

// Eight parties claiming one thing at once: one is granted, each other is
// told who holds it.
func TestConcurrentClaimsGrantOne(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := openTest(t)
		ctx := context.Background()
		var ids []Identity
		var names []string
		for i := range 8 {
			id := Identity{Name: fmt.Sprintf("p%d", i), Workspace: fmt.Sprintf("/srv/p%d", i)}
			must(t)(db.Register(ctx, id))
			ids, names = append(ids, id), append(names, id.Name)
		}
		must(t)(db.ChannelNew(ctx, ids[0], "all", "", names[1:]))
		results := make([]ClaimResult, len(ids))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var err error
				results[i], err = secondHandle(t, db).Claim(ctx, id, claimArgs("path:p0/go.mod", "bumping "+id.Name))
				if err != nil {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		var granted []string
		for i, r := range results {
			if r.Granted {
				granted = append(granted, ids[i].Name)
			}
		}
		if len(granted) != 1 {
			t.Fatalf("granted to %v, want exactly one", granted)
		}
		for i, r := range results {
			if !r.Granted && (r.HeldBy != granted[0] || r.Reason != "bumping "+granted[0]) {
				t.Errorf("%s was told %+v", ids[i].Name, r)
			}
		}
	})
}

// The mark beside a database file says until when a path claim may be
// live: raised by a claim and its renewals, lowered by the release.
func TestPathClaimsAreMarkedBesideTheFile(t *testing.T) {
	clock := newClock(time.Now())
	db := worldWith(t, clock.options())
	ctx := context.Background()
	mark := func() string {
		until, ok := PathClaimsUntil(db.Path())
		if !ok {
			t.Fatal("the mark cannot be read")
		}
		return until
	}
	claimOK(t, db, gw, claimArgs("env:staging", "x"))
	if got := mark(); got != "" {
		t.Errorf("a claim on no path marked %q", got)
	}
	got := claimOK(t, db, gw, claimArgs("path:go.mod", "bumping"))
	if m := mark(); m != got.Until {
		t.Errorf("mark %q, want the claim's until %q", m, got.Until)
	}
	clock.pass(10 * time.Minute)
	must(t)(db.Say(ctx, gw, SayArgs{Text: "renew"}))
	if m := mark(); m != clock.stamp(30*time.Minute) {
		t.Errorf("after a renewal: %q", m)
	}
	must(t)(db.Release(ctx, gw, "path:go.mod"))
	if m := mark(); m != "" {
		t.Errorf("after the release: %q", m)
	}
	info, err := os.Stat(db.Path() + ".claims")
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the mark: %v, %v", info, err)
	}
}

// What the hook reads: the claims a party sees, the news, and the path
// claims that stop its edits.
func TestReadOnlySeesClaims(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		claimOK(t, db, gw, claimArgs("path:node-dash/proto/**", "regenerating"))
		shared := claimArgs("path:docs", "reading")
		shared.Exclusive = false
		claimOK(t, db, gw, shared)
		r := openRO(t, db.Path())
		p, err := r.PendingFor(ctx, dash, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Claims) != 2 || p.Claims[1].OwnerRoot != "/srv/node-dash" || p.Claims[1].Pattern != "proto/**" {
			t.Errorf("node-dash's pending claims: %+v", p.Claims)
		}
		edits, err := r.EditClaims(ctx, dash)
		if err != nil || len(edits) != 1 || edits[0].Resource != "path:node-dash/proto/**" {
			t.Errorf("the claims that stop node-dash's edits: %+v, %v", edits, err)
		}
		if edits, _ := r.EditClaims(ctx, gw); len(edits) != 0 {
			t.Errorf("mesh-gw is stopped by its own claims: %+v", edits)
		}
		if edits, _ := r.EditClaims(ctx, fw); len(edits) != 0 {
			t.Errorf("fw-core, in no channel with mesh-gw, is stopped by %+v", edits)
		}
		all, err := r.AllClaims(ctx)
		if err != nil || len(all) != 2 {
			t.Errorf("all claims: %+v, %v", all, err)
		}
	})
}

// Bad resources, reasons and ttls are refused and write nothing; a party
// holds a bounded number of claims.
func TestClaimArgumentsAreChecked(t *testing.T) {
	db := world(t)
	ctx := context.Background()
	for resource, want := range map[string]string{
		"staging":                            "names no kind of thing",
		"env:":                               "names nothing",
		"path:/etc/passwd":                   "is an absolute path",
		"path:../x":                          "has a .. in it",
		"port:http":                          "is not a port",
		"disk:/dev/sda":                      "names no kind of thing",
		"name:a**b":                          "** stands for whole names only",
		"schema:" + strings.Repeat("x", 300): "more than 256",
	} {
		_, err := db.Claim(ctx, gw, claimArgs(resource, "x"))
		refused(t, err, want)
	}
	_, err := db.Claim(ctx, gw, claimArgs("env:x", strings.Repeat("r", maxClaimReason+1)))
	refused(t, err, "say it in at most")
	for raw, want := range map[string]time.Duration{"": DefaultClaimTTL, "90s": 90 * time.Second, "1h30m": 90 * time.Minute, "1d": 24 * time.Hour} {
		if got, err := ClaimTTL(raw, 48*time.Hour); err != nil || got != want {
			t.Errorf("ClaimTTL(%q) = %v, %v", raw, got, err)
		}
	}
	for _, raw := range []string{"5s", "9h", "soon", "400d"} {
		if _, err := ClaimTTL(raw, 8*time.Hour); err == nil {
			t.Errorf("ClaimTTL(%q) accepted", raw)
		}
	}
	if l := claimsOf(t, db, gw); len(l.Claims) != 0 {
		t.Fatalf("refused claims were written: %+v", l.Claims)
	}
	for i := range maxClaimsHeld {
		claimOK(t, db, gw, claimArgs(fmt.Sprintf("name:n%d", i), "x"))
	}
	_, err = db.Claim(ctx, gw, claimArgs("name:one-more", "x"))
	refused(t, err, "the most a party may")
}

// The person's commands on parties carry claims along: a merge gives the
// merged party's claims to the one it becomes, and a forgotten party's
// claims go with it.
func TestPartyCommandsCarryClaims(t *testing.T) {
	db := world(t)
	ctx := context.Background()
	claimOK(t, db, fw, claimArgs("env:fw", "x"))
	claimOK(t, db, gw, claimArgs("path:fw-core/src", "x"))
	if _, err := db.ForgetParty(ctx, "fw-core", true); err != nil {
		t.Fatal(err)
	}
	if l := claimsOf(t, db, gw); len(l.Claims) != 0 {
		t.Errorf("claims of a forgotten party remain: %+v", l.Claims)
	}
	// node-dash's repository moved; its sessions there became node-dash~2
	// and claimed something before the person merged the two.
	moved := filepath.Join(t.TempDir(), "node-dash")
	if err := os.MkdirAll(moved, 0o700); err != nil {
		t.Fatal(err)
	}
	second := Identity{Name: "node-dash", Workspace: moved}
	claimOK(t, db, second, claimArgs("env:dash", "x"))
	claimOK(t, db, dash, claimArgs("env:old", "x"))
	if _, err := db.MoveParty(ctx, "node-dash", moved, true); err != nil {
		t.Fatal(err)
	}
	l := claimsOf(t, db, gw)
	var holders []string
	for _, c := range l.Claims {
		holders = append(holders, c.Resource+" "+c.Holder)
	}
	if !slices.Equal(holders, []string{"env:dash node-dash", "env:old node-dash"}) {
		t.Errorf("after the merge: %v", holders)
	}
}

// The inbox lists the caller's claims and those it waits for, and drops
// each once it ends by the clock alone: with nothing committed since, a
// kept answer must not stand for the inbox past a claim's end.
func TestInboxClaimsEndByTheClock(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		ctx := context.Background()
		// The memo's entries live a minute of the wall clock past last_seen:
		// the test's clock starts now.
		db, clock := clockedWorld(t, time.Now().UTC())
		a := claimArgs("env:staging", "deploying")
		a.TTL = 20 * time.Second
		claimOK(t, db, gw, a)
		if res := must2[ClaimResult](t)(db.Claim(ctx, dash, claimArgs("env:staging", "me too"))); res.Granted {
			t.Fatal("a second exclusive claim was granted")
		}
		inbox := func(id Identity) Inbox {
			t.Helper()
			in, err := db.Inbox(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return in
		}
		if in := inbox(gw); len(in.ClaimsHeld) != 1 || in.ClaimsHeld[0].Resource != "env:staging" || len(in.ClaimsAwaited) != 0 {
			t.Errorf("the holder's inbox: held %+v, awaited %+v", in.ClaimsHeld, in.ClaimsAwaited)
		}
		if in := inbox(dash); len(in.ClaimsAwaited) != 1 || in.ClaimsAwaited[0].Holder != "mesh-gw" || len(in.ClaimsHeld) != 0 {
			t.Errorf("the waiting party's inbox: held %+v, awaited %+v", in.ClaimsHeld, in.ClaimsAwaited)
		}
		// A party that leaves the channels it shared with the holder sees
		// nothing of its claims, awaited or not; back in, it sees it again.
		must(t)(db.ChannelLeave(ctx, dash, "gw--dash"))
		if in := inbox(dash); len(in.ClaimsAwaited) != 0 {
			t.Errorf("after leaving, the inbox still shows %+v", in.ClaimsAwaited)
		}
		must(t)(db.ChannelJoin(ctx, dash, "gw--dash"))
		if in := inbox(dash); len(in.ClaimsAwaited) != 1 {
			t.Errorf("back in the channel, awaited %+v", in.ClaimsAwaited)
		}
		trustedFingerprint(t, db)
		hits := db.answers.hitCount()
		inbox(gw) // read at a fingerprinted state: kept, were it not timely
		inbox(dash)
		inbox(gw)
		if got := db.answers.hitCount() - hits; got != 0 {
			t.Errorf("%d inboxes with claims answered from the memo, want 0", got)
		}
		clock.advance(30 * time.Second) // within a minute: no last_seen written
		for _, id := range []Identity{gw, dash} {
			if in := inbox(id); len(in.ClaimsHeld)+len(in.ClaimsAwaited) != 0 {
				t.Errorf("%s's inbox after the claim's end: held %+v, awaited %+v", id.Name, in.ClaimsHeld, in.ClaimsAwaited)
			}
		}
	})
}

// A party that left every channel it shared with a claim's holder hears
// nothing of that claim's end, though it was refused the claim; back in,
// it hears of it.
func TestClaimNewsOnlyWhileTheHolderIsSeen(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		ctx := context.Background()
		db := world(t)
		claimOK(t, db, gw, claimArgs("env:staging", "deploying"))
		if res := must2[ClaimResult](t)(db.Claim(ctx, dash, claimArgs("env:staging", "me too"))); res.Granted {
			t.Fatal("a second exclusive claim was granted")
		}
		must(t)(db.Release(ctx, gw, "env:staging"))
		if news := claimsOf(t, db, dash).News; len(news) != 1 || news[0].Resource != "env:staging" || news[0].Yours {
			t.Fatalf("the refused party's news: %+v", news)
		}
		must(t)(db.ChannelLeave(ctx, dash, "gw--dash"))
		if news := claimsOf(t, db, dash).News; len(news) != 0 {
			t.Errorf("after leaving, news of the holder's claim: %+v", news)
		}
		must(t)(db.ChannelJoin(ctx, dash, "gw--dash"))
		if news := claimsOf(t, db, dash).News; len(news) != 1 {
			t.Errorf("back in the channel, news %+v", news)
		}
	})
}
