package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
)

type sayArgs struct {
	Text    string   `json:"text"`
	Channel string   `json:"channel"`
	ReplyTo string   `json:"reply_to"`
	Ref     string   `json:"ref"`
	To      []string `json:"to"`
	keyArg
}

func (a sayArgs) check() error { return text("text", a.Text) }

func say(ctx context.Context, s *Service, a sayArgs) (Result, error) {
	res, err := s.DB.Say(ctx, s.Me, store.SayArgs{Text: a.Text, Channel: a.Channel, ReplyTo: a.ReplyTo, Ref: a.Ref, To: a.To, DefaultChannel: s.Config.Chat.DefaultChannel})
	if err != nil {
		return Result{}, err
	}
	display := fmt.Sprintf("Posted #%d to #%s (to %s).", res.Seq, res.Channel, names(res.To))
	if res.Kind == "reply" {
		display = fmt.Sprintf("Replied to %s in #%s as #%d%s.", res.Re, res.Channel, res.Seq, autoAcked(*res.AutoAcked))
	}
	return Result{Display: display + addressing(res.Addressing), Value: res}, nil
}

// addressing is what a post's display adds of its attention: whom it
// addresses, and why it wakes no one.
func addressing(a store.Addressing) string {
	var out string
	if len(a.Addressed) > 0 {
		out += fmt.Sprintf("\nAddressed to %s.", names(a.Addressed))
	}
	if a.Halted != "" {
		out += "\nIt " + strings.TrimPrefix(a.Halted, "it ") + "."
	}
	return out
}

func autoAcked(yes bool) string {
	if yes {
		return " (auto-acked)"
	}
	return ""
}

type replyArgs struct {
	Item     string   `json:"item"`
	Text     string   `json:"text"`
	HandOver string   `json:"hand_over"`
	To       []string `json:"to"`
	keyArg
}

func (a replyArgs) check() error {
	if err := text("text", a.Text); err != nil {
		return err
	}
	return text("item", a.Item)
}

func reply(ctx context.Context, s *Service, a replyArgs) (Result, error) {
	if a.HandOver != "" {
		return replyHandingOver(ctx, s, a)
	}
	res, err := s.DB.ReplyWith(ctx, s.Me, store.ReplyArgs{Item: a.Item, Text: a.Text, To: a.To, DefaultChannel: s.Config.Chat.DefaultChannel})
	if err != nil {
		return Result{}, err
	}
	display := fmt.Sprintf("Replied to %s in #%s as #%d%s.", res.Re, res.Channel, res.Seq, autoAcked(res.AutoAcked))
	return Result{Display: display + addressing(res.Addressing), Value: res}, nil
}
