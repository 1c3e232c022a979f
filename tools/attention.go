package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
)

type attentionArgs struct {
	Channel string `json:"channel"`
	Mode    string `json:"mode"`
	keyArg
}

// attention sets or reports the caller's attention per channel.
func attention(ctx context.Context, s *Service, a attentionArgs) (Result, error) {
	res, err := s.DB.SetAttention(ctx, s.Me, store.AttentionArgs{Channel: a.Channel, Mode: a.Mode, DefaultChannel: s.Config.Chat.DefaultChannel})
	if err != nil {
		return Result{}, err
	}
	return Result{Display: renderAttention(res, strings.TrimSpace(a.Mode) != "", s.Config.Attention.DefaultAbove), Value: res}, nil
}

// renderAttention says each channel's attention and why it is that.
func renderAttention(res store.AttentionResult, set bool, defaultAbove int) string {
	if len(res.Channels) == 0 {
		return "You are in no channel yet — create one with chat_channel_new or join one with chat_channel_join."
	}
	var b strings.Builder
	if set {
		b.WriteString("Attention set.\n")
	}
	for _, c := range res.Channels {
		why := "you chose it"
		if !c.Chosen {
			size := fmt.Sprintf("%d parties sit there, at most attention.default_above (%d)", c.Parties, defaultAbove)
			if c.Attention == store.AttentionMentions {
				size = fmt.Sprintf("%d parties sit there, more than attention.default_above (%d)", c.Parties, defaultAbove)
			}
			why = "the default: " + size
		}
		fmt.Fprintf(&b, "- #%s: %s (%s)\n", c.Channel, attentionWords(c.Attention), why)
	}
	return strings.TrimRight(b.String(), "\n")
}

// attentionWords says what a mode means for the party.
func attentionWords(mode string) string {
	if mode == store.AttentionMentions {
		return "mentions — told in full and woken only for what is addressed to you; the rest is one count line"
	}
	return "all — told every message in full, woken by any"
}
