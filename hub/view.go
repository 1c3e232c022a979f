package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// seenAt is what a party can see (store.Seen) as read at one state of
// the store, and its ETag: a hash of it, so that the tag moves when what
// the party sees moves, and at no other change. Replicas read the same
// store, so they give the same tag.
type seenAt struct {
	state string        // the generation's name when it was read
	ready chan struct{} // closed once read
	seen  store.Seen
	tag   string
	err   error
	// claimsEnd is when the first claim the party sees runs out: no
	// commit marks it, yet what the party sees changes then.
	claimsEnd string
}

// outrun reports a read whose claims have run out since: it must be read
// anew, though the store's state is where it was.
func (e *seenAt) outrun() bool {
	select {
	case <-e.ready:
		return e.claimsEnd != "" && e.claimsEnd <= store.Now()
	default:
		return false
	}
}

// untilClaimsEnd is how long until the first claim e saw runs out; 0 for
// none.
func (e *seenAt) untilClaimsEnd() time.Duration {
	end, err := time.Parse(time.RFC3339Nano, e.claimsEnd)
	if e.claimsEnd == "" || err != nil {
		return 0
	}
	return max(time.Until(end), time.Millisecond)
}

// stateOf names the state of what party sees: on a team store the state
// of its own channels, which other channels' writes leave where it was
// (store.ReadOnly.PartyState), so that a say elsewhere makes nobody read
// again; otherwise the store's whole state, the generation.
func (s *Server) stateOf(party string) string {
	if _, ok := s.Changes.(keyedChanges); ok && s.Read != nil {
		if state, ok := s.Read.PartyState(store.Identity{Name: party, Team: true}); ok {
			return state
		}
	}
	return s.gen.current()
}

// readTimeout bounds a party's read, which its first asker starts and
// every other asker of that state waits for.
const readTimeout = 10 * time.Second

// seen is what party sees at the store's current state: read once per
// state however many of the party's sessions ask, each party's newest
// kept in a bounded cache.
func (s *Server) seen(ctx context.Context, party string) (*seenAt, error) {
	state := s.stateOf(party)
	s.mu.Lock()
	e, ok := s.views.get(party)
	if !ok || e.state != state || e.outrun() {
		e = &seenAt{state: state, ready: make(chan struct{})}
		s.views.put(party, e, 0)
		s.mu.Unlock()
		s.read(party, e)
	} else {
		s.mu.Unlock()
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if e.err != nil {
		return nil, e.err
	}
	return e, nil
}

// read fills e, out of any one request's hands: the party's other
// askers wait for it too. A failed read is forgotten, for the next asker
// to try again.
func (s *Server) read(party string, e *seenAt) {
	defer close(e.ready)
	s.seenReads.Add(1)
	size := 0
	e.seen, e.tag, size, e.err = s.readSeen(party)
	for _, c := range e.seen.Pending.Claims {
		if e.claimsEnd == "" || c.Until < e.claimsEnd {
			e.claimsEnd = c.Until
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.views.get(party); !ok || cur != e {
		return // a newer state's read took its place
	}
	if e.err != nil {
		s.views.remove(party)
		return
	}
	s.views.put(party, e, size)
}

// readSeen reads what party sees, its tag, and its size in memory.
func (s *Server) readSeen(party string) (store.Seen, string, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	seen, err := s.Read.SeenBy(ctx, store.Identity{Name: party, Team: true}, MaxNewest)
	if errors.Is(err, store.ErrUnknownParty) {
		seen, err = store.Seen{Pending: emptyPending(party)}, nil
	}
	if err != nil {
		return seen, "", 0, err
	}
	body, err := json.Marshal(seen.Pending)
	if err != nil {
		return seen, "", 0, err
	}
	sum := sha256.Sum256(append(body, strconv.FormatInt(seen.Newest, 10)...))
	return seen, strconv.Quote(hex.EncodeToString(sum[:12])), len(body), nil
}

func emptyPending(party string) store.Pending {
	return store.Pending{Party: party, Channels: []store.ChannelPending{}, WaitingOnMe: []store.WaitingOnMe{}, WaitingOnPeer: []store.WaitingOnPeer{},
		UnreadByPeers: []store.Receipt{}}
}

// newestOnly is p with each channel's newest n unread messages: what
// the store gives for n, since it reads a channel's newest from its end.
func newestOnly(p store.Pending, n int) store.Pending {
	chans := make([]store.ChannelPending, len(p.Channels))
	for i, c := range p.Channels {
		c.Newest = c.Newest[max(len(c.Newest)-n, 0):]
		chans[i] = c
	}
	p.Channels = chans
	return p
}
