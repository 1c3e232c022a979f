package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpp/mcpp-chat/internal/store"
)

func say(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		Text    string `json:"text"`
		Channel string `json:"channel"`
		ReplyTo string `json:"reply_to"`
		Ref     string `json:"ref"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	if err := text("text", a.Text); err != nil {
		return Result{}, err
	}
	res, err := s.DB.Say(ctx, s.Me, store.SayArgs{Text: a.Text, Channel: a.Channel, ReplyTo: a.ReplyTo, Ref: a.Ref, DefaultChannel: s.Config.Chat.DefaultChannel})
	if err != nil {
		return Result{}, err
	}
	display := fmt.Sprintf("Posted #%d to #%s (to %s).", res.Seq, res.Channel, names(res.To))
	if res.Kind == "reply" {
		display = fmt.Sprintf("Replied to %s in #%s as #%d%s.", res.Re, res.Channel, res.Seq, autoAcked(*res.AutoAcked))
	}
	return Result{Display: display, Value: res}, nil
}

func autoAcked(yes bool) string {
	if yes {
		return " (auto-acked)"
	}
	return ""
}

func reply(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		Item string `json:"item"`
		Text string `json:"text"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	if err := text("text", a.Text); err != nil {
		return Result{}, err
	}
	if err := text("item", a.Item); err != nil {
		return Result{}, err
	}
	res, err := s.DB.Reply(ctx, s.Me, a.Item, a.Text, s.Config.Chat.DefaultChannel)
	if err != nil {
		return Result{}, err
	}
	return Result{Display: fmt.Sprintf("Replied to %s in #%s as #%d%s.", res.Re, res.Channel, res.Seq, autoAcked(res.AutoAcked)), Value: res}, nil
}
