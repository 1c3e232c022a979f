package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/hook"
	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// The hub section times the team hub (hub/, `mcpp-chat hub serve`) on
// this machine, all over loopback:
//
//   - a read (chat_inbox) and a write (chat_say) over MCP stdio to a
//     single host's serve, over HTTP straight to a hub with the MCP SDK's
//     client (what a remote Claude Code does), with the member's own raw
//     HTTP client in process (hub.Client, no MCP client library), and
//     through a member's serve fronting the hub; each on a database file
//     and on PostgreSQL;
//   - chat_wait's wake-up across two hubs on one PostgreSQL;
//   - the hook on a member machine, answering from serve's cache and,
//     without one, by asking the hub.
//
// The calls act as the reader of the 100k benchmark conversation (300 live
// items seen), as the tools section's do.

const hubCommand = "go run ./tests/bench -only hub"

// hubConfig is every hub's and member's config: no daily backup (each run
// is a fresh copy), and waits that send progress soon, so that a waiter
// is known to be under way.
const hubConfig = "storage:\n  daily_backup: false\nchat:\n  wait_progress_ms: 20\n"

// hubStore is a kind of store a hub serves: fresh gives a new copy of
// the template and the environment a hub on it runs with.
type hubStore struct {
	name  string
	fresh func() (url string, env []string, err error)
}

func benchHub(w *world, o options, r *report) error {
	t, err := w.history("100k", 100000)
	if err != nil {
		return err
	}
	stores := []hubStore{{name: "SQLite", fresh: func() (string, []string, error) {
		run, err := w.hubRun(t.path)
		if err != nil {
			return "", nil, err
		}
		return "sqlite:" + run.db, run.env, nil
	}}}

	pg, err := startPostgres()
	if err != nil {
		return err
	}
	if pg != nil {
		defer pg.Stop()
		if _, err := copyToPostgres(pg, "hub_template", t.path); err != nil {
			return fmt.Errorf("copy the 100k template: %w", err)
		}
		n := 0
		stores = append(stores, hubStore{name: "PostgreSQL", fresh: func() (string, []string, error) {
			n++
			name := fmt.Sprintf("hub_%d", n)
			if err := pgExec(pg, "CREATE DATABASE "+name+" TEMPLATE hub_template"); err != nil {
				return "", nil, err
			}
			run, err := w.hubRun("")
			if err != nil {
				return "", nil, err
			}
			return pg.URL(name), run.env, nil
		}})
	} else {
		progress("hub: PostgreSQL not installed; only the SQLite hub is measured")
	}

	if err := benchHubCalls(w, o, r, t, stores, pg); err != nil {
		return err
	}
	if pg != nil {
		if err := benchHubWake(w, r, pg, 50); err != nil {
			return fmt.Errorf("wake-up: %w", err)
		}
	}
	return benchHubHook(w, r, t, stores)
}

// hubRun is a run whose config is hubConfig.
func (w *world) hubRun(template string) (*run, error) {
	r, err := w.newRun(template)
	if err != nil {
		return nil, err
	}
	return r, os.WriteFile(filepath.Join(r.dir, "config.yaml"), []byte(hubConfig), 0o600)
}

func startPostgres() (*pgtest.Server, error) {
	dir, err := os.MkdirTemp("", "pgtest.")
	if err != nil {
		return nil, err
	}
	srv, err := pgtest.Start(dir)
	if errors.Is(err, pgtest.ErrNotInstalled) {
		os.RemoveAll(dir)
		return nil, nil
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return srv, nil
}

func pgExec(srv *pgtest.Server, sql string) error { return pgExecIn(srv, "postgres", sql) }

// pgExecIn runs sql in database on the server.
func pgExecIn(srv *pgtest.Server, database, sql string) error {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, srv.URL(database))
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, sql)
	return err
}

// hubCalls are the two calls timed on every path.
var hubCalls = []struct {
	tool string
	args func(i int) map[string]any
}{
	{"chat_inbox", func(int) map[string]any { return map[string]any{} }},
	{"chat_say", func(i int) map[string]any {
		return map[string]any{"channel": "ch-00", "text": fmt.Sprintf("benchmark status %d: all green", i)}
	}},
}

// caller is one way to make a tool call; it reports a tool error as an
// error.
type caller func(ctx context.Context, tool string, args map[string]any) error

// proc is a process whose CPU time a measurement reports.
type proc struct {
	name string
	pid  int
}

// timed is one call's samples and the CPU time each process spent per
// call meanwhile.
type timed struct {
	lat samples
	cpu []string // "hub 1.23 ms", in the order of the procs
}

// timeCalls warms a caller up as measureTool does (whoami, then
// channel_list) and times n calls of each of hubCalls, reading the CPU
// time procs spent around each tool's n calls.
func timeCalls(call caller, n int, procs ...proc) (map[string]timed, error) {
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		warm := "chat_channel_list"
		if i == 0 {
			warm = "chat_whoami"
		}
		if err := call(ctx, warm, map[string]any{}); err != nil {
			return nil, err
		}
	}
	out := map[string]timed{}
	for _, c := range hubCalls {
		var t timed
		before := make([]time.Duration, len(procs))
		for i, p := range procs {
			before[i], _ = cpuOf(p.pid)
		}
		for i := 0; i < n; i++ {
			args := c.args(i)
			begin := time.Now()
			err := call(ctx, c.tool, args)
			t.lat = append(t.lat, time.Since(begin))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.tool, err)
			}
		}
		// What a call sets off (a member's cache, the watchers) ends
		// within this; the next tool's figures do not pay for it.
		time.Sleep(300 * time.Millisecond)
		for i, p := range procs {
			after, _ := cpuOf(p.pid)
			t.cpu = append(t.cpu, fmt.Sprintf("%s %s", p.name, ms((after-before[i])/time.Duration(n))))
		}
		out[c.tool] = t
	}
	return out, nil
}

func latValue(lat samples) string {
	return fmt.Sprintf("mean %s, n=%d", ms(lat.mean()), len(lat))
}

func (r *report) addCalls(path, setup string, calls map[string]timed) {
	for _, c := range hubCalls {
		t, ok := calls[c.tool]
		if !ok {
			continue
		}
		value := latValue(t.lat)
		if len(t.cpu) > 0 {
			value += "; CPU a call: " + strings.Join(t.cpu, ", ")
		}
		r.add(figure{what: "`" + c.tool + "` " + path, setup: setup, lat: t.lat, value: value, command: hubCommand})
	}
}

// benchHubCalls times chat_inbox and chat_say on every path.
func benchHubCalls(w *world, o options, r *report, t seeded, stores []hubStore, pg *pgtest.Server) error {
	reader := t.parties[0]
	const setup = "100k history, 300 live items seen"

	// (a) A single host: serve over stdio on the database file, and on
	// the team store.
	progress("hub: stdio serve on the database file")
	if err := stdioPing(w, t, o.samples, r); err != nil {
		return err
	}
	calls, err := stdioCalls(w, t, o.samples)
	if err != nil {
		return err
	}
	r.addCalls("round trip, MCP stdio, single host", "SQLite, "+setup, calls)
	if pg != nil {
		progress("hub: stdio serve on PostgreSQL")
		url, _, err := stores[1].fresh()
		if err != nil {
			return err
		}
		pt := t
		pt.store = url
		calls, err := stdioCalls(w, pt, o.samples)
		if err != nil {
			return err
		}
		r.addCalls("round trip, MCP stdio, single host", "PostgreSQL, "+setup, calls)
	}

	for _, st := range stores {
		// (b) A remote MCP client on the hub's /mcp.
		progress("hub: %s hub, MCP SDK client over HTTP", st.name)
		err := withHub(w, st, reader.Name, func(h *hubProc, token string) error {
			s, err := sdkSession(h.mcp, token, nil)
			if err != nil {
				return err
			}
			defer s.Close()
			var ping samples
			ctx := context.Background()
			for i := 0; i < o.samples+50; i++ {
				begin := time.Now()
				if err := s.Ping(ctx, nil); err != nil {
					return fmt.Errorf("ping: %w", err)
				}
				if i >= 50 {
					ping = append(ping, time.Since(begin))
				}
			}
			r.add(figure{what: "MCP `ping` round trip, HTTP to the hub (MCP SDK client)", setup: st.name + " hub", lat: ping, value: latValue(ping), command: hubCommand})
			calls, err := timeCalls(sdkCaller(s), o.samples, proc{"hub", h.cmd.Process.Pid})
			if err != nil {
				return err
			}
			r.addCalls("round trip, HTTP to the hub (MCP SDK client)", st.name+" hub, "+setup, calls)
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s hub, SDK client: %w", st.name, err)
		}

		// The member's own client in process: one POST per call, no MCP
		// client library.
		progress("hub: %s hub, hub.Client in process", st.name)
		err = withHub(w, st, reader.Name, func(h *hubProc, token string) error {
			c, err := hub.NewClient(h.mcp, token, reader.Name)
			if err != nil {
				return err
			}
			calls, err := timeCalls(func(ctx context.Context, tool string, args map[string]any) error {
				raw, _ := json.Marshal(args)
				_, err := c.Call(ctx, tool, raw, nil)
				return err
			}, o.samples, proc{"hub", h.cmd.Process.Pid})
			if err != nil {
				return err
			}
			r.addCalls("round trip, HTTP to the hub (`hub.Client` in process, no MCP client)", st.name+" hub, "+setup, calls)
			paced, err := pacedSays(func(ctx context.Context, tool string, args map[string]any) error {
				raw, _ := json.Marshal(args)
				_, err := c.Call(ctx, tool, raw, nil)
				return err
			}, "", proc{"hub", h.cmd.Process.Pid})
			if err != nil {
				return err
			}
			r.add(figure{what: "`chat_say` one every 100 ms, HTTP to the hub (`hub.Client`), no member serve following", setup: st.name + " hub, " + setup,
				lat: paced.lat, value: paced.value(), command: hubCommand})
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s hub, hub.Client: %w", st.name, err)
		}

		// (c) A member's serve (stdio) forwarding to the hub.
		progress("hub: %s hub, through a member's serve", st.name)
		err = withHub(w, st, reader.Name, func(h *hubProc, token string) error {
			m, err := w.member(h, token, reader.Workspace)
			if err != nil {
				return err
			}
			s, err := startServe(w.chatBin, reader.Workspace, m.env)
			if err != nil {
				return err
			}
			defer s.stop()
			if err := s.handshake(); err != nil {
				return err
			}
			calls, err := timeCalls(func(_ context.Context, tool string, args map[string]any) error {
				_, err := s.call(tool, args)
				return err
			}, o.samples, proc{"member serve", s.cmd.Process.Pid}, proc{"hub", h.cmd.Process.Pid})
			if err != nil {
				return err
			}
			r.addCalls("round trip, MCP stdio to a member's serve → HTTP to the hub", st.name+" hub, "+setup, calls)
			paced, err := pacedSays(func(_ context.Context, tool string, args map[string]any) error {
				_, err := s.call(tool, args)
				return err
			}, filepath.Join(m.dir, "module", "hub-cache", reader.Name+".json"), proc{"member serve", s.cmd.Process.Pid}, proc{"hub", h.cmd.Process.Pid})
			if err != nil {
				return err
			}
			r.add(figure{what: "`chat_say` one every 100 ms, MCP stdio to a member's serve → HTTP to the hub (the serve follows the hub)", setup: st.name + " hub, " + setup,
				lat: paced.lat, value: paced.value(), command: hubCommand})
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s hub, member: %w", st.name, err)
		}
	}
	return nil
}

// paced is pacedSays' measurement.
type paced struct {
	timed
	refreshes float64 // the member's cache replaced, per say; <0: not counted
}

func (p paced) value() string {
	v := latValue(p.lat) + "; CPU a say: " + strings.Join(p.cpu, ", ")
	if p.refreshes >= 0 {
		v += fmt.Sprintf("; the member's cache refreshed %.1f× a say", p.refreshes)
	}
	return v
}

// pacedSays times chat_say at an agent's pace rather than a loop's: 50
// says 100 ms apart, so that what each sets off (a following member's
// refresh of the hook's cache, a SQLite hub's second looks) ends before
// the next, and the CPU per say holds all of it. With cache, it counts
// the times that file was replaced.
func pacedSays(call caller, cache string, procs ...proc) (paced, error) {
	const n, gap = 50, 100 * time.Millisecond
	p := paced{refreshes: -1}
	var counted chan int
	stop := make(chan struct{})
	if cache != "" {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			return p, err
		}
		defer fw.Close()
		if err := fw.Add(filepath.Dir(cache)); err != nil {
			return p, err
		}
		counted = make(chan int, 1)
		go func() {
			k := 0
			for {
				select {
				case ev := <-fw.Events:
					if ev.Name == cache && ev.Op.Has(fsnotify.Create) {
						k++
					}
				case <-fw.Errors:
				case <-stop:
					counted <- k
					return
				}
			}
		}()
	}
	ctx := context.Background()
	before := make([]time.Duration, len(procs))
	for i, pr := range procs {
		before[i], _ = cpuOf(pr.pid)
	}
	for i := 0; i < n; i++ {
		begin := time.Now()
		err := call(ctx, "chat_say", map[string]any{"channel": "ch-00", "text": fmt.Sprintf("paced status %d: all green", i)})
		p.lat = append(p.lat, time.Since(begin))
		if err != nil {
			close(stop)
			return p, err
		}
		time.Sleep(gap)
	}
	for i, pr := range procs {
		after, _ := cpuOf(pr.pid)
		p.cpu = append(p.cpu, fmt.Sprintf("%s %s", pr.name, ms((after-before[i])/n)))
	}
	close(stop)
	if counted != nil {
		p.refreshes = float64(<-counted) / n
	}
	return p, nil
}

// stdioPing times MCP's ping against serve over stdio: the floor of the
// single host's figures.
func stdioPing(w *world, t seeded, n int, r *report) error {
	s, _, err := w.served(t, 0)
	if err != nil {
		return err
	}
	defer s.stop()
	var lat samples
	for i := 0; i < n+50; i++ {
		begin := time.Now()
		if _, err := s.request("ping", map[string]any{}); err != nil {
			return err
		}
		if i >= 50 {
			lat = append(lat, time.Since(begin))
		}
	}
	r.add(figure{what: "MCP `ping` round trip, stdio (single host)", setup: "SQLite", lat: lat, value: latValue(lat), command: hubCommand})
	return nil
}

// stdioCalls times the calls against a warm serve on a fresh copy, as
// the tools section does, inbox and say on one copy.
func stdioCalls(w *world, t seeded, n int) (map[string]timed, error) {
	s, _, err := w.served(t, 0)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	return timeCalls(func(_ context.Context, tool string, args map[string]any) error {
		_, err := s.call(tool, args)
		return err
	}, n, proc{"serve", s.cmd.Process.Pid})
}

// hubProc is a running `mcpp-chat hub serve`.
type hubProc struct {
	cmd *exec.Cmd
	mcp string // its MCP endpoint, http://127.0.0.1:PORT/mcp
	log string // its log (stderr)
}

// startHub runs `mcpp-chat hub serve` on storeURL on a free loopback
// port and returns once it has printed its address. Its log goes to a
// file in the scratch folder.
func (w *world) startHub(storeURL string, env []string) (*hubProc, error) {
	w.hubs++
	logPath := filepath.Join(w.dir, "hubs", fmt.Sprintf("%02d.log", w.hubs))
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own copy
	args := append([]string{"hub", "serve", "--store", storeURL, "--listen", "127.0.0.1:0"}, w.hubFlags...)
	cmd := exec.Command(w.chatBin, args...)
	cmd.Env = env
	cmd.Stderr = logFile
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &hubProc{cmd: cmd, log: logPath}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		i := strings.LastIndex(l, " on ")
		if i < 0 || !strings.HasSuffix(strings.TrimSpace(l), "/mcp") {
			h.stop()
			return nil, fmt.Errorf("hub serve printed %q, not its address; its log: %s", l, h.tail())
		}
		h.mcp = strings.TrimSpace(l[i+len(" on "):])
	case <-time.After(30 * time.Second):
		h.stop()
		return nil, fmt.Errorf("hub serve printed no address within 30 s; its log: %s", h.tail())
	}
	return h, nil
}

// tail is the end of the hub's log, for an error.
func (h *hubProc) tail() string {
	data, _ := os.ReadFile(h.log)
	return string(data[max(0, len(data)-2000):])
}

// base is the hub's address without /mcp, as members are given it.
func (h *hubProc) base() string { return strings.TrimSuffix(h.mcp, "/mcp") }

// stop ends the hub as a service manager would (SIGTERM).
func (h *hubProc) stop() {
	h.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
}

// issueToken runs `mcpp-chat hub token issue` for party and returns the
// token (the first line it prints).
func (w *world) issueToken(storeURL string, env []string, party string) (string, error) {
	cmd := exec.Command(w.chatBin, "hub", "token", "issue", "--store", storeURL, "--party", party, "--label", "bench-"+party, "--new-party")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hub token issue: %v: %s", err, out)
	}
	tok, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(tok), nil
}

// withHub runs fn against a hub on a fresh copy of the store, with a
// token for party.
func withHub(w *world, st hubStore, party string, fn func(h *hubProc, token string) error) error {
	url, env, err := st.fresh()
	if err != nil {
		return err
	}
	token, err := w.issueToken(url, env, party)
	if err != nil {
		return err
	}
	h, err := w.startHub(url, env)
	if err != nil {
		return err
	}
	defer h.stop()
	if err := fn(h, token); err != nil {
		return fmt.Errorf("%w (the hub's log: %s)", err, h.log)
	}
	return nil
}

// member is a member machine's install: its own folder, connected to the
// hub with `mcpp-chat connect` (hub.json in its module folder). Its
// environment names no database, so the saved hub is its store.
func (w *world) member(h *hubProc, token, workspace string) (*run, error) {
	m, err := w.hubRun("")
	if err != nil {
		return nil, err
	}
	env := m.env[:0:0]
	for _, kv := range m.env {
		if !strings.HasPrefix(kv, "MCPP_CHAT_DB=") {
			env = append(env, kv)
		}
	}
	m.env = env
	cmd := exec.Command(w.chatBin, "connect", h.base(), "--token", token)
	cmd.Dir, cmd.Env = workspace, m.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("connect: %v: %s", err, out)
	}
	return m, nil
}

// bearer adds the token to every request of the MCP SDK's client, as a
// remote client configured with a header does.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

// sdkSession connects the official MCP SDK's client to the hub over
// streamable HTTP with the token.
func sdkSession(endpoint, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
}

func sdkCaller(s *mcp.ClientSession) caller {
	return func(ctx context.Context, tool string, args map[string]any) error {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("%s: %s", tool, contentText(res, 0))
		}
		return nil
	}
}

func contentText(res *mcp.CallToolResult, i int) string {
	if i >= len(res.Content) {
		return ""
	}
	if t, ok := res.Content[i].(*mcp.TextContent); ok {
		return t.Text
	}
	return ""
}

// benchHubWake times chat_wait's wake-up across two hubs on one
// PostgreSQL: a waiter's chat_wait in flight through hub B, a peer's
// chat_say through hub A, from sending the say to the wait's answer; and
// the same with both on one hub, for comparison.
func benchHubWake(w *world, r *report, pg *pgtest.Server, rounds int) error {
	t, err := w.template("hub-wake", "wake", func(p []store.Identity) store.SeedSpec {
		return store.SeedSpec{Parties: p, Channels: 1, Seats: len(p)}
	}, 2)
	if err != nil {
		return err
	}
	url, err := copyToPostgres(pg, "hub_wake", t.path)
	if err != nil {
		return err
	}
	run, err := w.hubRun("")
	if err != nil {
		return err
	}
	waiterTok, err := w.issueToken(url, run.env, t.parties[0].Name)
	if err != nil {
		return err
	}
	peerTok, err := w.issueToken(url, run.env, t.parties[1].Name)
	if err != nil {
		return err
	}
	a, err := w.startHub(url, run.env)
	if err != nil {
		return err
	}
	defer a.stop()
	b, err := w.startHub(url, run.env)
	if err != nil {
		return err
	}
	defer b.stop()
	for _, c := range []struct {
		setup      string
		waitOn     *hubProc
		ratherThan *hubProc
	}{
		{"PostgreSQL, two hubs: wait on B, say on A", b, a},
		{"PostgreSQL, one hub: wait and say on A", a, a},
	} {
		progress("hub: wake-up, %s", c.setup)
		wake, fromAnswer, say, err := wakeRounds(c.waitOn, c.ratherThan, waiterTok, peerTok, rounds)
		if err != nil {
			return err
		}
		r.add(figure{what: "`chat_wait` wake-up: the peer's `chat_say` sent → the wait's answer (MCP SDK clients over HTTP)", setup: c.setup,
			lat: wake, value: latValue(wake), command: hubCommand})
		r.add(figure{what: "… the same from the say's answer (negative: the wait answered first)", setup: c.setup,
			lat: fromAnswer, value: latValue(fromAnswer), command: hubCommand})
		r.add(figure{what: "… the peer's `chat_say` itself", setup: c.setup, lat: say, value: latValue(say), command: hubCommand})
	}
	return nil
}

// wakeRounds has the waiter (through waitHub) wait while the peer
// (through sayHub) says, rounds times after one that warms up.
func wakeRounds(waitHub, sayHub *hubProc, waiterTok, peerTok string, rounds int) (wake, fromAnswer, say samples, err error) {
	progressed := make(chan struct{}, 1)
	waiter, err := sdkSession(waitHub.mcp, waiterTok, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progressed <- struct{}{}:
			default:
			}
		},
	})
	if err != nil {
		return nil, nil, nil, err
	}
	defer waiter.Close()
	peer, err := sdkSession(sayHub.mcp, peerTok, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	defer peer.Close()
	ctx := context.Background()
	read, said := sdkCaller(waiter), sdkCaller(peer)
	for i := range rounds + 1 { // round 0 warms up
		// Nothing unread: the wait blocks.
		if err := read(ctx, "chat_read", map[string]any{"channel": "ch-00"}); err != nil {
			return nil, nil, nil, err
		}
		select { // a late progress of the previous round's wait
		case <-progressed:
		default:
		}
		type answer struct {
			at  time.Time
			err error
		}
		done := make(chan answer, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			params := &mcp.CallToolParams{Name: "chat_wait", Arguments: map[string]any{"seconds": 20}}
			params.SetProgressToken(fmt.Sprint("round-", i))
			res, err := waiter.CallTool(wctx, params)
			at := time.Now()
			switch {
			case err != nil:
			case res.IsError:
				err = errors.New(contentText(res, 0))
			case !strings.Contains(contentText(res, 1), `"arrived":true`):
				err = fmt.Errorf("the wait ended without the say: %s", contentText(res, 1))
			}
			done <- answer{at, err}
		}()
		select { // its first progress: the wait is under way on the hub
		case <-progressed:
		case a := <-done:
			return nil, nil, nil, fmt.Errorf("round %d: the wait answered before the say: %v", i, a.err)
		case <-time.After(10 * time.Second):
			return nil, nil, nil, fmt.Errorf("round %d: the wait sent no progress", i)
		}
		sent := time.Now()
		if err := said(ctx, "chat_say", map[string]any{"channel": "ch-00", "text": fmt.Sprintf("round %d", i)}); err != nil {
			return nil, nil, nil, err
		}
		answered := time.Now()
		a := <-done
		if a.err != nil {
			return nil, nil, nil, fmt.Errorf("round %d: %w", i, a.err)
		}
		if i == 0 {
			continue
		}
		wake = append(wake, a.at.Sub(sent))
		fromAnswer = append(fromAnswer, a.at.Sub(answered))
		say = append(say, answered.Sub(sent))
	}
	return wake, fromAnswer, say, nil
}

// benchHubHook times mcpp-chat-hook on a member machine at a quiet
// prompt: answered from the cache a running member serve keeps, and with
// no cache, where it hands the event to `mcpp-chat hook`, which asks the
// hub (a 304 at a quiet state).
func benchHubHook(w *world, r *report, t seeded, stores []hubStore) error {
	if w.hookBin == "" {
		progress("hub: the checkout has no cmd/mcpp-chat-hook; the hook is not measured")
		return nil
	}
	const hookRuns = 100
	floor, err := w.processFloor(hookRuns)
	if err != nil {
		return err
	}
	r.add(figure{what: "process floor: `mcpp-chat-hook --version`", setup: "no store", lat: floor, value: latValue(floor), command: hubCommand})
	chatFloor, err := w.commandFloor(hookRuns, w.chatBin, "version")
	if err != nil {
		return err
	}
	r.add(figure{what: "process floor: `mcpp-chat version`", setup: "no store", lat: chatFloor, value: latValue(chatFloor), command: hubCommand})
	reader := t.parties[0]
	for _, st := range stores {
		progress("hub: the hook on a member of the %s hub", st.name)
		err := withHub(w, st, reader.Name, func(h *hubProc, token string) error {
			m, err := w.member(h, token, reader.Workspace)
			if err != nil {
				return err
			}
			cache := filepath.Join(filepath.Join(m.dir, "module"), "hub-cache", reader.Name+".json")
			s, err := startServe(w.chatBin, reader.Workspace, m.env)
			if err != nil {
				return err
			}
			if err := s.handshake(); err != nil {
				s.stop()
				return err
			}
			if err := waitForFile(cache, 15*time.Second); err != nil {
				s.stop()
				return err
			}
			cached, told, err := w.quietHook(m, reader.Workspace, "bench-cached", hookRuns, w.hookBin, "--event", "UserPromptSubmit")
			s.stop()
			if err != nil {
				return fmt.Errorf("with the cache: %w", err)
			}
			r.add(figure{what: "hook `UserPromptSubmit` on a member, quiet, from serve's fresh cache", setup: st.name + " hub, member serve running",
				lat: cached, value: fmt.Sprintf("mean %s, n=%d (%d prompts told before quiet)", ms(cached.mean()), len(cached), told), command: hubCommand})

			// No serve, no cache: the hook asks the hub.
			if err := os.RemoveAll(filepath.Dir(cache)); err != nil {
				return err
			}
			asked, told, err := w.quietHook(m, reader.Workspace, "bench-asked", hookRuns, w.hookBin, "--event", "UserPromptSubmit")
			if err != nil {
				return fmt.Errorf("without the cache: %w", err)
			}
			r.add(figure{what: "hook `UserPromptSubmit` on a member, quiet, no cache: `mcpp-chat hook` asks the hub (304)", setup: st.name + " hub, no member serve",
				lat: asked, value: fmt.Sprintf("mean %s, n=%d (%d prompts told before quiet)", ms(asked.mean()), len(asked), told), command: hubCommand})
			if _, err := os.Stat(cache); err == nil {
				return errors.New("a cache appeared with no serve running")
			}
			// What the hook hands the event to, alone.
			direct, _, err := w.quietHook(m, reader.Workspace, "bench-asked", hookRuns, w.chatBin, "hook", "--event", "UserPromptSubmit")
			if err != nil {
				return fmt.Errorf("mcpp-chat hook: %w", err)
			}
			r.add(figure{what: "… of which `mcpp-chat hook --event UserPromptSubmit` alone (the process the hook starts)", setup: st.name + " hub, no member serve",
				lat: direct, value: latValue(direct), command: hubCommand})

			// The 304 alone, in process.
			c, err := hub.NewClient(h.mcp, token, reader.Name)
			if err != nil {
				return err
			}
			ctx := context.Background()
			first, _, err := c.Pending(ctx, "", hook.NewestShown)
			if err != nil {
				return err
			}
			var lat samples
			for i := 0; i < hookRuns+10; i++ {
				begin := time.Now()
				_, changed, err := c.Pending(ctx, first.ETag, hook.NewestShown)
				d := time.Since(begin)
				if err != nil {
					return err
				}
				if changed {
					return errors.New("/v1/hook answered a changed state at an unchanged one")
				}
				if i >= 10 {
					lat = append(lat, d)
				}
			}
			r.add(figure{what: "`GET /v1/hook` with the state's ETag (304), `hub.Client` in process", setup: st.name + " hub",
				lat: lat, value: latValue(lat), command: hubCommand})
			return nil
		})
		if err != nil {
			return fmt.Errorf("the hook on a member of the %s hub: %w", st.name, err)
		}
	}
	return nil
}

// quietHook runs the hook (argv) at UserPromptSubmit in one session until it
// has been quiet three times in a row (the prompts before tell what waits,
// a page at a time), then times n quiet runs; told is the number of
// prompts that printed something first.
func (w *world) quietHook(m *run, workspace, session string, n int, argv ...string) (samples, int, error) {
	payload, _ := json.Marshal(map[string]any{"session_id": session, "transcript_path": "", "cwd": workspace,
		"hook_event_name": "UserPromptSubmit", "prompt": "carry on", "permission_mode": "default"})
	hookRun := func() (time.Duration, bool, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = workspace
		cmd.Env = append(m.env, "CLAUDE_PROJECT_DIR="+workspace)
		cmd.Stdin = bytes.NewReader(payload)
		begin := time.Now()
		out, err := cmd.Output()
		d := time.Since(begin)
		if err != nil {
			return d, false, fmt.Errorf("hook: %v: %s", err, out)
		}
		return d, len(bytes.TrimSpace(out)) == 0, nil
	}
	told, quiet := 0, 0
	for i := 0; quiet < 3; i++ {
		if i == 300 {
			return nil, told, errors.New("the hook was not quiet after 300 prompts")
		}
		_, q, err := hookRun()
		if err != nil {
			return nil, told, err
		}
		if q {
			quiet++
		} else {
			told, quiet = told+1, 0
		}
	}
	var lat samples
	for i := 0; i < n; i++ {
		d, q, err := hookRun()
		if err != nil {
			return nil, told, err
		}
		if !q {
			return nil, told, fmt.Errorf("a quiet prompt printed something (run %d)", i)
		}
		lat = append(lat, d)
	}
	return lat, told, nil
}

// commandFloor times a command that touches no store, n times after 10
// that warm up.
func (w *world) commandFloor(n int, bin string, args ...string) (samples, error) {
	var lat samples
	for i := 0; i < n+10; i++ {
		cmd := exec.Command(bin, args...)
		cmd.Dir = filepath.Dir(bin)
		begin := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, err
		}
		if i >= 10 {
			lat = append(lat, time.Since(begin))
		}
	}
	return lat, nil
}

func waitForFile(path string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %s", path, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
