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
	"strings"
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
	// hosts are the Host headers answered; nil answers any (--allow-remote).
	hosts map[string]bool
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
	// Listen is the address served; the Host headers its loopback names
	// give are the only ones answered, unless Remote.
	Listen string
	Remote bool
	// Log receives, in full, the failures a page shows only as "could not
	// read"; nil means slog's default logger (stderr).
	Log *slog.Logger
}

// New makes the server; Run must run for pages to hear of changes.
func New(db *store.ReadOnly, o Options) (*Server, error) {
	page, err := template.New("page.html").Funcs(funcs).ParseFS(assets, "assets/page.html")
	if err != nil {
		return nil, err
	}
	s := &Server{db: db, dbPath: db.Path(), hub: newHub(o.Changes), page: page, now: time.Now, log: o.Log}
	if s.log == nil {
		s.log = slog.Default()
	}
	if !o.Remote {
		s.hosts = loopbackHosts(o.Listen)
	}
	return s, nil
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
		if s.hosts != nil && !s.hosts[strings.ToLower(r.Host)] {
			http.Error(w, "this page answers to its loopback address only — open it as http://"+firstHost(s.hosts)+"/", http.StatusMisdirectedRequest)
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

// loopbackHosts are the Host headers a browser sends for a loopback
// listen address: the address itself and localhost's names, with its port.
func loopbackHosts(listen string) map[string]bool {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return map[string]bool{}
	}
	out := map[string]bool{}
	for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
		out[h+":"+port] = true
	}
	out[strings.ToLower(listen)] = true
	return out
}

func firstHost(hosts map[string]bool) string {
	for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
		for k := range hosts {
			if strings.HasPrefix(k, h+":") {
				return k
			}
		}
	}
	return "127.0.0.1"
}

// Serve serves h on ln until ctx ends, then stops: open event streams end
// with ctx, other requests get a moment to finish.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
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
