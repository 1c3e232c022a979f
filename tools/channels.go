package tools

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
)

type channelNewArgs struct {
	Name    string   `json:"name"`
	About   string   `json:"about"`
	Parties []string `json:"parties"`
	keyArg
}

func channelNew(ctx context.Context, s *Service, a channelNewArgs) (Result, error) {
	if _, err := store.ChannelName(a.Name); err != nil {
		return Result{}, err
	}
	refs, err := s.partyRefs(a.Parties)
	if err != nil {
		return Result{}, err
	}
	info, err := s.DB.ChannelNewWith(ctx, s.Me, a.Name, a.About, refs)
	if err != nil {
		return Result{}, err
	}
	return Result{Display: fmt.Sprintf("Created #%s with %s.", info.Channel, names(info.Parties)), Value: info}, nil
}

// partyRefs reads chat_channel_new's parties: a party's name, or the
// absolute path of a repository, which stands for the party a session there
// is (the same identity function as the server's). A repository whose
// session has made no call yet gets its party now — the one that session
// will be — so the channel can be made before the peer starts; only for a
// folder that exists on this host, so that a mistyped path makes no party.
func (s *Service) partyRefs(parties []string) ([]store.PartyRef, error) {
	refs := make([]store.PartyRef, len(parties))
	for i, p := range parties {
		p = strings.TrimSpace(p)
		if !strings.ContainsRune(p, '/') {
			refs[i] = store.PartyRef{Name: p}
			continue
		}
		if s.Me.Team {
			return nil, argErrorf("parties: %q is a path, but on a team hub a party is its name (paths differ from machine to machine) — give a name from chat_whoami", OneLine(p, 200))
		}
		if !filepath.IsAbs(p) {
			return nil, argErrorf("parties: %q is neither a party's name nor an absolute path — give a name from chat_whoami or the repository's full path, e.g. /home/you/src/node-dash", OneLine(p, 200))
		}
		there, err := config.Identify(p, s.Config.Identity.GitRoot)
		if err != nil {
			return nil, argErrorf("parties: %s", OneLine(err.Error(), 300))
		}
		info, err := os.Stat(p)
		refs[i] = store.PartyRef{
			Folder:    &store.Identity{Name: there.Name, Workspace: there.Root},
			MayCreate: err == nil && info.IsDir(),
		}
	}
	return refs, nil
}

// channelArgs name the channel that leave acts on.
type channelArgs struct {
	Name string `json:"name"`
	keyArg
}

type channelJoinArgs struct {
	Name      string `json:"name"`
	Attention string `json:"attention"`
	keyArg
}

func channelJoin(ctx context.Context, s *Service, a channelJoinArgs) (Result, error) {
	info, err := s.DB.ChannelJoinWith(ctx, s.Me, a.Name, a.Attention)
	if err != nil {
		return Result{}, err
	}
	display := fmt.Sprintf("You sit in #%s with %s — %d unread, %s.", info.Channel, names(info.Parties), info.Unread, safe.Count(info.LiveItems, "live item"))
	if info.Attention != "" {
		display += "\nYour attention there: " + attentionWords(info.Attention) + "."
	}
	return Result{Display: display, Value: info}, nil
}

func channelLeave(ctx context.Context, s *Service, a channelArgs) (Result, error) {
	res, err := s.DB.ChannelLeave(ctx, s.Me, a.Name)
	if err != nil {
		return Result{}, err
	}
	return Result{Display: fmt.Sprintf("You left #%s. Items you consume there still need your ack and prune-ok.", res.Channel), Value: res}, nil
}

// channelListAnswer is chat_channel_list's result, cut to the budget.
type channelListAnswer struct {
	Cut string `json:"cut,omitempty"`
	store.ChannelList
	Omitted int            `json:"omitted,omitempty"`
	Next    map[string]any `json:"next,omitempty"`
}

type channelListArgs struct {
	All  bool `json:"all"`
	Skip int  `json:"skip"`
}

func channelList(ctx context.Context, s *Service, a channelListArgs) (Result, error) {
	list, err := s.DB.ChannelList(ctx, s.Me, a.All)
	if err != nil {
		return Result{}, err
	}
	ans := cutChannels(list.Channels, a.All, min(a.Skip, len(list.Channels)), s.listBudget())
	return Result{Display: renderChannelList(ans), Value: ans}, nil
}

// cutChannels keeps the channels after skip that fit budget, abouts
// shortened if they all do not, and names the call that lists the rest.
func cutChannels(all []store.ChannelInfo, everyChannel bool, skip, budget int) channelListAnswer {
	list := all[skip:]
	ans := channelListAnswer{ChannelList: store.ChannelList{Channels: list}}
	if skip == 0 && sizeOf(renderChannelList(ans), ans) <= budget {
		return ans
	}
	list = shortChannels(list)
	worst := channelListAnswer{ChannelList: store.ChannelList{Channels: []store.ChannelInfo{}}}
	worst.Cut, worst.Next = channelsCutLine(span{math.MaxInt, math.MaxInt, math.MaxInt}, everyChannel)
	worst.Omitted = math.MaxInt
	sec := sectionOf(list, channelLine)
	fill(budget-sizeOf(renderChannelList(worst), worst), sec)
	shown := span{first: skip, shown: sec.keep, total: len(all)}
	ans.Channels = list[:sec.keep]
	ans.Omitted = len(all) - sec.keep
	ans.Cut, ans.Next = channelsCutLine(shown, everyChannel)
	return ans
}

func channelsCutLine(shown span, everyChannel bool) (string, map[string]any) {
	next := map[string]any{}
	line := fmt.Sprintf("%s: channels %d–%d of %d are here", cutNote, shown.first+1, shown.first+shown.shown, shown.total)
	if rest := shown.rest(); rest > 0 {
		args := map[string]any{"skip": rest}
		if everyChannel {
			args["all"] = true
		}
		line += "; " + nextCall(next, "chat_channel_list", args) + " lists the next"
	}
	if shown.first > 0 {
		line += "; chat_channel_list lists the first"
	}
	return line + ".", next
}

// shortChannels is list with long abouts shortened.
func shortChannels(list []store.ChannelInfo) []store.ChannelInfo {
	out := make([]store.ChannelInfo, len(list))
	for i, c := range list {
		c.About = shortPtr(c.About)
		out[i] = c
	}
	return out
}

func renderChannelList(a channelListAnswer) string {
	var b strings.Builder
	b.WriteString(cutHead(a.Cut))
	if len(a.Channels) == 0 && a.Cut == "" {
		b.WriteString("No channels yet — create one with chat_channel_new.")
	}
	for _, c := range a.Channels {
		b.WriteString(channelLine(c))
	}
	return strings.TrimRight(b.String(), "\n")
}

func channelLine(c store.ChannelInfo) string {
	seat := ""
	if !c.Member {
		seat = " (not joined)"
	}
	line := fmt.Sprintf("- **#%s**%s: %d unread · %s · %s", c.Channel, seat, c.Unread, safe.Count(c.LiveItems, "live item"), names(c.Parties))
	if c.About != nil {
		line += " — " + OneLine(*c.About, 100)
	}
	return line + "\n"
}
