package tools

import (
	"context"
	"encoding/json"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// A post carries the chain of the turn it was made in (store.Chain): a
// local server finds its session's turn through the client process it
// shares with the session's hooks (Service.Turn); a member machine's
// server sends it to its hub with the call, in the request's _meta under
// ChainMeta, and the hub's server reads it from there.

// ChainMeta is the key of a call's chain in the tools/call _meta.
const ChainMeta = "mcpp-chat/chain"

// posts are the tools whose calls write a say, an ask or a reply.
var posts = map[string]bool{"chat_say": true, "chat_ask": true, "chat_reply": true, "chat_ack": true, "chat_resolve": true}

// withChain gives a posting call the chain of the session's turn, unless
// it came with one (from a member, through the hub).
func (s *Service) withChain(ctx context.Context, tool string) context.Context {
	if !posts[tool] || s.Turn == nil {
		return ctx
	}
	if _, ok := store.ChainFrom(ctx); ok {
		return ctx
	}
	if c, ok := s.Turn(); ok {
		return store.WithChain(ctx, c)
	}
	return ctx
}

// chainFromMeta is the chain a call's _meta carries, if a valid one.
func chainFromMeta(ctx context.Context, meta map[string]any) context.Context {
	raw, ok := meta[ChainMeta]
	if !ok {
		return ctx
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return ctx
	}
	var c store.Chain
	if json.Unmarshal(data, &c) != nil {
		return ctx
	}
	return store.WithChain(ctx, c) // an invalid chain is dropped there
}

// ChainOf is the _meta a member's call carries to its hub: the chain of
// the call, if it has one; nil otherwise.
func ChainOf(ctx context.Context) map[string]any {
	c, ok := store.ChainFrom(ctx)
	if !ok {
		return nil
	}
	return map[string]any{ChainMeta: c}
}
