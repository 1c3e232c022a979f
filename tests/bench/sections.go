package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// seeded is a template database and what its seed wrote.
type seeded struct {
	path    string
	report  store.SeedReport
	parties []store.Identity
	// store, when set, is a team store holding a copy of the template:
	// servers use it instead of the file.
	store string
}

// sizes are the two histories every per-tool figure is taken on.
var sizes = []struct {
	label   string
	history int
}{{"1k", 1000}, {"100k", 100000}}

var templateCache = map[string]seeded{}

// template seeds (once) the conversation named name.
func (w *world) template(name string, prefix string, spec func([]store.Identity) store.SeedSpec, nParties int) (seeded, error) {
	if t, ok := templateCache[name]; ok {
		return t, nil
	}
	parties, err := w.repos(prefix, nParties)
	if err != nil {
		return seeded{}, err
	}
	progress("seeding %s", name)
	start := time.Now()
	path, report, err := w.seed(name, spec(parties))
	if err != nil {
		return seeded{}, err
	}
	progress("seeded %s: %d messages in %s", name, report.Messages, time.Since(start).Round(time.Millisecond))
	t := seeded{path: path, report: report, parties: parties}
	templateCache[name] = t
	return t, nil
}

func (w *world) history(label string, n int) (seeded, error) {
	return w.template("history-"+label, "party", func(p []store.Identity) store.SeedSpec { return store.BenchSpec(p, n) }, 10)
}

// templates writes every template (for -seed).
func (w *world) templates() ([]seeded, error) {
	var out []seeded
	for _, s := range sizes {
		t, err := w.history(s.label, s.history)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	for _, u := range hookUnread {
		t, err := w.unread(u)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// served starts serve on a fresh copy of a template as its first party
// and completes the MCP handshake.
func (w *world) served(t seeded, party int) (*server, *run, error) {
	r, err := w.newRun(t.path)
	if err != nil {
		return nil, nil, err
	}
	if t.store != "" {
		r.env = append(r.env, "MCPP_CHAT_STORE="+t.store)
	}
	s, err := startServe(w.chatBin, t.parties[party].Workspace, r.env)
	if err != nil {
		return nil, nil, err
	}
	if err := s.handshake(); err != nil {
		s.stop()
		return nil, nil, err
	}
	return s, r, nil
}

// benchStart times `serve` from exec to the answer of its first tools/list.
func benchStart(w *world, o options, r *report) error {
	t, err := w.history("100k", 100000)
	if err != nil {
		return err
	}
	var lat samples
	for i := 0; i < 30; i++ {
		run, err := w.newRun(t.path)
		if err != nil {
			return err
		}
		begin := time.Now()
		s, err := startServe(w.chatBin, t.parties[0].Workspace, run.env)
		if err != nil {
			return err
		}
		if err := s.handshake(); err != nil {
			s.stop()
			return err
		}
		_, err = s.request("tools/list", map[string]any{})
		lat = append(lat, time.Since(begin))
		s.stop()
		if err != nil {
			return err
		}
	}
	r.add(figure{what: "`serve` start → first `tools/list` answer (incl. initialize)", setup: "100k history", lat: lat,
		command: "go run ./tests/bench -only start"})
	return nil
}

// toolCase is one tool's measured call; args returns the i-th call's
// arguments, or false when the database has nothing left for it to do
// (then a fresh copy is served).
type toolCase struct {
	tool     string
	perServe int
	prepare  func(s *server, round int) (func(i int) (map[string]any, bool), error)
}

func fixed(args map[string]any) func(*server, int) (func(int) (map[string]any, bool), error) {
	return func(*server, int) (func(int) (map[string]any, bool), error) {
		return func(int) (map[string]any, bool) { return args, true }, nil
	}
}

var toolCases = []toolCase{
	{"chat_say", 250, func(_ *server, round int) (func(int) (map[string]any, bool), error) {
		return func(i int) (map[string]any, bool) {
			return map[string]any{"channel": "ch-00", "text": fmt.Sprintf("benchmark status %d.%d: all green", round, i)}, true
		}, nil
	}},
	{"chat_ask", 250, func(_ *server, round int) (func(int) (map[string]any, bool), error) {
		return func(i int) (map[string]any, bool) {
			return map[string]any{"channel": "ch-00", "title": fmt.Sprintf("Benchmark question %d.%d", round, i),
				"body": "Does the new endpoint keep the paging contract? Please check."}, true
		}, nil
	}},
	{"chat_reply", 250, func(s *server, round int) (func(int) (map[string]any, bool), error) {
		raw, err := s.call("chat_read", map[string]any{"channel": "ch-00", "peek": true, "limit": 1})
		if err != nil {
			return nil, err
		}
		var page struct{ Messages []struct{ Seq int64 } }
		if err := json.Unmarshal(raw, &page); err != nil || len(page.Messages) == 0 {
			return nil, fmt.Errorf("no unread message in ch-00 to reply to (%v)", err)
		}
		item := fmt.Sprintf("ch-00:%d", page.Messages[0].Seq)
		return func(i int) (map[string]any, bool) {
			return map[string]any{"item": item, "text": fmt.Sprintf("benchmark answer %d.%d", round, i)}, true
		}, nil
	}},
	{"chat_ack", 1 << 30, func(s *server, round int) (func(int) (map[string]any, bool), error) {
		raw, err := s.call("chat_inbox", map[string]any{})
		if err != nil {
			return nil, err
		}
		var in struct {
			WaitingOnMe []struct {
				Channel, Item string
				Needs         store.Need
			} `json:"waiting_on_me"`
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, err
		}
		var items []string
		for _, x := range in.WaitingOnMe {
			if x.Needs == store.NeedAck {
				items = append(items, x.Item) // the bare slug, as sessions usually write it
			}
		}
		if len(items) == 0 {
			return nil, fmt.Errorf("nothing waits on the reader's ack")
		}
		return func(i int) (map[string]any, bool) {
			if i >= len(items) {
				return nil, false
			}
			return map[string]any{"item": items[i]}, true
		}, nil
	}},
	{"chat_read", 1 << 30, fixed(map[string]any{"channel": "ch-00", "peek": true})},
	{"chat_inbox", 1 << 30, fixed(map[string]any{})},
	{"chat_whoami", 1 << 30, fixed(map[string]any{})},
	{"chat_channel_list", 1 << 30, fixed(map[string]any{})},
}

// benchTools times each tool's round trip over MCP stdio against a warm
// serve, on the small and on the large history.
func benchTools(w *world, o options, r *report) error {
	if err := benchPing(w, o, r); err != nil {
		return err
	}
	fsync, err := w.fsyncLatency(200)
	if err != nil {
		return err
	}
	r.add(figure{what: "`fsync` of a 4 KiB write (the disk's floor under every write)", setup: "the bench folder", lat: fsync, command: "go run ./tests/bench -only tools"})
	sayGoal := fsync.pct(50) + 600*time.Microsecond
	p50 := map[string][]time.Duration{}
	for _, size := range sizes {
		t, err := w.history(size.label, size.history)
		if err != nil {
			return err
		}
		for _, tc := range toolCases {
			if !o.wantTool(tc.tool) {
				continue
			}
			lat, err := w.measureTool(t, tc, o.samples)
			if err != nil {
				return fmt.Errorf("%s on %s history: %w", tc.tool, size.label, err)
			}
			goal, met := "", ""
			switch {
			case size.label != "100k":
			case tc.tool == "chat_say":
				goal, met = "p50 ≤ fsync p50 + 0.6 ms = "+ms(sayGoal), yesNo(lat.pct(50) <= sayGoal)
			case tc.tool == "chat_read", tc.tool == "chat_inbox", tc.tool == "chat_whoami":
				goal, met = "p50 < 1 ms", yesNo(lat.pct(50) < time.Millisecond)
			}
			r.add(figure{what: "`" + tc.tool + "` round trip (MCP stdio, warm serve)", setup: size.label + " history", lat: lat,
				goal: goal, met: met, command: "go run ./tests/bench -only tools"})
			p50[tc.tool] = append(p50[tc.tool], lat.pct(50))
		}
	}
	for _, tc := range toolCases {
		if v := p50[tc.tool]; len(v) == 2 {
			r.ratios = append(r.ratios, ratio{tool: tc.tool, small: v[0], big: v[1]})
		}
	}
	return benchLightPresent(w, o, r)
}

// benchLightPresent times the inbox and whoami when the reader sees 30
// live items instead of 300: their cost follows the live items a party
// sees (each is a line of the answer), not the history.
func benchLightPresent(w *world, o options, r *report) error {
	t, err := w.template("history-100k-light", "party", func(p []store.Identity) store.SeedSpec {
		spec := store.BenchSpec(p, 100000)
		spec.LiveItems = 100
		return spec
	}, 10)
	if err != nil {
		return err
	}
	for _, tc := range toolCases {
		if (tc.tool != "chat_inbox" && tc.tool != "chat_whoami") || !o.wantTool(tc.tool) {
			continue
		}
		lat, err := w.measureTool(t, tc, o.samples)
		if err != nil {
			return fmt.Errorf("%s on the light present: %w", tc.tool, err)
		}
		r.add(figure{what: "`" + tc.tool + "` round trip (MCP stdio, warm serve)", setup: "100k history, 100 live items (30 seen)", lat: lat,
			goal: "p50 < 1 ms", met: yesNo(lat.pct(50) < time.Millisecond), command: "go run ./tests/bench -only tools"})
	}
	return nil
}

// benchPing times MCP's ping: the stdio round trip with no tool behind it,
// the floor under every tool's figure.
func benchPing(w *world, o options, r *report) error {
	t, err := w.history("100k", 100000)
	if err != nil {
		return err
	}
	s, _, err := w.served(t, 0)
	if err != nil {
		return err
	}
	defer s.stop()
	var lat samples
	for i := 0; i < o.samples+50; i++ {
		begin := time.Now()
		if _, err := s.request("ping", map[string]any{}); err != nil {
			return err
		}
		if i >= 50 {
			lat = append(lat, time.Since(begin))
		}
	}
	r.add(figure{what: "MCP `ping` round trip (stdio floor, no tool)", setup: "warm serve", lat: lat, command: "go run ./tests/bench -only tools"})
	return nil
}

// measureTool takes n samples of one tool, serving fresh copies of the
// template as often as the tool uses up what it acts on.
func (w *world) measureTool(t seeded, tc toolCase, n int) (samples, error) {
	var lat samples
	for round := 0; len(lat) < n; round++ {
		s, run, err := w.served(t, 0)
		if err != nil {
			return nil, err
		}
		// Warm the connection, the page cache and the Go runtime with
		// calls that change nothing the tool depends on.
		for i := 0; i < 50; i++ {
			warm := "chat_channel_list"
			if i == 0 {
				warm = "chat_whoami" // what a session calls first
			}
			if _, err := s.call(warm, map[string]any{}); err != nil {
				s.stop()
				return nil, err
			}
		}
		args, err := tc.prepare(s, round)
		if err != nil {
			s.stop()
			return nil, err
		}
		for i := 0; i < tc.perServe && len(lat) < n; i++ {
			a, ok := args(i)
			if !ok {
				break
			}
			begin := time.Now()
			_, err := s.call(tc.tool, a)
			lat = append(lat, time.Since(begin))
			if err != nil {
				s.stop()
				return nil, err
			}
		}
		s.stop()
		_ = run
	}
	return lat, nil
}

// benchCall times `mcpp-chat call` as a whole process: exec, open, one
// tool, exit.
func benchCall(w *world, o options, r *report) error {
	for _, size := range sizes {
		t, err := w.history(size.label, size.history)
		if err != nil {
			return err
		}
		run, err := w.newRun(t.path)
		if err != nil {
			return err
		}
		for _, c := range []struct{ tool, args string }{
			{"chat_whoami", `{}`},
			{"chat_say", `{"channel":"ch-00","text":"benchmark status from a shell"}`},
		} {
			var lat samples
			for i := 0; i < 100; i++ {
				cmd := exec.Command(w.chatBin, "call", c.tool, c.args)
				cmd.Dir = t.parties[0].Workspace
				cmd.Env = run.env
				begin := time.Now()
				out, err := cmd.Output()
				lat = append(lat, time.Since(begin))
				if err != nil {
					return fmt.Errorf("call %s: %v: %s", c.tool, err, out)
				}
			}
			r.add(figure{what: "`mcpp-chat call " + c.tool + "` whole process", setup: size.label + " history", lat: lat,
				command: "go run ./tests/bench -only call"})
		}
	}
	return nil
}

// benchWrite has 8 serve processes, one per repository, post into one
// channel at once, each call after the previous answer.
func benchWrite(w *world, o options, r *report) error {
	const writers, perWriter = 8, 250
	t, err := w.template("writers", "writer", func(p []store.Identity) store.SeedSpec {
		return store.SeedSpec{Parties: p, Channels: 1, Seats: len(p)}
	}, writers)
	if err != nil {
		return err
	}
	run, err := w.newRun(t.path)
	if err != nil {
		return err
	}
	servers := make([]*server, writers)
	for i := range servers {
		s, err := startServe(w.chatBin, t.parties[i].Workspace, run.env)
		if err != nil {
			return err
		}
		defer s.stop()
		if err := s.handshake(); err != nil {
			return err
		}
		servers[i] = s
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lat samples
	var errs []string
	startGate := make(chan struct{})
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startGate
			for j := 0; j < perWriter; j++ {
				begin := time.Now()
				_, err := s.call("chat_say", map[string]any{"channel": "ch-00", "text": fmt.Sprintf("writer %d message %d", i, j)})
				d := time.Since(begin)
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					errs = append(errs, err.Error())
				}
				mu.Unlock()
			}
		}()
	}
	walPeak := make(chan int64)
	stopWatch := make(chan struct{})
	go func() { walPeak <- peakSize(run.db+"-wal", stopWatch) }()
	cpuBefore := serversCPU(servers)
	begin := time.Now()
	close(startGate)
	wg.Wait()
	elapsed := time.Since(begin)
	cpuUsed := serversCPU(servers) - cpuBefore
	close(stopWatch)
	peak := <-walPeak
	total := writers * perWriter
	rate := float64(total-len(errs)) / elapsed.Seconds()
	stored, err := countMessages(run.db)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		progress("write errors: %d, first: %s", len(errs), errs[0])
	}
	p99 := lat.pct(99)
	r.add(figure{what: "8 `serve` processes writing `chat_say` into one channel", setup: fmt.Sprintf("8 × %d calls", perWriter),
		lat: lat, value: fmt.Sprintf("p99 %s, %.0f msg/s total, %d errors, %d rows stored, -wal peak %.1f MB, serve CPU %.2f ms/msg", ms(p99), rate, len(errs), stored, float64(peak)/(1<<20),
			float64(cpuUsed)/float64(time.Millisecond)/float64(total)),
		goal: "0 errors, p99 ≤ 50 ms", met: yesNo(p99 <= 50*time.Millisecond && len(errs) == 0 && stored == total),
		command: "go run ./tests/bench -only write"})
	return benchStoreWriters(w, t, writers, perWriter, r)
}

// benchStoreWriters is the same load without MCP: 8 processes calling the
// store's Say directly, to show what the storage alone sustains.
func benchStoreWriters(w *world, t seeded, writers, perWriter int, r *report) error {
	run, err := w.newRun(t.path)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmds := make([]*exec.Cmd, writers)
	gos := make([]io.WriteCloser, writers)
	outs := make([]*bytes.Buffer, writers)
	for i := range cmds {
		p := t.parties[i]
		cmds[i] = exec.Command(self, "-store-writer", strings.Join([]string{run.db, p.Name, p.Workspace, strconv.Itoa(perWriter)}, "|"))
		outs[i] = &bytes.Buffer{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], os.Stderr
		if gos[i], err = cmds[i].StdinPipe(); err != nil {
			return err
		}
		if err := cmds[i].Start(); err != nil {
			return err
		}
	}
	time.Sleep(500 * time.Millisecond) // every writer has opened the database
	begin := time.Now()
	for _, g := range gos {
		g.Close() // the start signal
	}
	errs := 0
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			return fmt.Errorf("store writer %d: %v", i, err)
		}
		var n int
		fmt.Sscan(outs[i].String(), &n)
		errs += n
	}
	rate := float64(writers*perWriter-errs) / time.Since(begin).Seconds()
	r.add(figure{what: "the same through the store directly (8 processes, no MCP)", setup: fmt.Sprintf("8 × %d `Say`", perWriter),
		value: fmt.Sprintf("%.0f msg/s total, %d errors", rate, errs), command: "go run ./tests/bench -only write"})
	return nil
}

// storeWriter is one process of benchStoreWriters: it opens the database,
// waits for stdin to close, posts its says and prints its error count.
func storeWriter(spec string) error {
	f := strings.Split(spec, "|")
	if len(f) != 4 {
		return fmt.Errorf("-store-writer wants DB|PARTY|WORKSPACE|N, got %q", spec)
	}
	n, err := strconv.Atoi(f[3])
	if err != nil {
		return err
	}
	ctx := context.Background()
	db, err := store.Open(ctx, f[0])
	if err != nil {
		return err
	}
	defer db.Close()
	me := store.Identity{Name: f[1], Workspace: f[2]}
	io.Copy(io.Discard, os.Stdin)
	errs := 0
	for j := 0; j < n; j++ {
		if _, err := db.Say(ctx, me, store.SayArgs{Channel: "ch-00", Text: fmt.Sprintf("%s message %d", f[1], j)}); err != nil {
			errs++
		}
	}
	fmt.Println(errs)
	return nil
}

func serversCPU(servers []*server) time.Duration {
	var sum time.Duration
	for _, s := range servers {
		d, _ := s.cpu()
		sum += d
	}
	return sum
}

// peakSize samples a file's size until stop closes and returns the largest.
func peakSize(path string, stop <-chan struct{}) int64 {
	var peak int64
	for {
		if info, err := os.Stat(path); err == nil {
			peak = max(peak, info.Size())
		}
		select {
		case <-stop:
			return peak
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func countMessages(db string) (int, error) {
	out, err := exec.Command("sqlite3", db, "SELECT count(*) FROM messages").Output()
	if err != nil {
		return -1, nil // no sqlite3 shell: the count is not shown
	}
	var n int
	_, err = fmt.Sscan(string(out), &n)
	return n, err
}

// benchRSS reads serve's resident memory after the handshake and after
// 10,000 calls of the everyday tools.
func benchRSS(w *world, o options, r *report) error {
	t, err := w.history("100k", 100000)
	if err != nil {
		return err
	}
	s, _, err := w.served(t, 0)
	if err != nil {
		return err
	}
	defer s.stop()
	if _, err := s.request("tools/list", map[string]any{}); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond)
	idle, err := s.rss()
	if err != nil {
		return err
	}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"chat_whoami", map[string]any{}},
		{"chat_inbox", map[string]any{}},
		{"chat_read", map[string]any{"channel": "ch-00", "peek": true}},
		{"chat_channel_list", map[string]any{}},
		{"chat_say", map[string]any{"channel": "ch-00", "text": "memory benchmark"}},
	}
	for i := 0; i < 10000; i++ {
		c := calls[i%len(calls)]
		if _, err := s.call(c.tool, c.args); err != nil {
			return err
		}
	}
	after, err := s.rss()
	if err != nil {
		return err
	}
	r.add(figure{what: "`serve` resident memory (VmRSS), idle after the handshake", setup: "100k history",
		value: fmt.Sprintf("%.1f MB", float64(idle)/1024), goal: "< 30 MB", met: yesNo(idle < 30*1024),
		command: "go run ./tests/bench -only rss"})
	r.add(figure{what: "`serve` resident memory (VmRSS) after 10,000 calls", setup: "100k history, whoami/inbox/read/channel_list/say",
		value: fmt.Sprintf("%.1f MB", float64(after)/1024), command: "go run ./tests/bench -only rss"})
	return nil
}

// hookUnread are the unread counts the hook is timed with.
var hookUnread = []int{10000, 100000}

func (w *world) unread(n int) (seeded, error) {
	return w.template(fmt.Sprintf("unread-%dk", n/1000), "party", func(p []store.Identity) store.SeedSpec {
		spec := store.BenchSpec(p, 1000)
		spec.Unread = n
		return spec
	}, 10)
}
