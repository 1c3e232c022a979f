package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/escalation"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// clockStopWait is how long a stopping command waits for its clock: the
// clock stops at once unless a person is being told, and a command exits
// within stopGrace of a signal.
const clockStopWait = time.Second

// startClock runs the escalation ladder's clock of db (each serve and each
// hub runs one: docs/protocol.md) until the returned stop is called.
func startClock(ctx context.Context, db *store.DB, cfg config.Config, changes escalation.Changes, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	c := &escalation.Clock{
		DB:      db,
		Ladder:  store.Ladder{RaiserAfter: cfg.RaiserAfter(), PersonAfter: cfg.PersonAfter()},
		Notify:  escalation.Notifier{Command: cfg.Notify.Command, Webhook: cfg.Notify.Webhook},
		Changes: changes,
		Log:     log,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(clockStopWait):
		}
	}
}
