package store

import (
	"context"
	"fmt"
)

// Chain is where a post stands in a chain of turns: a person's prompt
// starts one (hop 0), and a post made in a turn that a post of hop h woke
// is hop h+1. The session's hooks know which turn began how; the server
// finds the turn through the client process both run under and hands the
// chain to the call (WithChain). Past Attention.MaxHops agent-only hops a
// post still lands, but wakes no one.
type Chain struct {
	ID  string `json:"id"`
	Hop int    `json:"hop"`
}

// maxChainID bounds a chain's id, which a client sends.
const maxChainID = 64

// Valid reports a chain a post may carry: an id of a few printable ASCII
// characters and a hop that is not negative.
func (c Chain) Valid() bool {
	if c.ID == "" || len(c.ID) > maxChainID || c.Hop < 0 {
		return false
	}
	for i := 0; i < len(c.ID); i++ {
		if c.ID[i] <= ' ' || c.ID[i] > '~' {
			return false
		}
	}
	return true
}

type chainKey struct{}

// WithChain makes the posts of the calls ctx carries part of chain c; an
// invalid chain is ignored.
func WithChain(ctx context.Context, c Chain) context.Context {
	if !c.Valid() {
		return ctx
	}
	return context.WithValue(ctx, chainKey{}, c)
}

// ChainFrom is the chain ctx carries, if any.
func ChainFrom(ctx context.Context) (Chain, bool) {
	c, ok := ctx.Value(chainKey{}).(Chain)
	return c, ok
}

// chain records the chain of the post id, when the call carries one, and
// says in a sentence when the post wakes no one because of it.
func (t *tx) chain(id int64) (halted string, err error) {
	c, ok := ChainFrom(t.ctx)
	if !ok {
		return "", nil
	}
	if _, err := t.exec(`INSERT INTO chains (message_id, chain, hop) VALUES (?, ?, ?)`, id, c.ID, c.Hop); err != nil {
		return "", err
	}
	if max := t.att.maxHops(); c.Hop >= max {
		return haltedSentence(c.Hop, max), nil
	}
	return "", nil
}

// haltedSentence says why a post at hop wakes no one.
func haltedSentence(hop, max int) string {
	return fmt.Sprintf("it is %s into a chain of turns no person has prompted since, so it wakes no one (attention.max_hops is %d) — peers see it when they next look; a person's prompt starts a new chain",
		hops(hop), max)
}

// hops is n agent-only hops, in words.
func hops(n int) string {
	if n == 1 {
		return "1 agent-only hop"
	}
	return fmt.Sprintf("%d agent-only hops", n)
}
