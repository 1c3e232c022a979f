package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"
)

var (
	gw   = store.Identity{Name: "mesh-gw", Workspace: "/srv/mesh-gw"}
	dash = store.Identity{Name: "node-dash", Workspace: "/srv/node-dash"}
)

// chat is a database with gw--dash: a say carrying markup and an escape,
// and an item dash has acked and gw still has to resolve.
func chat(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	fill(t, db)
	return db
}

// fill writes chat's conversation into db.
func fill(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	steps := []func() error{
		func() error { _, err := db.Register(ctx, dash); return err },
		func() error {
			_, err := db.ChannelNew(ctx, gw, "gw--dash", "gateway <-> dashboard", []string{"node-dash"})
			return err
		},
		func() error {
			_, err := db.Say(ctx, gw, store.SayArgs{Channel: "gw--dash", Text: `<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>` + "\x1b[31mred"})
			return err
		},
		func() error {
			_, err := db.Ask(ctx, gw, store.AskArgs{Channel: "gw--dash", Slug: "chunk-api", Title: "Is the chunk header enum closed?", Body: "I need FRAME_AUX."})
			return err
		},
		func() error { _, err := db.Ack(ctx, dash, "chunk-api", "", ""); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
}

// serve starts the page's handler on db read-only, as mcpp-chat ui does.
func serve(t *testing.T, db string, changes Changes) (*httptest.Server, *Server) {
	t.Helper()
	r, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return serveWith(t, r, Options{Changes: changes})
}

// serveWith starts the page's handler on r with o, on a loopback port.
func serveWith(t *testing.T, r *store.ReadOnly, o Options) (*httptest.Server, *Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ts := httptest.NewUnstartedServer(nil)
	o.Listen = ts.Listener.Addr().String()
	s, err := New(r, o)
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = s.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	go s.Run(ctx)
	return ts, s
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

// Everything a message says reaches the page as text: its markup escaped,
// its terminal escapes removed.
func TestPageShowsMessagesAsText(t *testing.T) {
	t.Parallel()
	db := chat(t)
	ts, _ := serve(t, db.Path(), nil)
	code, page := get(t, ts.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d\n%s", code, page)
	}
	for _, want := range []string{
		`&lt;img src=x onerror=&#34;window.pwned=1&#34;&gt;&lt;script&gt;window.pwned=1&lt;/script&gt;red`,
		`<span class="state ack">ACK · resolve owed by mesh-gw</span>`,
		`gateway &lt;-&gt; dashboard`,
		`<li class="seat unread"><span class="party">node-dash</span> <span class="n">2</span> unread</li>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>window") || strings.Contains(page, "<img") || strings.Contains(page, "\x1b") {
		t.Errorf("message markup or an escape reached the page raw:\n%s", page)
	}
}

// A page elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) gets
// nothing: only our own host names are answered.
func TestPageAnswersOnlyItsOwnHostNames(t *testing.T) {
	t.Parallel()
	db := chat(t)
	ts, _ := serve(t, db.Path(), nil)
	req, _ := http.NewRequest("GET", ts.URL+"/c/gw--dash", nil)
	req.Host = "evil.example:80"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest || strings.Contains(string(body), "chunk") {
		t.Fatalf("Host evil.example: %d\n%s", res.StatusCode, body)
	}
	res, err = http.Get(ts.URL + "/c/gw--dash")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy = %q, want scripts from the page's own origin only", csp)
	}
}

// The page works offline: nothing it loads comes from elsewhere.
func TestPageLoadsNothingFromElsewhere(t *testing.T) {
	t.Parallel()
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(`)
	err := fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := assets.ReadFile(path)
		if err != nil {
			return err
		}
		if m := external.Find(data); m != nil {
			t.Errorf("%s refers elsewhere: %s", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An open page hears "change" from the event stream after each wake-up.
func TestEventsSayWhenSomethingChanged(t *testing.T) {
	t.Parallel()
	db := chat(t)
	changes := &testChanges{ch: make(chan struct{})}
	ts, _ := serve(t, db.Path(), changes)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	lines := bufio.NewScanner(res.Body)
	next := func(want string) {
		t.Helper()
		for lines.Scan() {
			if lines.Text() == want {
				return
			}
		}
		t.Fatalf("the stream ended before %q: %v", want, lines.Err())
	}
	next("event: ready")
	if _, err := db.Say(ctx, gw, store.SayArgs{Channel: "gw--dash", Text: "news"}); err != nil {
		t.Fatal(err)
	}
	changes.change()
	next("event: change")
}

// One commit is one "change" for the page, though the database's watcher
// wakes many times for it (the -wal's writes, its looks again while the
// commit becomes visible); a wake-up without a commit tells nothing.
func TestEventsSayEachCommitOnce(t *testing.T) {
	t.Parallel()
	db := chat(t)
	w, err := wake.Watch(db.Path(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	ts, _ := serve(t, db.Path(), w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events := make(chan string, 100)
	go func() {
		lines := bufio.NewScanner(res.Body)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "event: ") {
				events <- strings.TrimPrefix(lines.Text(), "event: ")
			}
		}
		close(events)
	}()
	if got := <-events; got != "ready" {
		t.Fatalf("first event %q, want ready", got)
	}
	for i := range 2 {
		if _, err := db.Say(ctx, gw, store.SayArgs{Channel: "gw--dash", Text: fmt.Sprintf("news %d", i)}); err != nil {
			t.Fatal(err)
		}
		if got := <-events; got != "change" {
			t.Fatalf("after a say: %q, want change", got)
		}
		// The watcher looks again for half a second after a -wal write
		// (and polls every second): any second "change" comes by then.
		select {
		case got := <-events:
			t.Fatalf("one say told the page twice (%q)", got)
		case <-time.After(wake.PollEvery + 500*time.Millisecond):
		}
	}
}

// A wrong channel name is the person's to fix: a sentence, not a crash.
func TestUnknownChannelIsASentence(t *testing.T) {
	t.Parallel()
	db := chat(t)
	ts, _ := serve(t, db.Path(), nil)
	code, page := get(t, ts.URL+"/c/nope")
	if code != http.StatusBadRequest || !strings.Contains(page, `class="problem"`) {
		t.Fatalf("GET /c/nope = %d\n%s", code, page)
	}
}

// A search past the bound of what it looks for gets the store's sentence,
// as an agent's does.
func TestSearchBoundIsASentence(t *testing.T) {
	t.Parallel()
	db := chat(t)
	ts, _ := serve(t, db.Path(), nil)
	words := make([]string, 65)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	code, page := get(t, ts.URL+"/search?q="+url.QueryEscape(strings.Join(words, " ")))
	if code != http.StatusBadRequest || !strings.Contains(page, "has 65 words, and at most 64 are looked for at once") {
		t.Fatalf("GET /search with 65 words = %d\n%s", code, page)
	}
}

// Earlier rows are a link away; the link carries the archived flag and
// the seq to go on from.
func TestEarlierLink(t *testing.T) {
	t.Parallel()
	if got := channelURL("gw dash", true, 42); got != "/c/gw%20dash?archived=1&before=42" {
		t.Errorf("channelURL = %q", got)
	}
	if got := channelURL("gw--dash", false, 0); got != "/c/gw--dash" {
		t.Errorf("channelURL = %q", got)
	}
}

// testChanges is a watcher whose changes the test makes.
type testChanges struct {
	mu sync.Mutex
	ch chan struct{}
}

func (c *testChanges) Next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ch
}

func (c *testChanges) change() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.ch)
	c.ch = make(chan struct{})
}

// The Host headers answered follow the listen address: its own, and
// localhost's names on loopback, any IP of this machine on all addresses,
// and the names given with --allow-host; never another name.
func TestHostsAnswered(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		listen string
		extra  []string
		yes    []string
		no     []string
	}{
		{"127.0.0.1:7431", nil,
			[]string{"127.0.0.1:7431", "localhost:7431", "LOCALHOST:7431", "[::1]:7431"},
			[]string{"evil.example:7431", "evil.example", "127.0.0.1:80", "10.0.0.5:7431", ""}},
		{"0.0.0.0:7431", nil,
			[]string{"192.168.1.5:7431", "[fe80::1]:7431", "127.0.0.1:7431", "localhost:7431"},
			[]string{"evil.example:7431", "192.168.1.5:8080", "myhost:7431", "192.168.1.5"}},
		{"0.0.0.0:7431", []string{"myhost", "chat.example:443"},
			[]string{"myhost:7431", "myhost", "MyHost:7431", "chat.example:443"},
			[]string{"chat.example:7431", "evil.example:7431", "myhost:8080"}},
		{"192.168.1.5:7431", nil,
			[]string{"192.168.1.5:7431"},
			[]string{"192.168.1.6:7431", "localhost:7431", "127.0.0.1:7431"}},
		{"0.0.0.0:80", nil,
			[]string{"192.168.1.5", "192.168.1.5:80", "localhost"},
			[]string{"evil.example", "evil.example:80"}},
		{"[::]:7431", nil,
			[]string{"[2001:db8::1]:7431", "[::1]:7431"},
			[]string{"evil.example:7431"}},
	} {
		rule := hostsFor(c.listen, c.extra)
		for _, host := range c.yes {
			if !rule.allows(host) {
				t.Errorf("listening on %s (%v): Host %q refused", c.listen, c.extra, host)
			}
		}
		for _, host := range c.no {
			if rule.allows(host) {
				t.Errorf("listening on %s (%v): Host %q answered", c.listen, c.extra, host)
			}
		}
	}
}

// The page says under each message who has not read it yet, and who has;
// once everyone has read the newest one, it says so there.
func TestPageShowsReadReceipts(t *testing.T) {
	t.Parallel()
	db := chat(t)
	ts, _ := serve(t, db.Path(), nil)
	_, page := get(t, ts.URL+"/c/gw--dash")
	// dash acked chunk-api without reading: the say and the ask wait on
	// it, the ask with the ack's time.
	if n := strings.Count(page, `<div class="receipt">not yet read by node-dash</div>`); n != 1 {
		t.Errorf("%d messages say they are not yet read by node-dash, want 1:\n%s", n, page)
	}
	if n := strings.Count(page, `<div class="receipt">not yet read by node-dash (acked `); n != 1 {
		t.Errorf("%d messages say they are not yet read by node-dash and acked, want 1:\n%s", n, page)
	}
	// Told by node-dash's wake (mesh-gw's say, #1), a message says so
	// until it is read.
	if _, err := db.RecordTold(context.Background(), dash, []store.Telling{{Channel: "gw--dash", Seq: 1, At: "2026-12-02T10:02:31.000000+00:00", Via: "wake"}}); err != nil {
		t.Fatal(err)
	}
	_, page = get(t, ts.URL+"/c/gw--dash")
	if !strings.Contains(page, `<div class="receipt">not yet read by node-dash (told 2026-12-02 10:02 UTC by wake)</div>`) {
		t.Errorf("the page does not say node-dash was told:\n%s", page)
	}
	if _, err := db.Read(context.Background(), dash, store.ReadArgs{Channel: "gw--dash", Limit: 50}); err != nil {
		t.Fatal(err)
	}
	_, page = get(t, ts.URL+"/c/gw--dash")
	if strings.Contains(page, "not yet read") || strings.Count(page, `<div class="receipt">seen by node-dash (read `) != 1 {
		t.Errorf("once node-dash read everything, the newest message alone says seen by node-dash:\n%s", page)
	}
}

// A database in the person's home folder is named in the header as ~/…,
// as they would type it.
func TestHeaderNamesTheDatabaseFromHome(t *testing.T) {
	t.Parallel()
	db := chat(t)
	r, err := store.OpenReadOnly(context.Background(), db.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	home, file := filepath.Dir(filepath.Dir(db.Path())), filepath.Base(filepath.Dir(db.Path()))+"/chat.db"
	ts, _ := serveWith(t, r, Options{Home: home + "/"})
	if _, page := get(t, ts.URL+"/"); !strings.Contains(page, ">~/"+file+"<") {
		t.Errorf("the header does not name ~/%s:\n%s", file, page)
	}
	for path, want := range map[string]string{"/home/ada/chat.db": "~/chat.db", "/home/adam/chat.db": "/home/adam/chat.db", "/srv/chat.db": "/srv/chat.db"} {
		if got := underHome(path, "/home/ada"); got != want {
			t.Errorf("underHome(%q) = %q, want %q", path, got, want)
		}
	}
}

// Serve stops at once when asked, even with a connection that has sent
// nothing yet (a browser opens those ahead of its requests): it is closed,
// not waited for until the grace runs out and then left open.
func TestServeClosesConnectionsThatSentNothing(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, http.NotFoundHandler()) }()
	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The server has the connection once a request on another one is answered.
	if res, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		res.Body.Close()
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	// Closed by then; unfixed, the server would close it only at its
	// ReadHeaderTimeout (10 s).
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the connection that sent nothing is still open after Serve returned (%v)", err)
	}
}

// On a long channel the page scrolls, and the header (the search box in
// it) and the channel list stay where they are: both are sticky, the
// list below the header and scrolling on its own.
func TestHeaderAndChannelListStayInView(t *testing.T) {
	t.Parallel()
	css, err := assets.ReadFile("assets/app.css")
	if err != nil {
		t.Fatal(err)
	}
	rule := func(selector string) string {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(selector) + ` \{([^}]*)\}`).FindSubmatch(css)
		if m == nil {
			t.Fatalf("no %s rule in app.css", selector)
		}
		return string(m[1])
	}
	for selector, want := range map[string][]string{
		"header": {"position: sticky", "top: 0"},
		"nav":    {"position: sticky", "top: var(--head)", "height: calc(100vh - var(--head))", "overflow: auto"},
	} {
		for _, w := range want {
			if !strings.Contains(rule(selector), w) {
				t.Errorf("%s { %s } lacks %q", selector, rule(selector), w)
			}
		}
	}
	page, _ := assets.ReadFile("assets/page.html")
	if !regexp.MustCompile(`(?s)<header>.*<form action="/search".*</header>\s*<div class="frame">\s*<nav`).Match(page) {
		t.Error("the search box is not in the header, or the channel list not first in the frame")
	}
}

// A kept-alive connection that sends no next request is closed after
// idleTimeout: a client on this machine cannot hold the server's files by
// leaving connections open.
func TestServeClosesIdleConnections(t *testing.T) {
	t.Parallel()
	defer func(was time.Duration) { idleTimeout = was }(idleTimeout)
	idleTimeout = 100 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, http.NotFoundHandler()) }()
	defer func() { cancel(); <-served }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", ln.Addr())
	r := bufio.NewReader(conn)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.Close {
		t.Fatal("the server closed the connection after its answer: nothing is left to be idle")
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the idle connection is still open after 10 s (%v)", err)
	}
}

// A message addressed to someone says to whom, beside its author.
func TestPageShowsWhomAMessageIsFor(t *testing.T) {
	db := chat(t)
	if _, err := db.Say(context.Background(), gw, store.SayArgs{Channel: "gw--dash", Text: "@node-dash have a look"}); err != nil {
		t.Fatal(err)
	}
	ts, _ := serve(t, db.Path(), nil)
	_, page := get(t, ts.URL+"/c/gw--dash")
	if n := strings.Count(page, `<span class="to">→ node-dash</span>`); n != 1 {
		t.Errorf("%d messages say they are for node-dash, want 1:\n%s", n, page)
	}
}
