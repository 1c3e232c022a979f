package store

import (
	"context"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// What an engine may do beyond engine.Engine, asked in one place. Each
// answers as an engine without the capability would behave: the protocol
// names no engine, only what it can do.

// cheapState reports an engine whose State costs no round trip, so that
// the memos may ask it before and after a call.
func cheapState(eng engine.Engine) bool {
	_, ok := eng.(engine.CheapState)
	return ok
}

// holdTurn has the rest of ctx's call hold one of the engine's turns, so
// that a call of several transactions queues once; on an engine without
// turns it holds nothing.
func holdTurn(ctx context.Context, eng engine.Engine) (context.Context, func(), error) {
	if t, ok := eng.(engine.Turns); ok {
		return t.HoldTurn(ctx)
	}
	return ctx, func() {}, nil
}

// longRead runs the rest of ctx's call as a read that may take long,
// within the share of the engine's turns such reads hold.
func longRead(ctx context.Context, eng engine.Engine, party string) (context.Context, func(), error) {
	if t, ok := eng.(engine.Turns); ok {
		return t.LongRead(ctx, party)
	}
	return ctx, func() {}, nil
}

// partyStates is the engine as one that names what a party sees, or nil.
func partyStates(eng engine.Engine) engine.PartyStates {
	ps, _ := eng.(engine.PartyStates)
	return ps
}
