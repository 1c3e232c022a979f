package hub

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcpp/mcpp-chat/tools"
)

// Serve serves the hub on ln until ctx ends, with TLS when tlsConf is
// set, within s.Limits: connections bounded in number (in all and per
// client address), every request's headers, body and answer bounded in
// time, idle connections closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsConf *tls.Config) error {
	srv, conns := s.httpServer(ctx, ln)
	srv.TLSConfig = tlsConf
	go func() {
		<-ctx.Done()
		// Waits answer at once when ctx ends; calls in flight get a moment.
		shut, cancel := context.WithTimeout(context.Background(), cmp.Or(s.StopGrace, time.Second))
		defer cancel()
		srv.Shutdown(shut)
	}()
	var err error
	if tlsConf != nil {
		err = srv.ServeTLS(conns, "", "")
	} else {
		err = srv.Serve(conns)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// httpServer is the hub's HTTP server within its limits, and ln bounded
// by them: the server is to serve that listener.
func (s *Server) httpServer(ctx context.Context, ln net.Listener) (*http.Server, net.Listener) {
	lim := s.Limits.orDefaults()
	conns := limitConns(ln, lim, s.log())
	// No ReadTimeout or WriteTimeout: they would end every wait. Each
	// request gets its own deadlines instead (deadlines).
	return &http.Server{
		Handler:           s.Handler(ctx),
		ReadHeaderTimeout: lim.ReadHeader,
		IdleTimeout:       lim.Idle,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ConnState:         conns.track,
		ConnContext:       withConn,
		// A connection's streams are requests the connection bounds do
		// not see: a few suffice for a member.
		HTTP2:    &http.HTTP2Config{MaxConcurrentStreams: 32},
		ErrorLog: slog.NewLogLogger(s.log().Handler(), slog.LevelWarn),
	}, conns
}

// deadlines gives each request its own: its body must arrive within
// ReadBody, and its answer be written within Write after the longest the
// request may wait. A connection that misses one is closed, so a client
// that sends a body slowly, or reads an answer slowly, holds nothing
// long.
func (s *Server) deadlines(next http.Handler) http.Handler {
	lim := s.Limits.orDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.SetWriteDeadline(time.Now().Add(s.mayWait(r) + lim.Write))
		conn := connOf(r.Context())
		// A request without a body is left alone: the server reads on
		// behind it to see the client leave, and a read deadline there
		// would end the request.
		if r.ContentLength == 0 {
			if conn != nil {
				conn.begin(false)
				defer conn.end(false, false)
			}
			next.ServeHTTP(w, r)
			return
		}
		rc.SetReadDeadline(time.Now().Add(lim.ReadBody))
		body := &incoming{ReadCloser: r.Body, w: w, conn: conn, http1: r.ProtoMajor == 1}
		body.begin()
		defer body.answered()
		r.Body = body
		next.ServeHTTP(w, r)
	})
}

// lingerUnread is how long a connection answered before its body arrived
// reads on, at most, before it closes: closed with the body's bytes in
// flight, it would be reset, and a client still sending would lose the
// answer (net/http waits as long before closing the same way).
const lingerUnread = 500 * time.Millisecond

// incoming is a request's body on its way in. Until all of it has
// arrived, its connection counts as stalled (the limiter may close it to
// make room), and an answer given meanwhile — a refusal, mostly — ends
// the connection rather than leave net/http to read on for up to 256 KiB
// of a body that may never come, until its deadline, holding the
// connection busy.
type incoming struct {
	io.ReadCloser
	w     http.ResponseWriter
	conn  *limitedConn // nil when not served through the limiter
	http1 bool
	in    atomic.Bool // the whole body has arrived
}

func (b *incoming) begin() {
	if b.conn != nil {
		b.conn.begin(true)
	}
	if b.http1 {
		// Taken off once the body is in (arrive). HTTP/2 ends a stream
		// answered early by itself, and Connection there would close
		// every stream of the connection.
		b.w.Header().Set("Connection", "close")
	}
}

func (b *incoming) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && b.in.CompareAndSwap(false, true) {
		b.arrive()
	}
	return n, err
}

// arrive is the whole body in: the connection is busy with the request,
// may be kept alive after it, and the read deadline is lifted so that the
// server reads on to see the client leave, for as long as the call takes.
func (b *incoming) arrive() {
	if b.conn != nil {
		b.conn.arrived()
	}
	if b.http1 {
		b.w.Header().Del("Connection")
	}
	http.NewResponseController(b.w).SetReadDeadline(time.Time{})
}

// answered is the handler done: if the body never arrived, the
// connection reads what is in flight for lingerUnread at most, then
// closes.
func (b *incoming) answered() {
	missing := !b.in.Load()
	if missing && b.http1 {
		http.NewResponseController(b.w).SetReadDeadline(time.Now().Add(lingerUnread))
	}
	if b.conn != nil {
		b.conn.end(missing, b.http1)
	}
}

// mayWait is how long a request may wait before it answers: a long-poll
// its timeout, a call to chat_wait its seconds (the SDK streams progress
// meanwhile).
func (s *Server) mayWait(r *http.Request) time.Duration {
	switch r.URL.Path {
	case "/v1/wait":
		return s.maxWait()
	case "/mcp":
		return time.Duration(tools.WaitCeiling(s.Config, s.Env)) * time.Second
	}
	return 0
}
