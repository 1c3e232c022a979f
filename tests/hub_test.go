package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

// hubConfig makes chat_wait on the hubs send progress often: the tests
// take the first notice as the sign that a wait is under way.
const hubConfig = "chat:\n  wait_progress_ms: 200\n"

// Two hubs serve one PostgreSQL store. Forty members at once — half
// through each hub, half of them go-sdk MCP clients over streamable HTTP
// and half the hub's own client, eight tokens of five parties each, the
// party named in Mcpp-Party — post into one channel: every call succeeds,
// every message is stored once under its token's party, the channel's
// seqs are 1..N without a gap, and nothing is half-done. A chat_wait
// through hub B ends when a say is posted through hub A, with the say.
func TestHubTwoHubsFortyMembers(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	ht.w.configure(hubConfig)
	a, b := ht.hub("A"), ht.hub("B")
	hubs := []*hubProcess{a, b}

	const members, each, perToken = 40, 10, 5
	names, tokens := make([]string, members), make([]string, members)
	for i := range names {
		names[i] = fmt.Sprintf("member-%02d", i)
	}
	for g := 0; g < members; g += perToken {
		tok := ht.issue(fmt.Sprintf("group-%d", g/perToken), "1h", names[g:g+perToken]...)
		for i := g; i < g+perToken; i++ {
			tokens[i] = tok
		}
	}
	type caller func(ctx context.Context, tool string, args map[string]any) error
	callers := make([]caller, members)
	for i := range names {
		h := hubs[i%2]
		if (i/2)%2 == 0 {
			c := hubMember(t, h.url, tokens[i], names[i])
			callers[i] = func(ctx context.Context, tool string, args map[string]any) error {
				return hubCall(ctx, c, tool, args, nil)
			}
		} else {
			s := sdkMember(t, h.url, tokens[i], names[i])
			callers[i] = func(ctx context.Context, tool string, args map[string]any) error {
				return sdkCall(ctx, s, tool, args)
			}
		}
	}
	all := func(what string, run func(i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		failures := make(chan string, members*each)
		start := make(chan struct{})
		for i := range members {
			wg.Go(func() {
				<-start
				if err := run(i); err != nil {
					failures <- fmt.Sprintf("%s (%s via hub %s): %v", what, names[i], hubs[i%2].name, err)
				}
			})
		}
		close(start)
		wg.Wait()
		close(failures)
		for f := range failures {
			t.Error(f)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	ctx := context.Background()
	all("whoami", func(i int) error { return callers[i](ctx, "chat_whoami", map[string]any{}) })
	if err := callers[0](ctx, "chat_channel_new", map[string]any{"name": "all", "parties": names[1:]}); err != nil {
		t.Fatal(err)
	}
	all("say", func(i int) error {
		for j := range each {
			if err := callers[i](ctx, "chat_say", map[string]any{"channel": "all", "text": fmt.Sprintf("member %d message %d", i, j)}); err != nil {
				return err
			}
		}
		return nil
	})

	if n := checkGapless(t, ht.db, "all"); n != members*each {
		t.Fatalf("%d messages in #all, want %d", n, members*each)
	}
	if n := ht.count(`SELECT count(DISTINCT body) FROM messages WHERE body LIKE 'member %'`); n != members*each {
		t.Errorf("%d distinct messages, want %d", n, members*each)
	}
	// Each message is its token's party's: the body names its sender.
	if n := ht.count(`SELECT count(*) FROM messages m JOIN parties p ON p.id = m.author_id
		WHERE m.body LIKE 'member %' AND p.name <> 'member-' || lpad(split_part(m.body, ' ', 2), 2, '0')`); n != 0 {
		t.Errorf("%d messages stored under another party than the one that sent them", n)
	}
	if n := ht.count(`SELECT count(*) FROM parties`); n != members {
		t.Errorf("%d parties, want %d", n, members)
	}
	checkInvariants(t, ht.db)

	// A wait through hub B, woken by a say through hub A.
	sayer := hubMember(t, a.url, tokens[0], names[0])
	waiter := hubMember(t, b.url, tokens[1], names[1])
	mustHubCall(t, sayer, "chat_channel_new", map[string]any{"name": "wake", "parties": []string{names[1]}}, nil)
	waited := startHubWait(t, waiter, 20, "wake")
	mustHubCall(t, sayer, "chat_say", map[string]any{"channel": "wake", "text": "wake up, through hub A"}, nil)
	awaitHubWait(t, waited, "wake")
	var read struct {
		Messages []struct {
			From string `json:"from"`
			Body string `json:"body"`
		} `json:"messages"`
	}
	mustHubCall(t, waiter, "chat_read", map[string]any{"channel": "wake"}, &read)
	if len(read.Messages) == 0 || read.Messages[len(read.Messages)-1].From != names[0] ||
		read.Messages[len(read.Messages)-1].Body != "wake up, through hub A" {
		t.Fatalf("%s read %+v in #wake after the wait, want %s's say", names[1], read.Messages, names[0])
	}
}

// Every way in without a valid token bound to the party is refused by
// both hub processes — 401 with no, an unknown, a forged, an expired or a
// revoked token, 403 for a party the token is not bound to or a call
// that names its author — and writes nothing. A token revoked with
// `mcpp-chat hub token revoke` is refused by the other hub at its very
// next request. No hub's output, nor the token list, holds a secret.
func TestHubAuthAcrossProcesses(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	expired := ht.issue("short-lived", "1s", "node-dash")
	expiredAt := time.Now().Add(1100 * time.Millisecond) // issued before now, so expired by then
	a, b := ht.hub("A"), ht.hub("B")
	dashTok := ht.issue("dash-laptop", "1h", "node-dash")
	gwTok := ht.issue("gw-laptop", "1h", "mesh-gw")
	revoked := ht.issue("stolen", "1h", "node-dash")
	ht.revoke("stolen")
	mustHubCall(t, hubMember(t, b.url, dashTok, ""), "chat_whoami", nil, nil)
	gw := hubMember(t, a.url, gwTok, "")
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)
	mustHubCall(t, gw, "chat_say", map[string]any{"channel": "gw--dash", "text": "hello"}, nil)
	time.Sleep(time.Until(expiredAt)) // sleep: past the token's expiry, which is the clock's to reach

	say := func(args string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"chat_say","arguments":` + args + `}}`
	}
	plain := say(`{"channel":"gw--dash","text":"must not land"}`)
	forged := forgeSecret(dashTok)
	cases := []struct {
		name, token, party, body string
		status                   int
		logsID                   string // the token id the refusal logs
	}{
		{"no token", "", "", plain, 401, ""},
		{"unknown token", "mcc_0123456789ab_" + strings.Repeat("x", 43), "", plain, 401, ""},
		{"not a token", "hello", "", plain, 401, ""},
		{"known id, wrong secret", forged, "", plain, 401, ""},
		{"expired", expired, "", plain, 401, tokenIDOf(expired)},
		{"revoked", revoked, "", plain, 401, tokenIDOf(revoked)},
		{"party not bound", dashTok, "mesh-gw", plain, 403, tokenIDOf(dashTok)},
		{"author in the arguments", dashTok, "", say(`{"channel":"gw--dash","text":"as gw","author":"mesh-gw"}`), 403, ""},
		{"party in the arguments", dashTok, "node-dash", say(`{"channel":"gw--dash","text":"as gw","party":"mesh-gw"}`), 403, ""},
		{"from in a batch", dashTok, "", "[" + say(`{"channel":"gw--dash","text":"as gw","from":"mesh-gw"}`) + "]", 403, ""},
	}
	before := ht.rows()
	for _, h := range []*hubProcess{a, b} {
		for i, c := range cases {
			// Each case from a loopback address of its own: a hub logs an
			// address's first refusal in full, and only counts the next.
			from := fromAddress(net.IPv4(127, 0, 0, byte(20+i)))
			for _, path := range []string{"/mcp", "/v1/hook", "/v1/wait?timeout=0.1", "/v1/arrivals?after=-1"} {
				if c.status == 403 && c.logsID == "" && path != "/mcp" {
					continue // an author in the arguments is a call's
				}
				status, body, header := rawHubRequest(t, from, h.url+path, c.token, c.party, c.body)
				if status != c.status {
					t.Errorf("hub %s, %s, %s: status %d, want %d (%s)", h.name, c.name, path, status, c.status, body)
				}
				if !strings.Contains(body, `"error":"`) {
					t.Errorf("hub %s, %s, %s: the refusal says nothing: %s", h.name, c.name, path, body)
				}
				if c.status == 401 && header.Get("WWW-Authenticate") == "" {
					t.Errorf("hub %s, %s, %s: a 401 without WWW-Authenticate", h.name, c.name, path)
				}
			}
		}
	}
	if after := ht.rows(); after != before {
		t.Errorf("refused requests wrote:\nbefore %s\nafter  %s", before, after)
	}
	for _, h := range []*hubProcess{a, b} {
		log := h.stderr.String()
		if n := strings.Count(log, "refused a request"); n < len(cases) {
			t.Errorf("hub %s logged %d refusals, want at least %d:\n%s", h.name, n, len(cases), log)
		}
		for _, c := range cases {
			if c.logsID != "" && !strings.Contains(log, "token_id="+c.logsID) {
				t.Errorf("hub %s did not log the id of the %s token:\n%s", h.name, c.name, log)
			}
		}
		// A call that tries to write as another party is logged with the
		// id of the token that tried.
		if n := strings.Count(log, "token_id="+tokenIDOf(dashTok)+` reason="the argument `); n != 3 {
			t.Errorf("hub %s logged %d refusals of a call naming its author with the token's id, want 3:\n%s", h.name, n, log)
		}
	}

	// A revoke holds on every hub at once: both hubs took the token just
	// before, and the one the admin's command did not go near refuses it
	// at its next request.
	laptop := ht.issue("laptop", "1h", "node-dash")
	viaA, viaB := hubMember(t, a.url, laptop, ""), hubMember(t, b.url, laptop, "")
	mustHubCall(t, viaA, "chat_say", map[string]any{"channel": "gw--dash", "text": "from the laptop, via A"}, nil)
	mustHubCall(t, viaB, "chat_say", map[string]any{"channel": "gw--dash", "text": "from the laptop, via B"}, nil)
	// As the usage writes it: the token, then the store.
	if out := ht.adminRun("token", "revoke", tokenIDOf(laptop), "--store", ht.store); !strings.Contains(out, "revoked token "+tokenIDOf(laptop)) {
		t.Fatalf("token revoke printed %q", out)
	} else {
		ht.admin.Write([]byte(out))
	}
	before = ht.rows()
	for _, c := range []*hub.Client{viaB, viaA} {
		err := hubCall(context.Background(), c, "chat_say", map[string]any{"channel": "gw--dash", "text": "after the revoke"}, nil)
		var refused *hub.RefusedError
		if !errors.As(err, &refused) || refused.Status != 401 || !strings.Contains(err.Error(), "revoked") {
			t.Errorf("the revoked token at %s: %v, want 401 saying it was revoked", c.Where(), err)
		}
	}
	if after := ht.rows(); after != before {
		t.Errorf("the revoked token wrote:\nbefore %s\nafter  %s", before, after)
	}
	mustHubCall(t, hubMember(t, b.url, dashTok, ""), "chat_whoami", nil, nil) // the others still work

	list := ht.list()
	for _, want := range []string{tokenIDOf(laptop), "laptop", "revoked", "expired", "active", "node-dash"} {
		if !strings.Contains(list, want) {
			t.Errorf("token list lacks %q:\n%s", want, list)
		}
	}
	ht.noSecrets("token list", list)
	ht.noSecrets("the admin's other output", ht.admin.String())
}

// forgeSecret is token with its secret replaced: a known id, a wrong secret.
func forgeSecret(token string) string {
	return strings.TrimSuffix(token, secretOf(token)) + strings.Repeat("A", len(secretOf(token)))
}

// fromAddress is a client whose connections come from the loopback
// address ip (Linux routes all of 127/8 to the loopback device).
func fromAddress(ip net.IP) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
}

// rawHubRequest sends one request with client as any HTTP client could:
// a POST of body to /mcp, else a GET.
func rawHubRequest(t *testing.T, client *http.Client, url, token, party, body string) (int, string, http.Header) {
	t.Helper()
	method, reader := http.MethodGet, io.Reader(nil)
	if strings.Contains(url, "/mcp") {
		method, reader = http.MethodPost, strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if party != "" {
		req.Header.Set(hub.PartyHeader, party)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), resp.Header
}

// A proxy spreads a member's calls over two hubs. Hub A is SIGKILLed
// while a burst of chat_say from four member processes goes through the
// proxy: nothing is half-done (the channel's seqs stay gapless, every
// invariant holds), every call that answered success is stored once, a
// call that failed says so in one sentence, and the member's next calls
// succeed through hub B.
func TestHubFailoverWhenAHubIsKilled(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	a, b := ht.hub("A"), ht.hub("B")
	proxy := startFailoverProxy(t, a, b)
	gwTok, dashTok := ht.issue("gw", "1h", "mesh-gw"), ht.issue("dash", "1h", "node-dash")
	gwDir, dashDir := ht.w.repo("mesh-gw"), ht.w.repo("node-dash")
	gw := member(ht.w, memberEnv(ht.w, "MCPP_CHAT_STORE="+proxy.url, "MCPP_CHAT_TOKEN="+gwTok))
	dash := member(ht.w, memberEnv(ht.w, "MCPP_CHAT_STORE="+proxy.url, "MCPP_CHAT_TOKEN="+dashTok))
	dash.mustCall(dashDir, "chat_whoami", nil, nil)
	gw.mustCall(gwDir, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)

	const writers, each, killAfter = 4, 12, 8
	type outcome struct {
		body string
		r    callResult
		err  error
	}
	outcomes := make(chan outcome, writers*each)
	var succeeded atomic.Int64
	armed := make(chan struct{})
	var arm sync.Once
	var wg sync.WaitGroup
	for i := range writers {
		m, dir := gw, gwDir
		if i%2 == 1 {
			m, dir = dash, dashDir
		}
		wg.Go(func() {
			for j := range each {
				body := fmt.Sprintf("burst %d.%d", i, j)
				r, err := m.tryCall(dir, "chat_say", map[string]any{"channel": "gw--dash", "text": body})
				outcomes <- outcome{body, r, err}
				if err == nil && r.Success && succeeded.Add(1) >= killAfter {
					arm.Do(func() { close(armed) })
				}
			}
		})
	}
	// Once the burst runs, the next request the proxy sends to hub A is
	// in flight when A dies.
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		select {
		case <-armed:
		case <-time.After(callTimeout):
			return
		}
		started := make(chan int, 16)
		proxy.started.Store(&started)
		defer proxy.started.Store(nil)
		for {
			select {
			case n := <-started:
				if n == 0 {
					a.cmd.Process.Kill()
					return
				}
			case <-time.After(callTimeout):
				return
			}
		}
	}()
	wg.Wait()
	close(outcomes)
	<-killed
	select {
	case <-a.exited:
	case <-time.After(hubStartTimeout):
		t.Fatal("hub A was not killed during the burst")
	}

	var ok, failed []string
	for o := range outcomes {
		switch {
		case o.err != nil:
			t.Errorf("a member call printed no JSON: %v", o.err)
		case o.r.Success:
			ok = append(ok, o.body)
		default:
			failed = append(failed, o.body)
			t.Logf("%s failed: %s", o.body, o.r.Error)
			if !strings.Contains(o.r.Error, "team hub") || strings.Contains(o.r.Error, "\n") || strings.Contains(o.r.Error, "goroutine") {
				t.Errorf("a call broken off by the kill said %q: want one sentence about the team hub", o.r.Error)
			}
			if strings.Contains(o.r.Error, "nothing was written") && ht.count(`SELECT count(*) FROM messages WHERE body = '`+o.body+`'`) != 0 {
				t.Errorf("a call said %q, yet %q is stored", o.r.Error, o.body)
			}
		}
	}
	t.Logf("burst: %d calls succeeded, %d failed when hub A was killed", len(ok), len(failed))
	for _, body := range ok {
		if n := ht.count(`SELECT count(*) FROM messages WHERE body = '` + body + `'`); n != 1 {
			t.Errorf("%q answered success and is stored %d times", body, n)
		}
	}
	if n := ht.count(`SELECT count(*) FROM messages WHERE body LIKE 'burst %'`); n < int64(len(ok)) || n > writers*each {
		t.Errorf("%d burst messages stored, want from %d to %d", n, len(ok), writers*each)
	}
	checkGapless(t, ht.db, "gw--dash")
	checkInvariants(t, ht.db)

	// The member's next calls land through hub B (the proxy takes A and B
	// in turn, so half of them first meet the dead hub A).
	servedByB := proxy.served[1].Load()
	for i := range 4 {
		body := fmt.Sprintf("after the kill %d", i)
		gw.mustCall(gwDir, "chat_say", map[string]any{"channel": "gw--dash", "text": body}, nil)
		if n := ht.count(`SELECT count(*) FROM messages WHERE body = '` + body + `'`); n != 1 {
			t.Errorf("%q is stored %d times", body, n)
		}
	}
	var inbox struct {
		Channels []struct {
			Channel string `json:"channel"`
			Unread  int    `json:"unread"`
		} `json:"channels"`
	}
	dash.mustCall(dashDir, "chat_inbox", nil, &inbox)
	if len(inbox.Channels) != 1 || inbox.Channels[0].Unread == 0 {
		t.Errorf("node-dash's inbox after the kill: %+v", inbox)
	}
	if proxy.served[1].Load() <= servedByB {
		t.Errorf("hub B answered none of the calls after the kill")
	}

	// The proxy loses a call's answer after hub B ran it: the member must
	// not be told that nothing was written.
	proxy.loseAnswer.Store(true)
	r := gw.call(gwDir, "chat_say", map[string]any{"channel": "gw--dash", "text": "answer lost"})
	if r.Success || strings.Contains(r.Error, "nothing was written") || !strings.Contains(r.Error, "may or may not have landed") {
		t.Errorf("a call whose answer the proxy lost said %+v, want that it may or may not have landed", r)
	}
	if n := ht.count(`SELECT count(*) FROM messages WHERE body = 'answer lost'`); n != 1 {
		t.Errorf("the call whose answer was lost is stored %d times, want once", n)
	}
	checkGapless(t, ht.db, "gw--dash")
	checkInvariants(t, ht.db)
}

// PostgreSQL restarts (every connection cut) under a running hub, while
// a chat_wait waits in it: the wait goes on and is woken by the next say,
// the next calls through the hub succeed, and a wait begun after the
// restart wakes too.
func TestHubSurvivesPostgresRestart(t *testing.T) {
	skipShort(t)
	srv := pgtest.Own(t) // its own server: restarting the shared one would cut the other tests'
	ht := newHubTeamOn(t, srv.URL("postgres"))
	ht.w.configure(hubConfig)
	a := ht.hub("A")
	gw := hubMember(t, a.url, ht.issue("gw", "1h", "mesh-gw"), "")
	dash := hubMember(t, a.url, ht.issue("dash", "1h", "node-dash"), "")
	mustHubCall(t, dash, "chat_whoami", nil, nil)
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)

	waited := startHubWait(t, dash, 20, "gw--dash")
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	mustHubCall(t, gw, "chat_say", map[string]any{"channel": "gw--dash", "text": "after the restart"}, nil)
	awaitHubWait(t, waited, "gw--dash")

	mustHubCall(t, dash, "chat_read", map[string]any{"channel": "gw--dash"}, nil)
	mustHubCall(t, gw, "chat_ask", map[string]any{"channel": "gw--dash", "title": "Still there?", "body": "After the restart?", "slug": "still-there"}, nil)
	mustHubCall(t, dash, "chat_reply", map[string]any{"item": "still-there", "text": "yes"}, nil)
	mustHubCall(t, dash, "chat_read", map[string]any{"channel": "gw--dash"}, nil)
	waited = startHubWait(t, dash, 20, "gw--dash")
	mustHubCall(t, gw, "chat_say", map[string]any{"channel": "gw--dash", "text": "a second wake"}, nil)
	awaitHubWait(t, waited, "gw--dash")
	if status, body, _ := rawHubRequest(t, http.DefaultClient, a.url+"/healthz", "", "", ""); status != 200 {
		t.Errorf("healthz after the restart: %d %s", status, body)
	}
	checkGapless(t, ht.db, "gw--dash")
	checkInvariants(t, ht.db)
}

// The hub is down (its process gone, its port closed). A member's
// `mcpp-chat call` fails with one sentence that names the hub and says
// what to do, and the hook — with no fresh cache to answer from — prints
// nothing, exits 0 and returns promptly.
func TestHubDownMemberFailsClearly(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	a := ht.hub("A")
	m, dashDir, tok := ht.connectedDash(a)
	if mode := fileMode(hubFile(m)); mode != 0o600 {
		t.Errorf("hub.json has mode %04o, want 0600", mode)
	}
	m.mustCall(dashDir, "chat_inbox", nil, nil)

	a.kill()
	r, stderr := callWithStderr(t, m, dashDir, "chat_inbox")
	if r.Success {
		t.Fatalf("chat_inbox with the hub down succeeded: %+v", r)
	}
	for _, want := range []string{"team hub", a.url, "does not answer", "nothing was sent", "check that it runs", "retry"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("the error lacks %q: %q", want, r.Error)
		}
	}
	for _, noise := range []string{"\n", "goroutine", "panic", ".go:"} {
		if strings.Contains(r.Error, noise) || strings.Contains(stderr, noise) && noise != "\n" {
			t.Errorf("the failure holds %q: error %q, stderr %q", noise, r.Error, stderr)
		}
	}
	if strings.TrimSpace(stderr) != "" {
		t.Errorf("call printed on stderr besides its JSON: %q", stderr)
	}

	cache := filepath.Join(filepath.Dir(hubFile(m)), "hub-cache", "node-dash.json")
	if _, err := os.Stat(cache); err == nil {
		t.Fatalf("a hook cache exists (%s), though no serve ran", cache)
	}
	for _, event := range []string{"SessionStart", "UserPromptSubmit", "Stop"} {
		extra := []any{"prompt", "anything new?"}
		if event == "Stop" {
			extra = []any{"stop_hook_active", false}
		}
		h := m.runHook(dashDir, hookPayload("s1", event, dashDir, extra...), []string{"CLAUDE_PROJECT_DIR=" + dashDir}, "--event", event)
		mustSilent(t, event+" with the hub down", h)
		if h.took > 5*time.Second {
			t.Errorf("%s with the hub down took %v: it hangs", event, h.took)
		}
	}

	// A hub that takes the connection and never answers (stopped, not
	// gone): the hook gives up within its budget, silent.
	frozen := ht.hub("frozen")
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	env := []string{"CLAUDE_PROJECT_DIR=" + dashDir, "MCPP_CHAT_STORE=" + frozen.url, "MCPP_CHAT_TOKEN=" + tok}
	h := m.runHook(dashDir, hookPayload("s2", "UserPromptSubmit", dashDir, "prompt", "anything new?"), env, "--event", "UserPromptSubmit")
	mustSilent(t, "UserPromptSubmit with the hub frozen", h)
	if h.took > 5*time.Second {
		t.Errorf("UserPromptSubmit with the hub frozen took %v: it hangs", h.took)
	}
}

// A member's `mcpp-chat serve`, connected to the hub, is told through
// chat_inbox of an ask a peer posted through the hub with its own token;
// serve keeps the hook's cache, and the hook answers from that cache —
// even while the hub does not answer, as long as serve's poll of it is
// open. Once serve has lost the hub, the cache answers no more.
func TestHubMemberServeAndHookCache(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	a := ht.hub("A")
	m, dashDir, _ := ht.connectedDash(a)
	session := m.serve(dashDir)
	gw := hubMember(t, a.url, ht.issue("gw", "1h", "mesh-gw"), "")
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)
	mustHubCall(t, gw, "chat_ask", map[string]any{"channel": "gw--dash", "title": "Is the chunk header enum closed?", "body": "I need FRAME_AUX.", "slug": "chunk-api"}, nil)

	var inbox struct {
		Me          string `json:"me"`
		WaitingOnMe []struct {
			Item  string `json:"item"`
			From  string `json:"from"`
			Title string `json:"title"`
		} `json:"waiting_on_me"`
	}
	if _, errText := toolCall(t, session, "chat_inbox", nil, &inbox); errText != "" {
		t.Fatalf("chat_inbox through serve: %s", errText)
	}
	if inbox.Me != "node-dash" || len(inbox.WaitingOnMe) != 1 || inbox.WaitingOnMe[0].Item != "chunk-api" || inbox.WaitingOnMe[0].From != "mesh-gw" {
		t.Fatalf("node-dash's inbox through serve: %+v, want mesh-gw's chunk-api", inbox)
	}

	cache := filepath.Join(filepath.Dir(hubFile(m)), "hub-cache", "node-dash.json")
	awaitFileHolding(t, cache, "chunk-api", callTimeout, "serve kept no cache holding the ask")
	// With the hub frozen, only the cache can answer.
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	text := contextOf(t, m.runHook(dashDir, hookPayload("s1", "UserPromptSubmit", dashDir, "prompt", "go on"),
		[]string{"CLAUDE_PROJECT_DIR=" + dashDir}, "--event", "UserPromptSubmit"), "UserPromptSubmit")
	contains(t, text, "chunk-api", "Is the chunk header enum closed?", "mesh-gw")

	// The hub gone: serve's poll fails, and serve says so once it has
	// taken the cache away.
	a.kill()
	s, _ := servers.Load(session)
	serveErr := s.(*served).stderr
	for deadline := time.Now().Add(time.Minute); !strings.Contains(serveErr.String(), "cannot be reached"); {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not say it lost the hub:\n%s", serveErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mustSilent(t, "SessionStart once serve lost the hub", m.runHook(dashDir, hookPayload("s2", "SessionStart", dashDir, "source", "startup"),
		[]string{"CLAUDE_PROJECT_DIR=" + dashDir}, "--event", "SessionStart"))
}

// On a member machine `watch --mine` follows the hub: a peer's ask posted
// through the hub by another machine's party shows, the member's own
// words and other channels' do not; and the tick file a running serve
// keeps moves with the hub.
func TestHubMemberWatchAndTick(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	a := ht.hub("A")
	m, dashDir, _ := ht.connectedDash(a)
	dash := hubMember(t, a.url, ht.issue("dash2", "1h", "node-dash"), "")
	gw := hubMember(t, a.url, ht.issue("gw", "1h", "mesh-gw"), "")
	side := hubMember(t, a.url, ht.issue("side", "1h", "side-car"), "")
	mustHubCall(t, dash, "chat_whoami", nil, nil)
	mustHubCall(t, side, "chat_whoami", nil, nil)
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "gw--side", "parties": []string{"side-car"}}, nil)

	session := m.serve(dashDir) // keeps the tick file
	_ = session
	tick := filepath.Join(filepath.Dir(hubFile(m)), ".tick")
	watch, lines := startWatch(t, m, dashDir, "--mine")

	mustHubCall(t, dash, "chat_say", map[string]any{"channel": "gw--dash", "text": "my own words"}, nil)
	mustHubCall(t, side, "chat_say", map[string]any{"channel": "gw--side", "text": "elsewhere"}, nil)
	mustHubCall(t, gw, "chat_ask", map[string]any{"channel": "gw--dash", "title": "Deploy window tonight?", "body": "22:00 UTC."}, nil)
	l, ok := nextLine(lines, liveGenerous)
	if !ok || !strings.Contains(l, " gw--dash ") || !strings.HasSuffix(l, "mesh-gw ask: Deploy window tonight?") {
		t.Fatalf("watch --mine on a member printed %q, want mesh-gw's ask alone", l)
	}
	awaitFileHolding(t, tick, " * 0 hub", liveGenerous, "serve kept no tick file")
	stopProcess(t, watch, syscall.SIGINT)
}

// awaitFileHolding waits until the file at path holds want, failing with
// why after within.
func awaitFileHolding(t *testing.T, path, want string, within time.Duration, why string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s at %s: %q", why, path, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A member's watch and serve speak up when their line to the hub goes
// wrong, one line on stderr per trouble however often they retry, and one
// when it works again: the token revoked (and renewed with connect while
// they run), then the hub killed and started again.
func TestHubMemberWatchAndServeSpeakUp(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	a := ht.hub("A")
	m, dashDir, tok := ht.connectedDash(a)
	gw := hubMember(t, a.url, ht.issue("gw", "1h", "mesh-gw"), "")
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)

	session := m.serve(dashDir)
	s, _ := servers.Load(session)
	serveErr := s.(*served).stderr
	watch := exec.Command(chatBin, "watch")
	watch.Dir, watch.Env = dashDir, m.env
	watchErr := &syncBuffer{}
	watch.Stderr = watchErr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Process.Kill(); watch.Wait() })
	both := map[string]*syncBuffer{"watch": watchErr, "serve": serveErr}
	// saidBy waits until each of who has said a line holding want n times.
	saidBy := func(who map[string]*syncBuffer, want string, n int, why string) {
		t.Helper()
		for name, out := range who {
			deadline := time.Now().Add(time.Minute)
			for strings.Count(out.String(), want) < n {
				if time.Now().After(deadline) {
					t.Fatalf("%s: %s said %q fewer than %d times:\n%s", why, name, want, n, out)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	said := func(want, why string) { t.Helper(); saidBy(both, want, 1, why) }
	// once checks, after a few more of their retries, that each said
	// every line holding want once.
	once := func(want string, times int) {
		t.Helper()
		// sleep: neither process tells of its retries (they back off from
		// 250 ms: several fit), so a window is the assertion; a busy
		// machine fits fewer, which weakens it but never fails it.
		time.Sleep(3 * time.Second)
		for name, out := range both {
			if n := strings.Count(out.String(), want); n != times {
				t.Errorf("%s said %q %d times, want %d:\n%s", name, want, n, times, out)
			}
		}
	}
	saidBy(map[string]*syncBuffer{"watch": watchErr}, "watching the team hub", 1, "the watch's banner")

	ht.revoke(tokenIDOf(tok))
	// A long poll ends at the next change; the one after it is refused.
	mustHubCall(t, gw, "chat_say", map[string]any{"channel": "gw--dash", "text": "are you there?"}, nil)
	said("the token was revoked", "the revoked token")
	once("refused this machine's token", 1)
	for _, out := range []*syncBuffer{watchErr, serveErr} {
		contains(t, out.String(), "mcpp-chat connect "+a.url+" --token TOKEN")
	}

	// A new token saved with connect: both pick it up and say so.
	if out, err := m.command(dashDir, "connect", a.url, "--token", ht.issue("dash again", "1h", "node-dash")); err != nil {
		t.Fatalf("connect with a new token (%v):\n%s", err, out)
	}
	said("answers again", "the new token")
	once("answers again", 1)

	a.kill()
	said("cannot be reached", "the hub killed")
	once("cannot be reached", 1)

	again := startHubProcess(t, ht.w, "A again", ht.store, "--listen", strings.TrimPrefix(a.url, "http://"))
	ht.t.Cleanup(func() { ht.noSecrets("hub A again's output", again.logs()) })
	saidBy(both, "answers again", 2, "the hub started again")
	once("answers again", 2)
	ht.noSecrets("the watch's stderr", watchErr.String())
	ht.noSecrets("serve's stderr", serveErr.String())
}
