package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/golden"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// The claims' tools as a person reads them, for a scripted exchange
// between three parties, pinned in testdata/claims.golden.
func TestClaimsDisplayGolden(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	_, as := partiesOn(t, func() time.Time { return time.Unix(0, now.Load()).UTC() })
	gw, dash, fw := as("mesh-gw"), as("node-dash"), as("fw-core")
	var transcript strings.Builder
	step := func(s *Service, tool, args string) {
		t.Helper()
		res, err := s.Call(ctx, tool, json.RawMessage(args))
		transcript.WriteString("### " + s.Me.Name + " " + tool + " " + args + "\n")
		if err != nil {
			transcript.WriteString("ERROR: " + err.Error() + "\n\n")
			return
		}
		transcript.WriteString(res.Display + "\n\n")
	}
	step(fw, "chat_whoami", `{}`)
	step(dash, "chat_whoami", `{}`)
	step(gw, "chat_channel_new", `{"name": "gw--dash", "parties": ["node-dash", "fw-core"]}`)
	step(gw, "chat_claims", `{}`)
	step(gw, "chat_claim", `{"resource": "path:node-dash/proto/**", "reason": "regenerating the frame enum"}`)
	step(dash, "chat_claim", `{"resource": "path:proto/frame.proto", "ttl": "1h", "reason": "adding FRAME_AUX"}`)
	step(dash, "chat_claim", `{"resource": "env:staging", "ttl": "2h", "exclusive": false, "reason": "watching the deploy"}`)
	step(fw, "chat_claim", `{"resource": "env:staging", "reason": "flashing the bench"}`)
	step(fw, "chat_claim", `{"resource": "staging"}`)
	step(fw, "chat_claim", `{"resource": "port:8080", "ttl": "5s"}`)
	step(dash, "chat_claims", `{}`)
	step(dash, "chat_inbox", `{}`)
	step(fw, "chat_inbox", `{}`)
	step(dash, "chat_ask", `{"title": "Is the enum regenerated?", "body": "I need FRAME_AUX.", "slug": "enum"}`)
	step(gw, "chat_reply", `{"item": "enum", "text": "Regenerated; the folder is yours now.", "hand_over": "path:node-dash/proto/**"}`)
	step(gw, "chat_release", `{"resource": "path:node-dash/proto/**"}`)
	step(dash, "chat_release", `{"resource": "path:proto/**"}`)
	now.Add(int64(3 * time.Hour))
	step(fw, "chat_claims", `{}`)
	step(dash, "chat_claims", `{}`)
	step(fw, "chat_inbox", `{}`)
	golden.Check(t, "claims.golden", transcript.String())
}

// chat_inbox lists the caller's claims and those it waits for, as JSON
// and in its display, and drops each when it ends by the clock alone —
// with no write in between, so no kept answer may stand for it.
func TestInboxListsClaimsUntilTheyEnd(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	gw, dash, _, call := seatedPairOn(t, func() time.Time { return time.Unix(0, now.Load()).UTC() })
	call(gw, "chat_claim", `{"resource": "env:staging", "ttl": "20s", "reason": "deploying"}`)
	call(dash, "chat_claim", `{"resource": "env:staging"}`)
	type inboxClaims struct {
		Held    []store.Claim `json:"claims_held"`
		Awaited []store.Claim `json:"claims_awaited"`
	}
	inbox := func(s *Service) (inboxClaims, string) {
		t.Helper()
		res := call(s, "chat_inbox", `{}`)
		var in inboxClaims
		if err := json.Unmarshal(res.JSON, &in); err != nil {
			t.Fatal(err)
		}
		return in, res.Display
	}
	if in, display := inbox(gw); len(in.Held) != 1 || in.Held[0].Resource != "env:staging" || len(in.Awaited) != 0 ||
		!strings.Contains(display, "**Your claims**") || !strings.Contains(display, "- env:staging — you until 2026-12-01 09:00 UTC") {
		t.Errorf("the holder's inbox: %+v\n%s", in, display)
	}
	if in, display := inbox(dash); len(in.Awaited) != 1 || in.Awaited[0].Holder != "mesh-gw" || len(in.Held) != 0 ||
		!strings.Contains(display, "**Claims you wait for**") || !strings.Contains(display, "- env:staging — mesh-gw until") {
		t.Errorf("the refused party's inbox: %+v\n%s", in, display)
	}
	// Past its end, with nothing written since (a party's last_seen moves
	// once a minute): both lists are gone.
	now.Add(int64(30 * time.Second))
	for _, s := range []*Service{gw, dash} {
		if in, display := inbox(s); len(in.Held)+len(in.Awaited) != 0 || strings.Contains(display, "claims") {
			t.Errorf("%s's inbox after the claim ended: %+v\n%s", s.Me.Name, in, display)
		}
	}
}

// An inbox whose claims do not all fit the answer budget keeps what it
// can, counts the rest and names chat_claims, which lists them.
func TestInboxClaimsCutToTheBudget(t *testing.T) {
	ctx := context.Background()
	_, as := partiesOn(t, time.Now)
	s := as("mesh-gw")
	reason := strings.Repeat("a long reason ", 70)
	for i := range 64 {
		if _, err := s.Call(ctx, "chat_claim", json.RawMessage(fmt.Sprintf(`{"resource": "name:thing-%02d", "reason": %q}`, i, reason))); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Call(ctx, "chat_inbox", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Held    []store.Claim `json:"claims_held"`
		Omitted struct {
			Claims int `json:"claims"`
		} `json:"omitted"`
		Cut  string         `json:"cut"`
		Next map[string]any `json:"next"`
	}
	if err := json.Unmarshal(res.JSON, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Held) == 0 || len(in.Held)+in.Omitted.Claims != 64 || in.Next["chat_claims"] == nil ||
		!strings.Contains(in.Cut, fmt.Sprintf("%d claims not listed: chat_claims {} lists them.", in.Omitted.Claims)) {
		t.Errorf("held %d, omitted %d, cut %q, next %v", len(in.Held), in.Omitted.Claims, in.Cut, in.Next)
	}
	if got, budget := answerSize(res.Display, res.JSON), s.budget(); got > budget {
		t.Errorf("%d characters, over the budget of %d", got, budget)
	}
}

// stepChanges is a Changes whose first change has happened already and
// whose later ones the test makes: each Next is announced on asked.
type stepChanges struct {
	asked chan int
	mu    sync.Mutex
	chans []chan struct{}
}

func newStepChanges() *stepChanges {
	first := make(chan struct{})
	close(first)
	return &stepChanges{asked: make(chan int), chans: []chan struct{}{first}}
}

func (c *stepChanges) Next() <-chan struct{} {
	c.mu.Lock()
	n := len(c.chans)
	ch := c.chans[n-1]
	c.chans = append(c.chans, make(chan struct{}))
	c.mu.Unlock()
	c.asked <- n
	return ch
}

// change makes the change the last Next handed out waits for.
func (c *stepChanges) change() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.chans[len(c.chans)-2])
}

// A party refused a claim that waits (chat_wait, as the refusal says) is
// answered when the claim ends: at its holder's release, and at its
// expiry, which commits nothing.
func TestWaitEndsWhenAClaimWaitedForEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gw, dash, as, call := seatedPairOn(t, time.Now)
	call(dash, "chat_read", `{"channel": "gw--dash"}`)
	type waited struct {
		Arrived bool         `json:"arrived"`
		Waited  float64      `json:"waited_seconds"`
		Freed   []freedClaim `json:"freed"`
	}
	wait := func(s *Service) (waited, string) {
		t.Helper()
		res := call(s, "chat_wait", `{"seconds": 20}`)
		var w waited
		if err := json.Unmarshal(res.JSON, &w); err != nil {
			t.Fatal(err)
		}
		return w, res.Display
	}

	t.Run("release", func(t *testing.T) {
		call(gw, "chat_claim", `{"resource": "env:staging", "reason": "deploying"}`)
		call(dash, "chat_claim", `{"resource": "env:staging"}`)
		changes := newStepChanges()
		waiter := as("node-dash")
		waiter.Changes = changes
		type answer struct {
			res Result
			err error
		}
		got := make(chan answer, 1)
		go func() {
			res, err := waiter.Call(ctx, "chat_wait", json.RawMessage(`{"seconds": 20}`))
			got <- answer{res, err}
		}()
		<-changes.asked // before the first look
		<-changes.asked // after it: the claim is waited for
		go func() {     // the later looks' Next
			for range changes.asked {
			}
		}()
		call(gw, "chat_release", `{"resource": "env:staging"}`)
		changes.change()
		a := <-got
		close(changes.asked)
		var w waited
		if a.err == nil {
			a.err = json.Unmarshal(a.res.JSON, &w)
		}
		if a.err != nil {
			t.Fatal(a.err)
		}
		if !w.Arrived || len(w.Freed) != 1 || w.Freed[0] != (freedClaim{"env:staging", "mesh-gw"}) ||
			!strings.HasPrefix(a.res.Display, "**The claim you waited for ended**: env:staging (mesh-gw's) — chat_claim it if you still need it.") {
			t.Errorf("%+v\n%s", w, a.res.Display)
		}
	})

	t.Run("hand-over", func(t *testing.T) {
		// Handed to the waiter, the claim is its own: no end to report;
		// the reply that hands it over answers the wait.
		call(gw, "chat_claim", `{"resource": "schema:billing"}`)
		call(dash, "chat_claim", `{"resource": "schema:billing"}`)
		call(dash, "chat_ask", `{"title": "Done with billing?", "body": "I need the schema.", "slug": "billing"}`)
		call(dash, "chat_read", `{"channel": "gw--dash"}`)
		changes := newStepChanges()
		waiter := as("node-dash")
		waiter.Changes = changes
		got := make(chan Result, 1)
		go func() {
			res, _ := waiter.Call(ctx, "chat_wait", json.RawMessage(`{"seconds": 20}`))
			got <- res
		}()
		<-changes.asked
		<-changes.asked
		go func() {
			for range changes.asked {
			}
		}()
		call(gw, "chat_reply", `{"item": "billing", "text": "Yes, it is yours.", "hand_over": "schema:billing"}`)
		changes.change()
		res := <-got
		close(changes.asked)
		var w waited
		json.Unmarshal(res.JSON, &w)
		if !w.Arrived || len(w.Freed) != 0 {
			t.Errorf("%+v\n%s", w, res.Display)
		}
		call(dash, "chat_read", `{"channel": "gw--dash"}`)
	})

	t.Run("expiry", func(t *testing.T) {
		// No Changes: only the claim's end can answer before the 20 s.
		call(gw, "chat_claim", `{"resource": "port:8080", "ttl": "10s"}`)
		call(dash, "chat_claim", `{"resource": "port:8080"}`)
		// The claim ends 10 s in; the wait's own end, 20 s in, would find
		// it ended too, but only a wait that heeds the claim's end answers
		// before its time is up.
		w, display := wait(dash)
		if !w.Arrived || len(w.Freed) != 1 || w.Freed[0].Resource != "port:8080" || w.Waited >= 20 {
			t.Errorf("%+v\n%s", w, display)
		}
	})
}

// A hand-over makes the claim anew for its new holder: to the parties
// that waited for it, the resource is still held, not ended.
func TestHandedOverClaimHasNotEnded(t *testing.T) {
	before := []store.Claim{{Resource: "schema:billing", Holder: "mesh-gw"}, {Resource: "env:staging", Holder: "mesh-gw"}}
	now := []store.Claim{{Resource: "schema:billing", Holder: "node-dash"}}
	if got := ended(before, now); len(got) != 1 || got[0].Resource != "env:staging" {
		t.Errorf("ended %+v, want env:staging alone", got)
	}
}

// seatedPairOn is mesh-gw and node-dash seated in gw--dash on a fresh
// database whose time is clock's, a Service for any other party there,
// and a call that fails the test on an error.
func seatedPairOn(t *testing.T, clock func() time.Time) (gw, dash *Service, as func(string) *Service, call func(*Service, string, string) Result) {
	t.Helper()
	_, as = partiesOn(t, clock)
	gw, dash = as("mesh-gw"), as("node-dash")
	call = func(s *Service, tool, args string) Result {
		t.Helper()
		res, err := s.Call(context.Background(), tool, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		return res
	}
	call(dash, "chat_whoami", `{}`)
	call(gw, "chat_channel_new", `{"name": "gw--dash", "parties": ["node-dash"]}`)
	return gw, dash, as, call
}
