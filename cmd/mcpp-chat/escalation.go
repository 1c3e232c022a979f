package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/escalation"
	"github.com/mcpp/mcpp-chat/internal/redact"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/text"
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

// escalationLine is doctor's line on the ladder: its delays and how a
// person is told; the webhook by its host alone (its URL is its secret).
func escalationLine(cfg config.Config) string {
	var how []string
	if len(cfg.Notify.Command) > 0 {
		how = append(how, "notify.command ("+text.OneLine(strings.Join(cfg.Notify.Command, " "), 80)+")")
	}
	if cfg.Notify.Webhook != "" {
		how = append(how, "notify.webhook "+redact.Webhook(cfg.Notify.Webhook))
	}
	told := "nobody: set notify.command or notify.webhook to tell a person"
	if len(how) > 0 {
		told = strings.Join(how, " and ")
	}
	return fmt.Sprintf("escalation:  an overdue item's raiser is woken %s after its due time, a person told %s after it, by %s",
		cfg.Escalation.RaiserAfter, cfg.Escalation.PersonAfter, told)
}
