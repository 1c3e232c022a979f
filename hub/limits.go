package hub

import (
	"cmp"
	"time"
)

// Limits bound what the hub gives any one client, so that no client,
// with a token or without, can take the hub's files, memory or time from
// the others. A field left zero takes its default (DefaultLimits).
type Limits struct {
	// MaxConns bounds the hub's open connections. At the bound a new
	// connection closes the one idle longest (a kept-alive connection
	// between requests, else one that has not sent a whole request yet);
	// with none of those it is refused.
	MaxConns int
	// MaxConnsPerAddr bounds the connections of one client address (an
	// IPv6 client's /64) in the same way. Loopback clients are not
	// counted unless BoundLoopback: a TLS proxy on this machine is every
	// member's address, and it bounds its own clients.
	MaxConnsPerAddr int
	BoundLoopback   bool
	// ReadHeader bounds the reading of a request's headers (and a TLS
	// handshake), ReadBody the reading of its body.
	ReadHeader time.Duration
	ReadBody   time.Duration
	// Idle is how long a kept-alive connection may wait for its next
	// request.
	Idle time.Duration
	// Write bounds the writing of an answer, after the time a wait may
	// take (/v1/wait, chat_wait): a client that stops reading frees its
	// request then.
	Write time.Duration
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
	// MaxParties bounds how many parties' MCP servers and summaries the
	// hub keeps in memory; CacheBytes bounds the summaries' size. A party
	// forgotten is read again at its next request.
	MaxParties int
	CacheBytes int
}

// DefaultLimits are the limits of a hub that sets none. A member holds a
// connection or two (its serve's long-poll and its calls), so 64 per
// address leaves room for a NAT of several; 1024 in all is a large team,
// and well under any open-file limit the hub raises itself to.
func DefaultLimits() Limits {
	return Limits{
		MaxConns:        1024,
		MaxConnsPerAddr: 64,
		ReadHeader:      10 * time.Second,
		ReadBody:        30 * time.Second,
		Idle:            2 * time.Minute, // longer than Go clients' 90 s: they close first
		Write:           30 * time.Second,
		MaxHeaderBytes:  64 << 10,
		MaxParties:      1024,
		CacheBytes:      64 << 20,
	}
}

// orDefaults is l with each zero field set to its default.
func (l Limits) orDefaults() Limits {
	d := DefaultLimits()
	return Limits{
		MaxConns:        cmp.Or(l.MaxConns, d.MaxConns),
		MaxConnsPerAddr: cmp.Or(l.MaxConnsPerAddr, d.MaxConnsPerAddr),
		BoundLoopback:   l.BoundLoopback,
		ReadHeader:      cmp.Or(l.ReadHeader, d.ReadHeader),
		ReadBody:        cmp.Or(l.ReadBody, d.ReadBody),
		Idle:            cmp.Or(l.Idle, d.Idle),
		Write:           cmp.Or(l.Write, d.Write),
		MaxHeaderBytes:  cmp.Or(l.MaxHeaderBytes, d.MaxHeaderBytes),
		MaxParties:      cmp.Or(l.MaxParties, d.MaxParties),
		CacheBytes:      cmp.Or(l.CacheBytes, d.CacheBytes),
	}
}

// MaxNewest is the most unread messages per channel /v1/hook shows:
// the hook shows three.
const MaxNewest = 10

// maxArrivals is the most messages one /v1/arrivals answer holds; the
// member asks for the next page.
const maxArrivals = 500
