// Package web is the chat's live page for the person who runs it
// (mcpp-chat ui): channels with each party's unread count, a channel's
// threads with their items' states, archived threads, search and
// presence. It only reads, through the store's read-only handle, and
// pushes "something changed" to open pages with Server-Sent Events, woken
// by the same watcher as chat_wait. Pages, style and script are embedded:
// no build step, nothing fetched from elsewhere, and every text from the
// database is escaped by html/template.
package web

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

//go:embed assets
var assets embed.FS

// Server serves the page for one database.
type Server struct {
	db *store.ReadOnly
	// dbPath is shown in the header, so that the person knows which chat
	// this is.
	dbPath string
	hub    *hub
	page   *template.Template
	// hosts are the Host headers answered (hostsFor).
	hosts hostRule
	// now is the clock presence is measured against.
	now func() time.Time
	// log receives the failures the page does not show.
	log *slog.Logger
}

// Changes says when the database may have changed: Next is a channel
// closed at the next change (wake.Watcher).
type Changes interface{ Next() <-chan struct{} }

// Options configure a Server.
type Options struct {
	// Changes is the watcher chat_wait sleeps on; open pages are told of
	// each change. nil: the pages are never told.
	Changes Changes
	// Listen is the address served: the Host headers a browser sends for
	// it (and for localhost, when it is a loopback address) are answered,
	// and those of Hosts. A page whose name only resolves to this machine
	// (DNS rebinding) gets nothing.
	Listen string
	// Hosts are more names the page answers to (--allow-host): NAME
	// with the listen port or none, NAME:PORT as given.
	Hosts []string
	// Log receives, in full, the failures a page shows only as "could not
	// read"; nil means slog's default logger (stderr).
	Log *slog.Logger
	// Home is the person's home folder: a database under it is shown as
	// ~/…, shorter, and as the person would type it.
	Home string
}

// New makes the server; Run must run for pages to hear of changes.
func New(db *store.ReadOnly, o Options) (*Server, error) {
	page, err := template.New("page.html").Funcs(funcs).ParseFS(assets, "assets/page.html")
	if err != nil {
		return nil, err
	}
	s := &Server{db: db, dbPath: underHome(db.Path(), o.Home), hub: newHub(o.Changes, db.CommitMark), page: page, now: time.Now,
		hosts: hostsFor(o.Listen, o.Hosts), log: o.Log}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

// underHome writes path as ~/… when it lies in home.
func underHome(path, home string) string {
	home = strings.TrimRight(home, "/")
	if home == "" || !strings.HasPrefix(path, home+"/") {
		return path
	}
	return "~" + path[len(home):]
}

// Run tells open pages of every change until ctx ends.
func (s *Server) Run(ctx context.Context) error { return s.hub.run(ctx) }

// Handler routes the page's requests.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("GET /c/{channel}", s.channel)
	mux.HandleFunc("GET /search", s.search)
	mux.HandleFunc("GET /events", s.events)
	return s.guard(mux)
}

// guard answers only GETs for our own host names (a page elsewhere that
// resolves its name to 127.0.0.1 must not read the chat), and tells the
// browser to run nothing but our own script.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.allows(r.Host) {
			http.Error(w, "this page answers to http://"+s.hosts.first+"/ and the names given with --allow-host only — open it there, or start ui with --allow-host NAME for the name you used", http.StatusMisdirectedRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// hostRule is which Host headers the page answers.
type hostRule struct {
	names map[string]bool // host:port, lowercase
	port  string
	// anyIP answers every IP address with the port: a server on all
	// addresses is reached by any of this machine's, and a rebinding
	// page always has a name.
	anyIP bool
	first string // the one the refusal points to
}

// hostsFor is the rule for a server listening on listen, with the extra
// names given.
func hostsFor(listen string, extra []string) hostRule {
	host, port, err := net.SplitHostPort(strings.ToLower(listen))
	if err != nil {
		return hostRule{names: map[string]bool{}, first: "127.0.0.1"}
	}
	h := hostRule{names: map[string]bool{}, port: port, first: net.JoinHostPort(host, port)}
	ip, _ := netip.ParseAddr(host)
	switch {
	case host == "" || ip.IsUnspecified():
		h.anyIP = true
		h.first = net.JoinHostPort("127.0.0.1", port)
		h.addLoopback()
	case host == "localhost" || ip.IsLoopback():
		h.addLoopback()
	}
	h.names[net.JoinHostPort(host, port)] = true
	for _, name := range extra {
		name = strings.ToLower(strings.TrimSpace(name))
		if _, _, err := net.SplitHostPort(name); err == nil {
			h.names[name] = true
			continue
		}
		h.names[net.JoinHostPort(strings.Trim(name, "[]"), port)] = true
		h.names[name] = true // behind a proxy on the scheme's own port
	}
	return h
}

func (h *hostRule) addLoopback() {
	for _, name := range []string{"127.0.0.1", "localhost", "::1"} {
		h.names[net.JoinHostPort(name, h.port)] = true
	}
}

// allows reports whether the page answers a request for host.
func (h hostRule) allows(host string) bool {
	host = strings.ToLower(host)
	if _, _, err := net.SplitHostPort(host); err != nil && h.port == "80" {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "80") // the scheme's own port is left out
	}
	if h.names[host] {
		return true
	}
	name, port, err := net.SplitHostPort(host)
	if err != nil || !h.anyIP || port != h.port {
		return false
	}
	_, err = netip.ParseAddr(name)
	return err == nil
}

// headerTimeout bounds the reading of a request's headers; idleTimeout
// is how long a kept-alive connection may wait for its next request (a
// browser opens another when it needs one). An event stream is a request
// under way, never idle. idleTimeout is a variable for the tests.
const headerTimeout = 10 * time.Second

var idleTimeout = time.Minute

// Serve serves h on ln until ctx ends, then stops: open event streams end
// with ctx, other requests get a moment to finish. A connection that
// sends nothing, or nothing more, is closed after a while: a client on
// this machine cannot hold the server's files by leaving connections
// open.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	// A browser opens connections ahead of its requests; Shutdown waits
	// for one that sent nothing yet as for a request (its whole grace).
	// Once the listener is closed no request comes on them: close them.
	var unused conns
	srv.ConnState = unused.track
	srv.RegisterOnShutdown(unused.close)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	srv.Shutdown(stop)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// conns are the connections that have not sent a request yet.
type conns struct {
	mu  sync.Mutex
	set map[net.Conn]struct{}
}

func (c *conns) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state != http.StateNew {
		delete(c.set, conn)
		return
	}
	if c.set == nil {
		c.set = map[net.Conn]struct{}{}
	}
	c.set[conn] = struct{}{}
}

func (c *conns) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn := range c.set {
		conn.Close()
	}
}
