package hub

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
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
		// A request without a body is left alone: the server reads on
		// behind it to see the client leave, and a read deadline there
		// would end the request.
		if r.ContentLength != 0 {
			rc.SetReadDeadline(time.Now().Add(lim.ReadBody))
		}
		rc.SetWriteDeadline(time.Now().Add(s.mayWait(r) + lim.Write))
		next.ServeHTTP(w, r)
	})
}

// bodyRead lifts the body's deadline once the whole body is in: the
// server then reads on to see the client leave, for as long as the call
// takes.
func bodyRead(w http.ResponseWriter) {
	http.NewResponseController(w).SetReadDeadline(time.Time{})
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
