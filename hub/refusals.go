package hub

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// refusalLog logs refused requests as a rate, so that a client without a
// token cannot fill the disk with them: an address's first refusal in
// full, then at most a line per address per interval saying how many
// more it had. It keeps counts for maxRefusalAddrs addresses at most;
// the others' refusals share one count, logged in the same way.
type refusalLog struct {
	log   *slog.Logger
	every time.Duration
	max   int

	mu     sync.Mutex
	byAddr map[string]*refusals
	others refusals // of addresses beyond max
}

// refusals are one address's refusals since its last line.
type refusals struct {
	count int
	noted time.Time // when its last line was logged, or its count began
	last  refusal   // the newest, told in the line
}

type refusal struct {
	status                int
	path, tokenID, reason string
}

// refusalEvery is the shortest time between two lines about one address;
// maxRefusalAddrs bounds the addresses counted apart.
const (
	refusalEvery    = time.Minute
	maxRefusalAddrs = 1024
)

func newRefusalLog(log *slog.Logger) *refusalLog {
	return &refusalLog{log: log, every: refusalEvery, max: maxRefusalAddrs, byAddr: map[string]*refusals{}}
}

// note counts a refusal of a request from remote (host:port), logging it
// in full when it is the first from its address.
func (l *refusalLog) note(remote string, r refusal) {
	addr := clientAddr(remote)
	now := time.Now()
	first := false
	l.mu.Lock()
	switch e, ok := l.byAddr[addr]; {
	case ok:
		e.count++
		e.last = r
	case len(l.byAddr) >= l.max:
		if l.others.count == 0 && now.Sub(l.others.noted) >= l.every {
			l.others.noted = now // the count starts now
		}
		l.others.count++
		l.others.last = r
	default:
		l.byAddr[addr] = &refusals{noted: now}
		first = true
	}
	l.mu.Unlock()
	if first {
		l.log.Warn("refused a request", "status", r.status, "path", r.path, "remote", remote, "token_id", r.tokenID, "reason", r.reason)
	}
}

// run logs the counts every interval until ctx ends.
func (l *refusalLog) run(ctx context.Context) {
	tick := time.NewTicker(l.every)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			l.flush(now)
		case <-ctx.Done():
			return
		}
	}
}

// flush logs how many refusals each address had since its last line, if
// that line is an interval old, and forgets the addresses that had none.
func (l *refusalLog) flush(now time.Time) {
	type line struct {
		addr string
		refusals
	}
	var lines []line
	l.mu.Lock()
	for addr, e := range l.byAddr {
		switch {
		case now.Sub(e.noted) < l.every:
		case e.count == 0:
			delete(l.byAddr, addr)
		default:
			lines = append(lines, line{addr, *e})
			e.count, e.noted = 0, now
		}
	}
	if l.others.count > 0 && now.Sub(l.others.noted) >= l.every {
		lines = append(lines, line{"", l.others})
		l.others.count, l.others.noted = 0, now
	}
	l.mu.Unlock()
	for _, ln := range lines {
		remote := ln.addr
		if remote == "" {
			remote = "other addresses"
		}
		l.log.Warn("refused requests", "remote", remote, "count", ln.count, "since", ln.noted.UTC().Format(time.RFC3339),
			"last_status", ln.last.status, "last_path", ln.last.path, "last_token_id", ln.last.tokenID, "last_reason", ln.last.reason)
	}
}

// clientAddr is the address a client's refusals are counted under: its
// IP, or its /64 for IPv6, where one client holds many addresses.
func clientAddr(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
