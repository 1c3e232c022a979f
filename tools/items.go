package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpp/mcpp-chat/internal/store"
)

func ask(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		Title     string   `json:"title"`
		Body      string   `json:"body"`
		Channel   string   `json:"channel"`
		Slug      string   `json:"slug"`
		Ref       string   `json:"ref"`
		Consumers []string `json:"consumers"`
		Announce  bool     `json:"announce"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	if err := text("title", a.Title); err != nil {
		return Result{}, err
	}
	if err := text("body", a.Body); err != nil {
		return Result{}, err
	}
	res, err := s.DB.Ask(ctx, s.Me, store.AskArgs{
		Title: a.Title, Body: a.Body, Channel: a.Channel, Slug: a.Slug, Ref: a.Ref,
		Consumers: a.Consumers, Announce: a.Announce, DefaultChannel: s.Config.Chat.DefaultChannel,
	})
	if err != nil {
		return Result{}, err
	}
	display := fmt.Sprintf("Raised %s in #%s #%d.\n", itemLine(res.Slug, res.Title, res.Status), res.Channel, res.Seq)
	if res.Status == "done" {
		display += fmt.Sprintf("Announced: it needs no answer; awaiting prune-ok from %s.", names(res.Consumers))
	} else {
		display += fmt.Sprintf("Awaiting ack from %s. Do not answer it for them.", names(res.AwaitingAckFrom))
	}
	return Result{Display: display, Value: res}, nil
}

// itemArgs are the arguments ack, resolve and prune_ok share.
type itemArgs struct {
	Item     string `json:"item"`
	Note     string `json:"note"`
	Answered bool   `json:"answered"`
}

func decodeItem(raw json.RawMessage) (itemArgs, error) {
	var a itemArgs
	if err := decode(raw, &a); err != nil {
		return a, err
	}
	return a, text("item", a.Item)
}

func ack(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	a, err := decodeItem(raw)
	if err != nil {
		return Result{}, err
	}
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

func resolve(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	a, err := decodeItem(raw)
	if err != nil {
		return Result{}, err
	}
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

func pruneOK(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	a, err := decodeItem(raw)
	if err != nil {
		return Result{}, err
	}
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
