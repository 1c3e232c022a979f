package hub

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// connLimiter is a listener that bounds the connections it hands out, in
// all and per client address. At a bound it makes room by closing the
// connection idle longest (kept alive between requests), else the one
// that has waited longest for a request to arrive (its headers, or the
// rest of its body), so that a member's new connection is still served
// while unused or stalled ones pile up; when every connection is busy
// with a request that has arrived, the new one is refused (closed at
// once).
type connLimiter struct {
	net.Listener
	max, perAddr  int
	boundLoopback bool
	log           *slog.Logger

	mu      sync.Mutex
	open    map[*limitedConn]struct{}
	perKey  map[netip.Prefix]int
	refused int       // since the last note in the log
	noted   time.Time // when refusals were last logged
}

// limitedConn is a connection the limiter counts; http.Server tells the
// limiter its state (track), and the hub its requests (begin).
type limitedConn struct {
	net.Conn
	l     *connLimiter
	key   netip.Prefix // its client address's, or invalid when not bounded
	state http.ConnState
	since time.Time // when it was accepted, went idle, or began to wait for a body
	// requests are the requests it runs (HTTP/2: several), awaiting those
	// of them whose body has not all arrived: a connection whose every
	// request awaits its body is stalled, and may be closed to make room.
	requests, awaiting int
}

func limitConns(ln net.Listener, lim Limits, log *slog.Logger) *connLimiter {
	return &connLimiter{Listener: ln, max: lim.MaxConns, perAddr: lim.MaxConnsPerAddr, boundLoopback: lim.BoundLoopback, log: log,
		open: map[*limitedConn]struct{}{}, perKey: map[netip.Prefix]int{}}
}

// Accept hands out the next connection the bounds admit.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc, victims := l.admit(c)
		for _, v := range victims {
			v.Conn.Close() // its server goroutine sees it and ends
		}
		if lc != nil {
			return lc, nil
		}
		c.Close()
	}
}

// admit counts c in, with the connections closed to make room for it;
// nil when there is no room.
func (l *connLimiter) admit(c net.Conn) (*limitedConn, []*limitedConn) {
	lc := &limitedConn{Conn: c, l: l, key: l.keyOf(c.RemoteAddr()), state: http.StateNew, since: time.Now()}
	l.mu.Lock()
	defer l.mu.Unlock()
	var victims []*limitedConn
	if lc.key.IsValid() && l.perKey[lc.key] >= l.perAddr {
		v := l.victim(func(o *limitedConn) bool { return o.key == lc.key })
		if v == nil {
			l.refuse("from one address", l.perAddr)
			return nil, nil
		}
		victims = append(victims, v)
		l.forget(v)
	}
	if len(l.open) >= l.max {
		v := l.victim(func(*limitedConn) bool { return true })
		if v == nil {
			l.refuse("in all", l.max)
			return nil, victims
		}
		victims = append(victims, v)
		l.forget(v)
	}
	l.open[lc] = struct{}{}
	if lc.key.IsValid() {
		l.perKey[lc.key]++
	}
	return lc, victims
}

// victim is the connection of those that match that has been idle
// longest, else the one that has waited longest for a request to arrive
// (one not past its first request's headers, or stalled in a body); nil
// if every one is busy with a request that has arrived.
func (l *connLimiter) victim(match func(*limitedConn) bool) *limitedConn {
	var idle, waiting *limitedConn
	for c := range l.open {
		switch {
		case !match(c):
		case c.state == http.StateIdle:
			if idle == nil || c.since.Before(idle.since) {
				idle = c
			}
		case c.state == http.StateNew || c.stalled():
			if waiting == nil || c.since.Before(waiting.since) {
				waiting = c
			}
		}
	}
	if idle != nil {
		return idle
	}
	return waiting
}

// stalled reports whether every request c runs still awaits its body.
func (c *limitedConn) stalled() bool {
	return c.state == http.StateActive && c.awaiting > 0 && c.awaiting >= c.requests
}

// forget stops counting c; closing it is the caller's.
func (l *connLimiter) forget(c *limitedConn) {
	if _, ok := l.open[c]; !ok {
		return
	}
	delete(l.open, c)
	if c.key.IsValid() {
		if l.perKey[c.key]--; l.perKey[c.key] <= 0 {
			delete(l.perKey, c.key)
		}
	}
}

// refuse notes a refused connection in the log, at most once a minute:
// a flood must not fill the disk instead.
func (l *connLimiter) refuse(where string, bound int) {
	l.refused++
	if time.Since(l.noted) < time.Minute {
		return
	}
	l.log.Warn("refused connections: every connection is busy with a request", "bound", where, "max", bound, "refused", l.refused)
	l.refused, l.noted = 0, time.Now()
}

// track follows each connection's state, as http.Server reports it.
func (l *connLimiter) track(c net.Conn, state http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateClosed, http.StateHijacked:
		l.forget(lc)
	case http.StateIdle:
		lc.state, lc.since = state, time.Now()
		lc.requests, lc.awaiting = 0, 0
	default:
		lc.state = state
	}
}

// connKey carries a request's connection in its context.
type connKey struct{}

// withConn is http.Server's ConnContext: it gives each request the
// limiter's connection, for begin.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// connOf is the connection a request came on, or nil when it was not
// served through a limiter.
func connOf(ctx context.Context) *limitedConn {
	lc, _ := ctx.Value(connKey{}).(*limitedConn)
	return lc
}

// begin counts a request on c, awaiting its body when body is set.
func (c *limitedConn) begin(body bool) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.requests++
	if body {
		c.awaiting++
		c.since = time.Now()
	}
}

// arrived notes that a request's whole body is in.
func (c *limitedConn) arrived() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.awaiting = max(c.awaiting-1, 0)
}

// end notes that a request's handler returned. A body that never arrived
// (missing) stays awaited while the connection lingers before it closes:
// the connection is stalled until then.
func (c *limitedConn) end(missing, lingers bool) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.requests = max(c.requests-1, 0)
	if missing && !lingers {
		c.awaiting = max(c.awaiting-1, 0)
	}
}

// Close stops counting the connection as it closes.
func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.forget(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// keyOf is the address a client's connections are counted under: its
// IP, or its /64 for IPv6, where one client holds many addresses. It is
// invalid (not counted) when per-address bounds do not apply.
func (l *connLimiter) keyOf(a net.Addr) netip.Prefix {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || l.perAddr <= 0 {
		return netip.Prefix{}
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok || (ip.Unmap().IsLoopback() && !l.boundLoopback) {
		return netip.Prefix{}
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}
