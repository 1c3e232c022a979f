package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

type askArgs struct {
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	Channel   string   `json:"channel"`
	Slug      string   `json:"slug"`
	Ref       string   `json:"ref"`
	Consumers []string `json:"consumers"`
	Announce  bool     `json:"announce"`
	Due       string   `json:"due"`
	To        []string `json:"to"`
	keyArg
}

func (a askArgs) check() error {
	if err := text("title", a.Title); err != nil {
		return err
	}
	return text("body", a.Body)
}

// SameAskWindow is how long a chat_ask made without an idempotency key
// that repeats one of the caller's — the same channel, title and body —
// is that ask (a client's retry), not a second one.
const SameAskWindow = 60 * time.Second

func ask(ctx context.Context, s *Service, a askArgs) (Result, error) {
	args := store.AskArgs{
		Title: a.Title, Body: a.Body, Channel: a.Channel, Slug: a.Slug, Ref: a.Ref,
		Consumers: a.Consumers, Announce: a.Announce, Due: a.Due, To: a.To, DefaultChannel: s.Config.Chat.DefaultChannel,
	}
	if a.IdempotencyKey == "" {
		args.SameWithin = SameAskWindow // a retry without a key is known by what it asks
	}
	res, err := s.DB.Ask(ctx, s.Me, args)
	if err != nil {
		return Result{}, err
	}
	display := fmt.Sprintf("Raised %s in #%s #%d.\n", itemLine(res.Slug, res.Title, res.Status), res.Channel, res.Seq)
	if res.Duplicate {
		display = fmt.Sprintf("Already raised %s in #%s #%d moments ago with this title and body: this call is that ask, and nothing was written.\n",
			itemLine(res.Slug, res.Title, res.Status), res.Channel, res.Seq)
	}
	if res.Status == "done" {
		display += fmt.Sprintf("Announced: it needs no answer; awaiting prune-ok from %s.", names(res.Consumers))
	} else {
		display += fmt.Sprintf("Awaiting ack from %s. Do not answer it for them.", names(res.AwaitingAckFrom))
	}
	if res.Due != "" {
		display += fmt.Sprintf("\nDue %s: each consumer must ack by then, or it escalates.", utcMinute(res.Due))
	}
	return Result{Display: display + addressing(res.Addressing), Value: res}, nil
}

// itemArg is the item that ack, resolve and prune_ok act on.
type itemArg struct {
	Item string `json:"item"`
}

func (a itemArg) check() error { return text("item", a.Item) }

type ackArgs struct {
	itemArg
	Note string `json:"note"`
	keyArg
}

func ack(ctx context.Context, s *Service, a ackArgs) (Result, error) {
	st, err := s.DB.Ack(ctx, s.Me, a.Item, a.Note, s.Config.Chat.DefaultChannel)
	if err != nil {
		return Result{}, err
	}
	verb := "Acked"
	if st.Unchanged {
		verb = "Already acked:"
	}
	return Result{Display: renderItemState(verb, st), Value: st}, nil
}

type resolveArgs struct {
	itemArg
	Note     string `json:"note"`
	Answered bool   `json:"answered"`
	keyArg
}

func resolve(ctx context.Context, s *Service, a resolveArgs) (Result, error) {
	st, err := s.DB.Resolve(ctx, s.Me, a.Item, a.Note, a.Answered, s.Config.Chat.DefaultChannel)
	if err != nil {
		return Result{}, err
	}
	verb := "Resolved"
	if st.Unchanged {
		verb = "Already done:"
	}
	return Result{Display: renderItemState(verb, st), Value: st}, nil
}

type pruneOKArgs struct {
	itemArg
	keyArg
}

func pruneOK(ctx context.Context, s *Service, a pruneOKArgs) (Result, error) {
	st, err := s.DB.PruneOK(ctx, s.Me, a.Item, s.Config.Chat.DefaultChannel)
	if err != nil {
		return Result{}, err
	}
	verb := "Your prune-ok is on"
	if st.Unchanged {
		verb = "Your prune-ok was already on"
	}
	return Result{Display: renderItemState(verb, st), Value: st}, nil
}
