package tests

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// The team hub as its admin and its members run it: `mcpp-chat hub serve`
// processes on loopback, tokens made with `mcpp-chat hub token issue`,
// and members that reach the hub over HTTP.

// hubStartTimeout bounds a hub's start: opening the store and printing
// its address. Generous, as the machine may be loaded.
const hubStartTimeout = time.Minute

// hubProcess is a running `mcpp-chat hub serve`.
type hubProcess struct {
	name   string
	cmd    *exec.Cmd
	url    string // http://127.0.0.1:PORT, without /mcp
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan struct{}
}

// startHubProcess starts a hub on storeURL, listening on a free loopback
// port, with any further flags, and waits until it prints its address.
// It is killed when the test ends.
func startHubProcess(t *testing.T, w *world, name, storeURL string, flags ...string) *hubProcess {
	t.Helper()
	cmd := exec.Command(chatBin, append([]string{"hub", "serve", "--store", storeURL, "--listen", "127.0.0.1:0"}, flags...)...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	h := &hubProcess{name: name, cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = h.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start hub %s: %v", name, err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			h.stdout.Write([]byte(line + "\n"))
			if _, u, ok := strings.Cut(line, " on http://"); ok {
				select {
				case addr <- "http://" + strings.TrimSuffix(strings.TrimSpace(u), "/mcp"):
				default:
				}
			}
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(h.kill)
	select {
	case h.url = <-addr:
	case <-h.exited:
		t.Fatalf("hub %s exited before serving:\nstdout %s\nstderr %s", name, h.stdout, h.stderr)
	case <-time.After(hubStartTimeout):
		t.Fatalf("hub %s printed no address within %v:\nstdout %s\nstderr %s", name, hubStartTimeout, h.stdout, h.stderr)
	}
	return h
}

// kill ends the hub at once (SIGKILL: no deferred function, no graceful
// shutdown) and waits until it is gone, so that its port is closed.
func (h *hubProcess) kill() {
	if h.cmd.Process != nil {
		h.cmd.Process.Signal(syscall.SIGKILL)
	}
	select {
	case <-h.exited:
	case <-time.After(hubStartTimeout):
	}
}

// logs is everything the hub printed.
func (h *hubProcess) logs() string { return h.stdout.String() + h.stderr.String() }

// hubTeam is a team store with its admin's commands and a connection
// beside it to look inside.
type hubTeam struct {
	t     *testing.T
	w     *world
	db    *sql.DB
	store string
	// admin is everything the admin's commands printed, to look for
	// secrets in.
	admin   syncBuffer
	mu      sync.Mutex
	secrets []string
}

// newHubTeam is a world whose team store is a fresh PostgreSQL database.
func newHubTeam(t *testing.T) *hubTeam {
	t.Helper()
	w, db, u := teamWorld(t)
	return &hubTeam{t: t, w: w, db: db, store: u}
}

// newHubTeamOn is a world whose team store is storeURL.
func newHubTeamOn(t *testing.T, storeURL string) *hubTeam {
	t.Helper()
	w := newWorld(t)
	w.env = append(w.env, "MCPP_CHAT_STORE="+storeURL)
	db, err := sql.Open("pgx", storeURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &hubTeam{t: t, w: w, db: db, store: storeURL}
}

// hub starts a hub process on the team's store. When the test ends, its
// output must hold no secret of the team's tokens.
func (ht *hubTeam) hub(name string) *hubProcess {
	ht.t.Helper()
	h := startHubProcess(ht.t, ht.w, name, ht.store)
	ht.t.Cleanup(func() { ht.noSecrets("hub "+name+"'s output", h.logs()) })
	return h
}

// adminCmd runs `mcpp-chat hub token SUB --store STORE ARGS…` and
// returns its stdout; a failure fails the test.
func (ht *hubTeam) adminCmd(sub string, args ...string) string {
	ht.t.Helper()
	return ht.adminRun(append([]string{"token", sub, "--store", ht.store}, args...)...)
}

// adminRun runs `mcpp-chat hub ARGS…` as it is given.
func (ht *hubTeam) adminRun(args ...string) string {
	ht.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hubStartTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, chatBin, append([]string{"hub"}, args...)...)
	cmd.Dir = ht.w.dir
	cmd.Env = ht.w.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		ht.t.Fatalf("mcpp-chat hub %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// issue makes a token with `mcpp-chat hub token issue` and returns it.
func (ht *hubTeam) issue(label, ttl string, parties ...string) string {
	ht.t.Helper()
	args := []string{"--label", label, "--ttl", ttl, "--url", "http://127.0.0.1:1", "--new-party"}
	for _, p := range parties {
		args = append(args, "--party", p)
	}
	out := ht.adminCmd("issue", args...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	secret := strings.TrimSpace(lines[0])
	if len(lines) != 3 || !strings.HasPrefix(secret, store.TokenPrefix) || !strings.HasPrefix(lines[1], "# token ") ||
		lines[2] != "mcpp-chat connect http://127.0.0.1:1 --token "+secret {
		ht.t.Fatalf("token issue printed, want the token, a comment and the connect line:\n%s", out)
	}
	ht.mu.Lock()
	ht.secrets = append(ht.secrets, secret)
	ht.mu.Unlock()
	// Only the first and last lines may hold it: the admin hands it over.
	ht.admin.Write([]byte(lines[1] + "\n"))
	return secret
}

// revoke revokes a token with `mcpp-chat hub token revoke`.
func (ht *hubTeam) revoke(which string) {
	ht.t.Helper()
	out := ht.adminCmd("revoke", which)
	if !strings.Contains(out, "revoked token") {
		ht.t.Fatalf("token revoke %s printed %q", which, out)
	}
	ht.admin.Write([]byte(out))
}

// list is `mcpp-chat hub token list`.
func (ht *hubTeam) list() string {
	ht.t.Helper()
	out := ht.adminCmd("list")
	ht.admin.Write([]byte(out))
	return out
}

// secretOf is the part of a token that must never be shown: what comes
// after mcc_<id>_.
func secretOf(token string) string {
	_, secret, _ := strings.Cut(strings.TrimPrefix(token, store.TokenPrefix), "_")
	return secret
}

// tokenIDOf is a token's id, which may be shown.
func tokenIDOf(token string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(token, store.TokenPrefix), "_")
	return id
}

// noSecrets fails the test if any text holds a secret of the team's
// tokens.
func (ht *hubTeam) noSecrets(where string, text string) {
	ht.t.Helper()
	ht.mu.Lock()
	defer ht.mu.Unlock()
	for _, tok := range ht.secrets {
		if s := secretOf(tok); s != "" && strings.Contains(text, s) {
			ht.t.Errorf("%s holds the secret of token %s:\n%s", where, tokenIDOf(tok), text)
		}
	}
}

// count is a count(*) query's answer.
func (ht *hubTeam) count(query string) int64 {
	ht.t.Helper()
	return dbInt(ht.t, ht.db, query)
}

// rows counts what a refused request must never write.
func (ht *hubTeam) rows() string {
	ht.t.Helper()
	return fmt.Sprintf("messages %d, parties %d, channels %d, channel_parties %d, item_consumers %d, cursors %d",
		ht.count(`SELECT count(*) FROM messages`), ht.count(`SELECT count(*) FROM parties`),
		ht.count(`SELECT count(*) FROM channels`), ht.count(`SELECT count(*) FROM channel_parties`),
		ht.count(`SELECT count(*) FROM item_consumers`), ht.count(`SELECT count(*) FROM cursors`))
}

// checkGapless asserts that the channel's seqs are exactly 1..n.
func checkGapless(t *testing.T, db *sql.DB, channel string) int {
	t.Helper()
	seqs := dbStrings(t, db, `SELECT seq FROM messages m JOIN channels c ON c.id = m.channel_id WHERE c.name = $1 ORDER BY seq`, channel)
	for i, s := range seqs {
		if s != fmt.Sprint(i+1) {
			t.Fatalf("seq #%d of #%s is %s: not 1..%d without a gap", i+1, channel, s, len(seqs))
		}
	}
	return len(seqs)
}

// hubMember is a hub.Client acting for party with token at the hub at url.
func hubMember(t *testing.T, url, token, party string) *hub.Client {
	t.Helper()
	c, err := hub.NewClient(url+"/mcp", token, party)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hubCall runs a tool through a hub client and decodes its result into
// into (if not nil).
func hubCall(ctx context.Context, c *hub.Client, tool string, args any, into any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	if string(raw) == "null" {
		raw = []byte(`{}`)
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := c.Call(ctx, tool, raw, nil)
	if err != nil {
		return fmt.Errorf("%s via %s: %w", tool, c.Where(), err)
	}
	if into != nil {
		if err := json.Unmarshal(res.JSON, into); err != nil {
			return fmt.Errorf("%s via %s: result %s: %w", tool, c.Where(), res.JSON, err)
		}
	}
	return nil
}

// mustHubCall is hubCall that fails the test.
func mustHubCall(t *testing.T, c *hub.Client, tool string, args any, into any) {
	t.Helper()
	if err := hubCall(context.Background(), c, tool, args, into); err != nil {
		t.Fatal(err)
	}
}

// waitResult is chat_wait's result, as much as these tests read.
type waitResult struct {
	Arrived  bool `json:"arrived"`
	Channels []struct {
		Channel string `json:"channel"`
		Unread  int    `json:"unread"`
	} `json:"channels"`
}

// unreadIn is the wait's unread count in channel.
func (r waitResult) unreadIn(channel string) int {
	for _, c := range r.Channels {
		if c.Channel == channel {
			return c.Unread
		}
	}
	return 0
}

// startHubWait runs chat_wait on channel through c on a goroutine and returns once
// the hub has sent its first progress notice: the wait is under way on
// the hub. The result comes on the channel.
func startHubWait(t *testing.T, c *hub.Client, seconds int, channel string) <-chan waitOutcome {
	t.Helper()
	started := make(chan struct{})
	var once sync.Once
	done := make(chan waitOutcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		raw, _ := json.Marshal(map[string]any{"seconds": seconds, "channel": channel})
		res, err := c.Call(ctx, "chat_wait", raw, func(context.Context, float64, float64, string) {
			once.Do(func() { close(started) })
		})
		var r waitResult
		if err == nil {
			err = json.Unmarshal(res.JSON, &r)
		}
		done <- waitOutcome{r, err}
	}()
	select {
	case <-started:
	case o := <-done:
		t.Fatalf("chat_wait via %s ended before it waited: %+v %v", c.Where(), o.r, o.err)
	case <-time.After(callTimeout):
		t.Fatalf("chat_wait via %s sent no progress within %v", c.Where(), callTimeout)
	}
	return done
}

type waitOutcome struct {
	r   waitResult
	err error
}

// awaitHubWait is the wait's outcome, which must be that something arrived.
func awaitHubWait(t *testing.T, done <-chan waitOutcome, channel string) waitResult {
	t.Helper()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("chat_wait failed: %v", o.err)
		}
		if !o.r.Arrived || o.r.unreadIn(channel) == 0 {
			t.Fatalf("chat_wait ended without the new message: %+v", o.r)
		}
		return o.r
	case <-time.After(callTimeout):
		t.Fatalf("chat_wait did not end within %v", callTimeout)
	}
	return waitResult{}
}

// sdkMember is a go-sdk MCP client of the hub at url over streamable
// HTTP, sending token (and party in Mcpp-Party when not "").
func sdkMember(t *testing.T, url, token, party string) *mcp.ClientSession {
	t.Helper()
	httpClient := &http.Client{Transport: headerTransport{token: token, party: party, next: http.DefaultTransport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "tests", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: httpClient, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect a go-sdk client to %s: %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// headerTransport sends a member's token and party with every request.
type headerTransport struct {
	token, party string
	next         http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.token)
	if h.party != "" {
		r.Header.Set(hub.PartyHeader, h.party)
	}
	return h.next.RoundTrip(r)
}

// sdkCall runs a tool through a go-sdk session; a tool's refusal or a
// transport failure is an error.
func sdkCall(ctx context.Context, s *mcp.ClientSession, tool string, args map[string]any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		return fmt.Errorf("%s: %s", tool, contentText(res, 0))
	}
	return nil
}

// failoverProxy is a reverse proxy on loopback in front of several hubs,
// as a team would run one: it takes the hubs in turn, and a hub that
// refuses the connection is skipped (nothing reached it, so the request
// is sent to the next one). A hub that dies during a request breaks that
// request off (502), as any proxy does: a call may have landed.
type failoverProxy struct {
	url      string
	backends []*url.URL
	next     atomic.Int64
	// served counts the requests each backend answered.
	served []atomic.Int64
	// started, when not nil, is sent the index of each backend a request
	// is about to go to (without blocking).
	started atomic.Pointer[chan int]
	// loseAnswer, when set, makes the proxy lose the next answer: the
	// hub has run the request to its end, and the member gets 502, as
	// when the connection breaks after a commit.
	loseAnswer atomic.Bool
}

func startFailoverProxy(t *testing.T, hubs ...*hubProcess) *failoverProxy {
	t.Helper()
	p := &failoverProxy{served: make([]atomic.Int64, len(hubs))}
	for _, h := range hubs {
		u, err := url.Parse(h.url)
		if err != nil {
			t.Fatal(err)
		}
		p.backends = append(p.backends, u)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.url = "http://" + ln.Addr().String()
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = "http", "placeholder" // the transport picks the hub
		},
		Transport:     p,
		FlushInterval: -1, // streams (chat_wait's progress) pass at once
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return p
}

var hubTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 3 * time.Second}).DialContext
	return t
}()

func (p *failoverProxy) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		r.Body.Close()
	}
	first := int(p.next.Add(1))
	var err error
	for i := range p.backends {
		n := (first + i) % len(p.backends)
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host = p.backends[n].Scheme, p.backends[n].Host
		out.Host = p.backends[n].Host
		out.Body = io.NopCloser(strings.NewReader(string(body)))
		out.ContentLength = int64(len(body))
		if ch := p.started.Load(); ch != nil {
			select {
			case *ch <- n:
			default:
			}
		}
		var resp *http.Response
		resp, err = hubTransport.RoundTrip(out)
		if err == nil {
			p.served[n].Add(1)
			if p.loseAnswer.CompareAndSwap(true, false) {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return nil, errors.New("the answer was lost on its way back")
			}
			return resp, nil
		}
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "dial" {
			return nil, err // it may have reached the hub: never sent twice
		}
	}
	return nil, err
}

// memberEnv is the environment of a member machine: the world's, without
// a store of its own (no MCPP_CHAT_DB, no MCPP_CHAT_STORE), plus extra.
func memberEnv(w *world, extra ...string) []string {
	var env []string
	for _, kv := range w.env {
		if strings.HasPrefix(kv, "MCPP_CHAT_DB=") || strings.HasPrefix(kv, "MCPP_CHAT_STORE=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// member is a copy of w whose processes run as a member machine with env.
func member(w *world, env []string) *world {
	m := *w
	m.env = env
	return &m
}

// connectedDash is a member machine whose folder node-dash has connected
// to hub h with a token for node-dash: the machine, the folder, the token.
func (ht *hubTeam) connectedDash(h *hubProcess) (m *world, dashDir, token string) {
	ht.t.Helper()
	dashDir = ht.w.repo("node-dash")
	m = member(ht.w, memberEnv(ht.w))
	token = ht.issue("dash", "1h", "node-dash")
	out, err := m.command(dashDir, "connect", h.url, "--token", token)
	if err != nil || !strings.Contains(out, "connected to the team hub "+h.url) {
		ht.t.Fatalf("connect (%v):\n%s", err, out)
	}
	ht.noSecrets("connect's output", out)
	return m, dashDir, token
}

// hubFile is where a member machine's connect saves its hub in w.
func hubFile(w *world) string {
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "MCPP_CHAT_HUB_FILE="); ok {
			return v
		}
	}
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "MCPP_CHAT_HOME="); ok {
			return filepath.Join(v, "hub.json")
		}
	}
	return ""
}

// fileMode is a file's permission bits, or 0 when it cannot be read.
func fileMode(path string) os.FileMode {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Mode().Perm()
}
