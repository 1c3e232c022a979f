package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"
	"github.com/mcpp/mcpp-chat/tools"
)

// testHub is a hub on a database file in a temporary folder, served on
// loopback, with its log kept for the test to read.
type testHub struct {
	s      *Server
	srv    *httptest.Server
	db     *store.DB
	tokens *store.Tokens
	log    *bytes.Buffer
	issue  func(label string, ttl time.Duration, parties ...string) string
}

func startHub(t *testing.T) *testHub {
	t.Helper()
	return startHubWith(t, config.Defaults(), nil)
}

// startHubWith starts a hub with cfg, told of changes by changes (nil:
// the database file's watcher).
func startHubWith(t *testing.T, cfg config.Config, changes Changes) *testHub {
	t.Helper()
	ctx, h := newTestHub(t, cfg, changes)
	h.srv = httptest.NewServer(h.s.Handler(ctx))
	t.Cleanup(h.srv.Close)
	return h
}

// startLimitedHub starts a hub served as hub serve serves it, within lim.
func startLimitedHub(t *testing.T, lim Limits) *testHub {
	t.Helper()
	ctx, h := newTestHub(t, config.Defaults(), nil)
	serveLimited(t, ctx, h, lim)
	return h
}

// serveLimited serves h as hub serve serves it, within lim.
func serveLimited(t *testing.T, ctx context.Context, h *testHub, lim Limits) {
	t.Helper()
	h.s.Limits = lim
	h.s.MaxWait = 30 * time.Second // a wait holds its connection for the test's time
	h.srv = httptest.NewUnstartedServer(nil)
	h.srv.Config, h.srv.Listener = h.s.httpServer(ctx, h.srv.Listener)
	h.srv.Start()
	t.Cleanup(h.srv.Close)
}

// newTestHub makes a hub's server (not yet served) and what the test
// needs of it; the context ends with the test.
func newTestHub(t *testing.T, cfg config.Config, changes Changes) (context.Context, *testHub) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	path := filepath.Join(t.TempDir(), "chat.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	read, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { read.Close() })
	if changes == nil {
		w, err := wake.Watch(path, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		changes = w
	}
	return ctx, hubOn(t, ctx, db, read, cfg, changes)
}

// hubOn makes a hub's server on a store's handles, with its tokens.
func hubOn(t *testing.T, ctx context.Context, db *store.DB, read *store.ReadOnly, cfg config.Config, changes Changes) *testHub {
	t.Helper()
	tokens, err := db.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tokens.Close() })
	manifest, err := tools.LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	s := &Server{DB: db, Read: read, Tokens: tokens, Manifest: manifest, Config: cfg, Env: func(string) string { return "" },
		Changes: changes, Log: slog.New(slog.NewTextHandler(logs, nil)), Version: "test", MaxWait: 5 * time.Second}
	h := &testHub{s: s, db: db, tokens: tokens, log: logs}
	h.issue = func(label string, ttl time.Duration, parties ...string) string {
		tok, _, err := tokens.Issue(ctx, parties, label, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	return h
}

func (h *testHub) client(t *testing.T, token, party string) *Client {
	t.Helper()
	c, err := NewClient(h.srv.URL+"/mcp", token, party)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func call(t *testing.T, c *Client, tool, args string) map[string]any {
	t.Helper()
	res, err := c.Call(context.Background(), tool, json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var v map[string]any
	if err := json.Unmarshal(res.JSON, &v); err != nil {
		t.Fatalf("%s answered %s: %v", tool, res.JSON, err)
	}
	return v
}

// On a stateless hub every request is a session of the MCP SDK, which
// logs each one's start and end at INFO: calls that succeed log nothing.
func TestCallsLogNothing(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
	for range 3 {
		call(t, gw, "chat_whoami", `{}`)
	}
	if log := h.log.String(); log != "" {
		t.Fatalf("three calls logged:\n%s", log)
	}
}

// A client that goes away while its token is checked (a member's serve
// ending during a long-poll) is no sign of a store out of reach.
func TestAClientGoneIsNoWarning(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	tok := h.issue("gw", time.Hour, "mesh-gw")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodGet, "/v1/wait?timeout=1", nil).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+tok)
	h.srv.Config.Handler.ServeHTTP(httptest.NewRecorder(), req)
	if log := h.log.String(); strings.Contains(log, "could not be checked") || strings.Contains(log, "refused") {
		t.Fatalf("a request whose client had gone was logged as a failure:\n%s", log)
	}
}

// A call acts as the token's party: the author of a say is the party the
// token is bound to, whatever the caller's own folder is called.
func TestCallsActAsTheTokensParty(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
	dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "node-dash")
	call(t, dash, "chat_whoami", `{}`)
	call(t, gw, "chat_channel_new", `{"name":"gw--dash","parties":["node-dash"]}`)
	call(t, gw, "chat_ask", `{"channel":"gw--dash","title":"Which port?","body":"Which port does node-dash serve on?"}`)
	inbox := call(t, dash, "chat_read", `{"channel":"gw--dash"}`)
	msgs := inbox["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["from"] != "mesh-gw" || last["kind"] != "ask" {
		t.Fatalf("node-dash read %v; want mesh-gw's ask", last)
	}
	who := call(t, dash, "chat_whoami", `{}`)
	if who["me"] != "node-dash" {
		t.Fatalf("whoami party = %v", who["me"])
	}
	// Stateless requests each make a session: the SDK's INFO lines about
	// them would be most of the hub's log.
	if strings.Contains(h.log.String(), "session connected") || strings.Contains(h.log.String(), "server connecting") {
		t.Errorf("the hub logs every request's session:\n%s", h.log)
	}
	// A path names no party on a hub: it means another machine's folder.
	_, err := gw.Call(context.Background(), "chat_channel_new", json.RawMessage(`{"name":"x","parties":["/home/me/src/node-dash"]}`), nil)
	if err == nil || !strings.Contains(err.Error(), "team hub") {
		t.Fatalf("a path as a party: %v", err)
	}
}

// Every way in without a valid token bound to the party is refused with
// 401 or 403, writes nothing, and logs no secret.
func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	good := h.issue("good", time.Hour, "node-dash")
	both := h.issue("both", time.Hour, "node-dash", "mesh-gw")
	revoked := h.issue("gone", time.Hour, "node-dash")
	if _, err := h.tokens.Revoke(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	expired := h.issue("old", time.Nanosecond, "node-dash")
	time.Sleep(time.Millisecond) // sleep: past the token's expiry, which is the clock's to reach
	say := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chat_whoami","arguments":{}}}`
	cases := []struct {
		name, token, party, body string
		status                   int
	}{
		{"no token", "", "", say, 401},
		{"unknown token", "mcc_000000000000_nope", "", say, 401},
		{"garbage", "hello", "", say, 401},
		{"expired", expired, "", say, 401},
		{"revoked", revoked, "", say, 401},
		{"party not bound", good, "mesh-gw", say, 403},
		{"several parties, none named", both, "", say, 403},
		{"author in the arguments", good, "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chat_say","arguments":{"text":"hi","author":"mesh-gw"}}}`, 403},
		{"author in a batch", good, "", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chat_say","arguments":{"text":"hi","from":"mesh-gw"}}}]`, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, path := range []string{"/mcp", "/v1/hook", "/v1/wait?timeout=0.1", "/v1/token", "/v1/arrivals?after=-1"} {
				if c.status == 403 && strings.Contains(c.name, "author") && path != "/mcp" {
					continue
				}
				if c.name == "several parties, none named" && path == "/v1/token" {
					continue // it acts for no party
				}
				method := http.MethodGet
				var body io.Reader
				if path == "/mcp" {
					method, body = http.MethodPost, strings.NewReader(c.body)
				}
				req, _ := http.NewRequest(method, h.srv.URL+path, body)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				if c.party != "" {
					req.Header.Set(PartyHeader, c.party)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.status {
					t.Errorf("%s: status %d, want %d (%s)", path, resp.StatusCode, c.status, data)
				}
				var e struct{ Error string }
				if json.Unmarshal(data, &e) != nil || e.Error == "" {
					t.Errorf("%s: the refusal says nothing: %s", path, data)
				}
			}
		})
	}
	parties, err := h.db.Parties(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(parties) != 0 {
		t.Fatalf("refused requests made parties: %+v", parties)
	}
	for _, secret := range []string{good, both, revoked, expired} {
		_, tail, _ := strings.Cut(strings.TrimPrefix(secret, store.TokenPrefix), "_")
		if strings.Contains(h.log.String(), tail) {
			t.Fatalf("the log holds a token's secret:\n%s", h.log)
		}
	}
	if !strings.Contains(h.log.String(), "refused a request") {
		t.Fatalf("refusals were not logged:\n%s", h.log)
	}
}

// A token for several parties acts for the one the request names.
func TestSeveralParties(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	tok := h.issue("laptop", time.Hour, "node-dash", "mesh-gw")
	if who := call(t, h.client(t, tok, "mesh-gw"), "chat_whoami", `{}`); who["me"] != "mesh-gw" {
		t.Fatalf("party = %v", who["me"])
	}
	if who := call(t, h.client(t, tok, "node-dash"), "chat_whoami", `{}`); who["me"] != "node-dash" {
		t.Fatalf("party = %v", who["me"])
	}
	_, err := h.client(t, tok, "other").Call(context.Background(), "chat_whoami", json.RawMessage(`{}`), nil)
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Status != 403 || !strings.Contains(err.Error(), "not bound") {
		t.Fatalf("another party: %v", err)
	}
}

// The hook's summary answers 304 while nothing changed, and a wait ends
// at a change.
func TestHookSummaryAndWait(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	ctx := context.Background()
	gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
	dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
	call(t, dash, "chat_whoami", `{}`)
	call(t, gw, "chat_channel_new", `{"name":"gw--dash","parties":["node-dash"]}`)

	// The file watcher reports a commit again a moment later; a state
	// that stays put answers 304.
	var first Summary
	quiet := false
	for range 50 {
		s, changed, err := dash.Pending(ctx, first.ETag, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !changed {
			quiet = true
			break
		}
		first = s
		time.Sleep(100 * time.Millisecond)
	}
	if !quiet || first.ETag == "" {
		t.Fatalf("the summary never answered 304 (ETag %q)", first.ETag)
	}
	waited := make(chan string, 1)
	go func() {
		tag, err := dash.Wait(ctx, first.ETag, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		waited <- tag
	}()
	call(t, gw, "chat_ask", `{"channel":"gw--dash","title":"Port?","body":"Which port?"}`)
	var tag string
	select {
	case tag = <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the wait did not end at the ask")
	}
	if tag == first.ETag {
		t.Fatal("the wait ended without a new ETag")
	}
	// The watcher may report the commit more than once; the summary read
	// after the last report holds the ask.
	deadline := time.Now().Add(3 * time.Second)
	for {
		s, _, err := dash.Pending(ctx, "", 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Pending.WaitingOnMe) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ask is not waiting on node-dash: %+v", s.Pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// No tool declares an argument that would choose the author, so the hub's
// guard never refuses a real call.
func TestNoToolChoosesItsAuthor(t *testing.T) {
	t.Parallel()
	m, err := tools.LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range m.Tools {
		for _, name := range authorArguments {
			if strings.Contains(string(tool.SchemaJSON()), `"`+name+`"`) {
				t.Errorf("%s declares %q", tool.Name, name)
			}
		}
	}
}

// A member's chat_wait goes to the hub; the hub's progress notes reach
// the member's client while it waits, and a write through the hub ends
// the wait.
func TestWaitThroughTheHub(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	cfg.Chat.WaitProgressMS = 50
	h := startHubWith(t, cfg, nil)
	gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
	dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
	call(t, dash, "chat_whoami", `{}`)
	call(t, gw, "chat_channel_new", `{"name":"gw--dash","parties":["node-dash"]}`)
	call(t, dash, "chat_read", `{"channel":"gw--dash"}`)

	notes := make(chan string, 100)
	type answer struct {
		res tools.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := dash.Call(context.Background(), "chat_wait", json.RawMessage(`{"seconds":15}`), func(_ context.Context, _, _ float64, msg string) {
			notes <- msg
		})
		done <- answer{res, err}
	}()
	select {
	case <-notes: // waiting, and saying so
	case a := <-done:
		t.Fatalf("chat_wait ended before any progress: %+v", a)
	case <-time.After(10 * time.Second):
		t.Fatal("no progress reached the member")
	}
	call(t, gw, "chat_ask", `{"channel":"gw--dash","title":"Port?","body":"Which port?"}`)
	select {
	case a := <-done:
		if a.err != nil || !strings.Contains(string(a.res.JSON), "Port?") {
			t.Fatalf("chat_wait = %s, %v", a.res.JSON, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ask did not end the wait")
	}
}

// A hub that takes the call and never answers does not hold the member:
// the call ends, saying it may have landed; a call stopped by its caller
// says the same, and a hub that is not there says nothing was sent.
func TestMemberCallsEndOnAFrozenHub(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // held open, never answered
		}
	}()
	c, err := NewClient("http://"+ln.Addr().String(), "mcc_x_y", "node-dash")
	if err != nil {
		t.Fatal(err)
	}
	c.Patience = 200 * time.Millisecond
	_, err = c.Call(context.Background(), "chat_inbox", json.RawMessage(`{}`), nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer in time") || !strings.Contains(err.Error(), "may or may not have landed") {
		t.Fatalf("a frozen hub: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = c.Call(ctx, "chat_inbox", json.RawMessage(`{}`), nil)
	if err == nil || !strings.Contains(err.Error(), "stopped before the team hub") || !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped call: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	gone, _ := NewClient("http://"+addr, "mcc_x_y", "node-dash")
	_, err = gone.Call(context.Background(), "chat_inbox", json.RawMessage(`{}`), nil)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "nothing was sent") || strings.Count(err.Error(), "team hub") != 1 {
		t.Fatalf("no hub: %v", err)
	}
}

// A proxy's bare 502 is said once, and as a call that may have landed.
func TestMemberReadsAProxysGatewayError(t *testing.T) {
	t.Parallel()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer proxy.Close()
	c, _ := NewClient(proxy.URL, "mcc_x_y", "node-dash")
	_, err := c.Call(context.Background(), "chat_say", json.RawMessage(`{"text":"hi"}`), nil)
	if err == nil || strings.Count(err.Error(), "Bad Gateway") != 1 || !strings.Contains(err.Error(), "may or may not have landed") {
		t.Fatalf("a bare 502: %v", err)
	}
}

// A state the store cannot vouch for yet (a SQLite file just written) is
// waited for, not named at each wake; a wake that finds the state as it
// was moves nothing.
func TestGenerationNamesEachStateOnce(t *testing.T) {
	t.Parallel()
	fp, trusted, untrustedLooks := "a", true, 0
	g := generation{boot: "b", state: func() (string, bool) {
		if untrustedLooks > 0 {
			untrustedLooks--
			return fp, false
		}
		return fp, trusted
	}}
	if !g.look() {
		t.Fatal("the first look named nothing")
	}
	first := g.current()
	if g.look() || g.current() != first {
		t.Fatal("a wake on an unchanged state moved the name")
	}
	fp, untrustedLooks = "b", 1 // vouched for at look's second try, 5 ms on
	if !g.look() || g.current() == first || strings.Contains(g.current(), "b-") {
		t.Fatalf("the new state was not named by the store: %s", g.current())
	}
	second := g.current()
	if g.look() || g.current() != second {
		t.Fatal("the settled state moved again")
	}
	trusted = false // never settles: a name of this process's own stands in
	fp = "c"
	if !g.look() || !strings.Contains(g.current(), "b-") {
		t.Fatalf("an unsettled state: %s", g.current())
	}
}

// Every session of a party asks for the summary after each change: the
// hub reads it once per state.
func TestSummaryReadOncePerState(t *testing.T) {
	t.Parallel()
	h := startHubWith(t, config.Defaults(), never{})
	ctx := context.Background()
	dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
	call(t, dash, "chat_whoami", `{}`)
	first, _, err := dash.Pending(ctx, "", 3)
	if err != nil {
		t.Fatal(err)
	}
	// A change the hub is not told of: the state keeps its name, and the
	// summary read at that name is what the next session gets.
	call(t, dash, "chat_channel_new", `{"name":"gw--dash"}`)
	again, _, err := dash.Pending(ctx, "", 3)
	if err != nil || again.ETag != first.ETag || len(again.Pending.Channels) != 0 {
		t.Fatalf("the second session's summary: %+v, %v", again, err)
	}
}

// never is a store that never reports a change.
type never struct{}

func (never) Next() <-chan struct{} { return nil }

// A watcher's first answer from the hub wakes its waiters too: a change
// between a waiter's look and that answer is not left for the next one.
// After that it wakes at changes of what its party sees only.
func TestWatcherWakesAtItsFirstAnswer(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
	w := dash.Watch()
	// A poll that fails is retried after a pause of up to MaxBackoff, so
	// on a loaded machine the first answer may take a few of them; what
	// failed is logged for the failure's message.
	w.OnError = func(err error) { t.Logf("a poll failed: %v", err) }
	defer w.Close()
	select {
	case <-w.Next():
	case <-time.After(3 * MaxBackoff):
		t.Fatal("the first answer woke nobody")
	}
	next := w.Next()
	call(t, dash, "chat_channel_new", `{"name":"dash"}`) // a seat: dash sees a new channel
	select {
	case <-next:
	case <-time.After(3 * MaxBackoff):
		t.Fatal("a change woke nobody")
	}
}

// A member's chat_wait ends at once when its client closes its end, as
// on a single host: the wait on the hub is asked again for one second.
func TestMemberWaitEndsWhenTheClientLeaves(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	tok := h.issue("dash", time.Hour, "node-dash")
	dash := h.client(t, tok, "")
	call(t, dash, "chat_whoami", `{}`)
	manifest, err := tools.LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	left := make(chan struct{})
	svc := &tools.Service{Config: config.Defaults(), Manifest: manifest, Remote: dash.Call, StopWaiting: left,
		Me: store.Identity{Name: "node-dash", Team: true}}
	done := make(chan error, 1)
	var res tools.Result
	go func() {
		var err error
		res, err = svc.Call(context.Background(), "chat_wait", json.RawMessage(`{"seconds":20}`))
		done <- err
	}()
	h.waitOpen(t, tok, 1) // the wait is on the hub
	close(left)
	select {
	case err := <-done:
		if err != nil || !strings.Contains(string(res.JSON), `"arrived"`) {
			t.Fatalf("the wait answered %s, %v", res.JSON, err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the wait went on after the client left")
	}
	// The wait the member gave up on ended on the hub too: closing the
	// server waits for every request still running.
	closed := make(chan struct{})
	go func() { h.srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(8 * time.Second):
		t.Fatal("the hub still runs a chat_wait whose client went away")
	}
}

// A peer the hub does not know yet is refused with what to do on a hub:
// never the single host's advice to give a repository's path, which a
// hub refuses.
func TestAnUnknownPeerIsAskedForByName(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
	_, err := gw.Call(context.Background(), "chat_channel_new", json.RawMessage(`{"name":"gw--dash","parties":["node-dash"]}`), nil)
	if err == nil || !strings.Contains(err.Error(), "no party named 'node-dash'") || strings.Contains(err.Error(), "path") {
		t.Fatalf("an unknown peer: %v", err)
	}
}

// A path the hub does not serve — the OAuth discovery and registration a
// client tries after /mcp asked for a token — answers 404 with what the
// hub is and how to register it, not a bare "404 page not found", in
// words that survive Claude Code's display.
func TestUnknownPathsSayHowToConnect(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/.well-known/oauth-protected-resource/mcp"},
		{http.MethodGet, "/.well-known/oauth-authorization-server"},
		{http.MethodPost, "/register"},
	} {
		req, _ := http.NewRequest(c.method, h.srv.URL+c.path, strings.NewReader("{}"))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error string }
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		_, hint, _ := strings.Cut(body.Error, c.path+": ")
		if res.StatusCode != http.StatusNotFound || !strings.HasPrefix(body.Error, "nothing at "+c.path+": this is an mcpp-chat team hub") ||
			!strings.Contains(hint, `claude mcp add --transport http chat URL --header "Authorization: Bearer TOKEN", where URL is `+h.srv.URL+" with the path mcp after a slash") ||
			!strings.Contains(hint, "mcpp-chat hub token issue") {
			t.Errorf("%s %s: %d %q", c.method, c.path, res.StatusCode, body.Error)
		}
		// Claude Code redacts every /mcp it shows (any case, also
		// percent-encoded): the hint must hold none.
		if lower, _ := url.PathUnescape(strings.ToLower(hint)); strings.Contains(lower, "/mcp") {
			t.Errorf("%s %s: Claude Code would show the hint without its endpoint: %q", c.method, c.path, hint)
		}
	}
}
