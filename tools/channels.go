package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
)

func channelNew(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		Name    string   `json:"name"`
		About   string   `json:"about"`
		Parties []string `json:"parties"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	if _, err := store.ChannelName(a.Name); err != nil {
		return Result{}, err
	}
	info, err := s.DB.ChannelNew(ctx, s.Me, a.Name, a.About, a.Parties)
	if err != nil {
		return Result{}, err
	}
	return Result{Display: fmt.Sprintf("Created #%s with %s.", info.Channel, names(info.Parties)), Value: info}, nil
}

func channelJoin(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	info, err := s.DB.ChannelJoin(ctx, s.Me, a.Name)
	if err != nil {
		return Result{}, err
	}
	return Result{Display: fmt.Sprintf("You sit in #%s with %s — %d unread, %s.", info.Channel, names(info.Parties), info.Unread, plural(info.LiveItems, "live item")), Value: info}, nil
}

func channelLeave(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	res, err := s.DB.ChannelLeave(ctx, s.Me, a.Name)
	if err != nil {
		return Result{}, err
	}
	return Result{Display: fmt.Sprintf("You left #%s. Items you consume there still need your ack and prune-ok.", res.Channel), Value: res}, nil
}

func channelList(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		All bool `json:"all"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	list, err := s.DB.ChannelList(ctx, s.Me, a.All)
	if err != nil {
		return Result{}, err
	}
	var b strings.Builder
	if len(list.Channels) == 0 {
		b.WriteString("No channels yet — create one with chat_channel_new.")
	}
	for _, c := range list.Channels {
		seat := ""
		if !c.Member {
			seat = " (not joined)"
		}
		fmt.Fprintf(&b, "- **#%s**%s: %d unread · %s · %s", c.Channel, seat, c.Unread, plural(c.LiveItems, "live item"), names(c.Parties))
		if c.About != nil {
			fmt.Fprintf(&b, " — %s", OneLine(*c.About, 100))
		}
		b.WriteString("\n")
	}
	return Result{Display: strings.TrimRight(b.String(), "\n"), Value: list}, nil
}
