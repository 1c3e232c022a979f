// Package hubload drives a team hub the way a whole team does: many
// members at once, each with its own token and its own HTTP connection.
// The scale benchmark (go run ./tests/bench -only scale,waiters) reports
// what it measures; the acceptance tests (tests/hubscale_test.go) hold the
// hub to it. The store is set up in process, through internal/store, so
// that a team of hundreds is ready in seconds; the calls go over HTTP with
// hub.Client, the member's own client (one POST a call).
package hubload

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// Member is a party of the team and its token.
type Member struct {
	Name     string
	Token    string
	Channels []string
}

// identity is the identity a hub gives a member's calls.
func identity(name string) store.Identity {
	return store.Identity{Name: name, Workspace: store.TeamWorkspace(name), Team: true}
}

// Team shape: each member sits in SeatsEach channels of about ChannelSize
// members, and each channel holds AsksPerChannel open asks, so that a
// member sees about 20 open items.
const (
	SeatsEach      = 3
	ChannelSize    = 10
	AsksPerChannel = 7
)

// tokenTTL outlives any run.
const tokenTTL = 24 * time.Hour

// SeedTeam registers n members (m-000, m-001, …) on an empty store, seats
// them (SeatsEach rounds, each a shuffle cut into channels of
// ChannelSize), raises the asks, and issues each member a token.
func SeedTeam(ctx context.Context, db *store.DB, n int) ([]Member, error) {
	if n < 2 {
		return nil, fmt.Errorf("a team needs at least 2 members, not %d", n)
	}
	members := make([]Member, n)
	for i := range members {
		members[i].Name = fmt.Sprintf("m-%03d", i)
		if _, err := db.Register(ctx, identity(members[i].Name)); err != nil {
			return nil, fmt.Errorf("register %s: %w", members[i].Name, err)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(n), SeatsEach)) // the same team for the same n
	for round := range SeatsEach {
		order := rng.Perm(n)
		groups := max(1, n/ChannelSize)
		for g := range groups {
			// The last group takes the remainder: every member is seated.
			seats := order[g*n/groups : (g+1)*n/groups]
			name := fmt.Sprintf("team-%d-%02d", round, g)
			var others []string
			for _, i := range seats[1:] {
				others = append(others, members[i].Name)
			}
			creator := identity(members[seats[0]].Name)
			if _, err := db.ChannelNew(ctx, creator, name, "a team channel", others); err != nil {
				return nil, fmt.Errorf("channel %s: %w", name, err)
			}
			for _, i := range seats {
				members[i].Channels = append(members[i].Channels, name)
			}
			for k := range AsksPerChannel {
				asker := identity(members[seats[k%len(seats)]].Name)
				if _, err := db.Ask(ctx, asker, store.AskArgs{Channel: name, Title: fmt.Sprintf("Question %d of %s", k, name),
					Body: "Does the new endpoint keep the paging contract? Please check and answer here."}); err != nil {
					return nil, fmt.Errorf("ask in %s: %w", name, err)
				}
			}
		}
	}
	return members, issue(ctx, db, members)
}

// CrowdChannel is where the announcer speaks to every waiter.
const CrowdChannel = "all-hands"

// SeedCrowd registers n waiters (w-0000, …) and an announcer, seats them
// all in CrowdChannel, and issues each a token. Nothing is unread: a wait
// blocks until the announcer says something.
func SeedCrowd(ctx context.Context, db *store.DB, n int) (waiters []Member, announcer Member, err error) {
	announcer = Member{Name: "announcer", Channels: []string{CrowdChannel}}
	if _, err := db.Register(ctx, identity(announcer.Name)); err != nil {
		return nil, Member{}, err
	}
	waiters = make([]Member, n)
	names := make([]string, n)
	for i := range waiters {
		names[i] = fmt.Sprintf("w-%04d", i)
		waiters[i] = Member{Name: names[i], Channels: []string{CrowdChannel}}
		if _, err := db.Register(ctx, identity(names[i])); err != nil {
			return nil, Member{}, fmt.Errorf("register %s: %w", names[i], err)
		}
	}
	if _, err := db.ChannelNew(ctx, identity(announcer.Name), CrowdChannel, "announcements to everyone", names); err != nil {
		return nil, Member{}, err
	}
	all := append(waiters, announcer)
	if err := issue(ctx, db, all); err != nil {
		return nil, Member{}, err
	}
	return all[:n], all[n], nil
}

// issue gives every member a token of its own.
func issue(ctx context.Context, db *store.DB, members []Member) error {
	tokens, err := db.Tokens(ctx)
	if err != nil {
		return err
	}
	defer tokens.Close()
	for i := range members {
		secret, _, err := tokens.Issue(ctx, []string{members[i].Name}, "load-"+members[i].Name, tokenTTL)
		if err != nil {
			return fmt.Errorf("token for %s: %w", members[i].Name, err)
		}
		members[i].Token = secret
	}
	return nil
}

// Tally counts errors by their text, keeping the order texts first came in.
type Tally struct {
	mu    sync.Mutex
	n     int
	count map[string]int
	order []string
}

// Add counts err; nil is not counted.
func (t *Tally) Add(err error) {
	if err == nil {
		return
	}
	text := err.Error()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == nil {
		t.count = map[string]int{}
	}
	if t.count[text] == 0 {
		t.order = append(t.order, text)
	}
	t.count[text]++
	t.n++
}

// N is the number of errors counted.
func (t *Tally) N() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// First is the first k distinct texts, each with its count ("12× text").
func (t *Tally) First(k int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, text := range t.order[:min(k, len(t.order))] {
		out = append(out, fmt.Sprintf("%d× %s", t.count[text], text))
	}
	return out
}

// MixResult is what Mix measured.
type MixResult struct {
	// Lat holds each answered or failed call's time, by tool.
	Lat map[string][]time.Duration
	// Elapsed runs from the start of the measured calls until the last
	// ended.
	Elapsed time.Duration
	// Errors are the timed calls'; WarmUp the untimed first calls'.
	Errors Tally
	WarmUp Tally
}

// Calls is the number of calls made.
func (r *MixResult) Calls() int {
	n := 0
	for _, l := range r.Lat {
		n += len(l)
	}
	return n
}

// All is every call's time, whatever its tool.
func (r *MixResult) All() []time.Duration {
	var out []time.Duration
	for _, tool := range slices.Sorted(maps.Keys(r.Lat)) {
		out = append(out, r.Lat[tool]...)
	}
	return out
}

// SayEvery is the share of says in Mix's loop: one call in SayEvery.
const SayEvery = 4

// atOnce is how many members connect to the hub at a time (connect).
const atOnce = 16

// connect has each member make its first request (first), atOnce members
// at a time, so that its connection to the hub exists before the load
// starts and serves it (the client keeps it), as on members' own
// machines, each of which dials once. One process playing a thousand
// members must not dial for all of them at once: a dial's time runs from
// its start, its goroutine waits its turn behind every other member's
// work, and on a loaded machine the process got round to some of them
// only after their 3 s had run out — though the kernel had completed
// each handshake at once (no listen overflow, no SYN sent again).
func connect(ctx context.Context, clients []*hub.Client, first func(*hub.Client) error, errs *Tally) {
	turns := make(chan struct{}, atOnce)
	var wg sync.WaitGroup
	for _, c := range clients {
		turns <- struct{}{}
		wg.Go(func() {
			defer func() { <-turns }()
			errs.Add(first(c))
		})
	}
	wg.Wait()
}

// whoami is a member's chat_whoami: its first call, which also makes the
// hub's server for its party.
func whoami(ctx context.Context) func(*hub.Client) error {
	return func(c *hub.Client) error {
		_, err := c.Call(ctx, "chat_whoami", json.RawMessage(`{}`), nil)
		return err
	}
}

// tokenInfo is the hub's lightest answer a member's token gets
// (/v1/token): a crowd's thousand parties would make each chat_whoami
// list a thousand known parties.
func tokenInfo(ctx context.Context) func(*hub.Client) error {
	return func(c *hub.Client) error {
		_, err := c.TokenInfo(ctx)
		return err
	}
}

// Mix has every member call the hub in a loop for d, member i on
// hubs[i%len(hubs)]: one chat_say in SayEvery into its channels in turn,
// chat_inbox otherwise, each call as soon as the last answered. Each
// member first makes a chat_whoami (connect), not timed, so that its
// connection and the hub's server for its party exist before the clock
// starts.
func Mix(ctx context.Context, hubs []string, members []Member, d time.Duration) (*MixResult, error) {
	clients := make([]*hub.Client, len(members))
	for i, m := range members {
		c, err := hub.NewClient(hubs[i%len(hubs)], m.Token, "")
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}
	r := &MixResult{Lat: map[string][]time.Duration{}}
	connect(ctx, clients, whoami(ctx), &r.WarmUp)
	var mu sync.Mutex
	start := time.Now()
	end := start.Add(d)
	var loops sync.WaitGroup
	for i, c := range clients {
		m := members[i]
		loops.Go(func() {
			lat := map[string][]time.Duration{}
			// A phase of its own, so that the says are spread in time.
			for k := i; time.Now().Before(end) && ctx.Err() == nil; k++ {
				tool, args := "chat_inbox", json.RawMessage(`{}`)
				if k%SayEvery == 0 {
					tool = "chat_say"
					args, _ = json.Marshal(map[string]string{"channel": m.Channels[(k/SayEvery)%len(m.Channels)],
						"text": fmt.Sprintf("status of %s, round %d: all green", m.Name, k)})
				}
				begin := time.Now()
				_, err := c.Call(ctx, tool, args, nil)
				lat[tool] = append(lat[tool], time.Since(begin))
				r.Errors.Add(err)
			}
			mu.Lock()
			for tool, l := range lat {
				r.Lat[tool] = append(r.Lat[tool], l...)
			}
			mu.Unlock()
		})
	}
	loops.Wait()
	r.Elapsed = time.Since(start)
	for _, c := range clients {
		c.HTTP.CloseIdleConnections()
	}
	return r, ctx.Err()
}

// CrowdOptions shape a Crowd run.
type CrowdOptions struct {
	// Seconds is each chat_wait's seconds.
	Seconds int
	// SayAt is when the announcer speaks, from the first wait's start;
	// it waits longer, up to Seconds/2, for every wait to be under way.
	SayAt time.Duration
}

// CrowdResult is what a Crowd run saw.
type CrowdResult struct {
	Waiters int
	// Woken waits answered that something arrived, after the say.
	Woken int
	// Early waits answered before the say was sent: with nothing unread,
	// none should.
	Early int
	// Quiet waits answered that nothing arrived.
	Quiet int
	// Refused waits ended in an error: the hub's refusal (HTTP status),
	// a tool error, or a broken connection.
	Refused Tally
	// WarmUp are the errors of the members' first calls (connect),
	// before the waits.
	WarmUp Tally
	// UnderWay is how many waits had sent progress (the hub was running
	// them) when the say was sent.
	UnderWay int
	// SaidAt is when the say was sent, from the first wait's start.
	SaidAt time.Duration
	// Say is the say's own time; SayErr its error.
	Say    time.Duration
	SayErr error
	// Wake holds, for each woken wait, the time from sending the say to
	// the wait's answer.
	Wake []time.Duration
}

// Crowd connects every waiter to the hub at url, each on its own
// connection (connect), starts a chat_wait for each, and has the
// announcer say one thing in CrowdChannel once they are under way: every
// wait should answer that something arrived.
func Crowd(ctx context.Context, url string, waiters []Member, announcer Member, opts CrowdOptions) (*CrowdResult, error) {
	say, err := hub.NewClient(url, announcer.Token, "")
	if err != nil {
		return nil, err
	}
	clients := make([]*hub.Client, len(waiters))
	for i, m := range waiters {
		if clients[i], err = hub.NewClient(url, m.Token, ""); err != nil {
			return nil, err
		}
	}
	r := &CrowdResult{Waiters: len(waiters)}
	connect(ctx, slices.Concat(clients, []*hub.Client{say}), tokenInfo(ctx), &r.WarmUp)
	type outcome struct {
		at      time.Time
		arrived bool
		err     error
	}
	outcomes := make([]outcome, len(waiters))
	// A wait is settled once it sent progress (the hub runs it) or ended.
	var underWay, settled atomic.Int64
	args, _ := json.Marshal(map[string]int{"seconds": opts.Seconds})
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			var once sync.Once
			res, err := c.Call(ctx, "chat_wait", args, func(context.Context, float64, float64, string) {
				once.Do(func() { underWay.Add(1); settled.Add(1) })
			})
			out := outcome{at: time.Now(), err: err}
			if err == nil {
				var v struct {
					Arrived bool `json:"arrived"`
				}
				if err := json.Unmarshal(res.JSON, &v); err != nil {
					out.err = fmt.Errorf("chat_wait answered %.200s: %w", res.JSON, err)
				}
				out.arrived = v.Arrived
			}
			once.Do(func() { settled.Add(1) })
			outcomes[i] = out
		})
	}
	// The say waits for SayAt, then for every wait to be settled, up to
	// half the waits' time.
	latest := start.Add(time.Duration(opts.Seconds) * time.Second / 2)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		now := time.Now()
		if now.Sub(start) >= opts.SayAt && int(settled.Load()) >= len(waiters) || !now.Before(latest) {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			wg.Wait()
			return nil, ctx.Err()
		}
	}
	r.UnderWay = int(underWay.Load())
	sent := time.Now()
	r.SaidAt = sent.Sub(start)
	text, _ := json.Marshal(map[string]string{"channel": CrowdChannel, "text": "release 4.2 is out: please pull and restart"})
	_, r.SayErr = say.Call(ctx, "chat_say", text, nil)
	r.Say = time.Since(sent)
	wg.Wait()
	for _, o := range outcomes {
		switch {
		case o.err != nil:
			r.Refused.Add(o.err)
		case o.at.Before(sent):
			r.Early++
		case o.arrived:
			r.Woken++
			r.Wake = append(r.Wake, o.at.Sub(sent))
		default:
			r.Quiet++
		}
	}
	slices.Sort(r.Wake)
	for _, c := range append(clients, say) {
		c.HTTP.CloseIdleConnections()
	}
	return r, nil
}

// Summary is one line of what a Crowd run saw, for a log or a failure.
func (r *CrowdResult) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d waits: %d woken by the say, %d answered before it, %d answered nothing arrived, %d refused; %d under way when the say was sent at %s; the say took %s",
		r.Waiters, r.Woken, r.Early, r.Quiet, r.Refused.N(), r.UnderWay, r.SaidAt.Round(time.Millisecond), r.Say.Round(time.Millisecond))
	if r.SayErr != nil {
		fmt.Fprintf(&b, "; the say failed: %v", r.SayErr)
	}
	if first := r.Refused.First(3); len(first) > 0 {
		fmt.Fprintf(&b, "; refusals: %s", strings.Join(first, " | "))
	}
	if first := r.WarmUp.First(3); len(first) > 0 {
		fmt.Fprintf(&b, "; %d first calls failed: %s", r.WarmUp.N(), strings.Join(first, " | "))
	}
	return b.String()
}
