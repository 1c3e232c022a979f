package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

func inbox(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		Skip int `json:"skip"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	in, err := s.DB.Inbox(ctx, s.Me)
	if err != nil {
		return Result{}, err
	}
	return s.sameAnswer("chat_inbox", raw, in.State, func() Result {
		ans, _ := cutInbox(in, inboxCut{skip: a.Skip, size: noParties(func(a inboxAnswer) int {
			return sizeOf(renderInboxAnswer(a), a)
		})}, s.budget())
		return Result{Display: renderInboxAnswer(ans), Value: ans}
	})
}

// renderInboxAnswer is the inbox display, under its cut line if it has one.
func renderInboxAnswer(a inboxAnswer) string {
	return cutHead(a.Cut) + renderInbox(a.Inbox)
}

// cutHead puts an answer's cut line first in its display.
func cutHead(cut string) string {
	if cut == "" {
		return ""
	}
	return "**" + cut + "**\n\n"
}

// whoamiAnswer is chat_whoami's result: the inbox plus identity and the
// known parties, cut to the budget like the inbox.
type whoamiAnswer struct {
	inboxAnswer
	About        *string           `json:"about"`
	KnownParties []store.PartyInfo `json:"known_parties"`
}

func whoami(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		About string `json:"about"`
		Skip  int    `json:"skip"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	w, err := s.DB.Whoami(ctx, s.Me, strings.TrimSpace(a.About))
	if err != nil {
		return Result{}, err
	}
	return s.sameAnswer("chat_whoami", raw, w.State, func() Result {
		skip := min(a.Skip, len(w.KnownParties))
		size := func(in inboxAnswer, parties []store.PartyInfo) int {
			ans := whoamiAnswer{inboxAnswer: in, About: w.About, KnownParties: parties}
			return sizeOf(renderWhoami(ans), ans)
		}
		in, parties := cutInbox(w.Inbox, inboxCut{parties: w.KnownParties[skip:], partySkip: skip, size: size}, s.budget())
		ans := whoamiAnswer{inboxAnswer: in, About: w.About, KnownParties: parties}
		return Result{Display: renderWhoami(ans), Value: ans}
	})
}

func renderWhoami(w whoamiAnswer) string {
	var b strings.Builder
	b.WriteString(cutHead(w.Cut))
	fmt.Fprintf(&b, "**You are %s** — the repository at %s", w.Me, w.Workspace)
	if w.About != nil {
		fmt.Fprintf(&b, " (%s)", OneLine(*w.About, 120))
	}
	b.WriteString(".\nYou are authoritative about this repository and nothing else.\n\n")
	b.WriteString(renderInbox(w.Inbox))
	b.WriteString("\n\n**Known parties**\n")
	for _, p := range w.KnownParties {
		b.WriteString(partyLine(p))
	}
	return strings.TrimRight(b.String(), "\n")
}

func partyLine(p store.PartyInfo) string {
	line := fmt.Sprintf("- %s — %s", p.Name, p.Workspace)
	if p.About != nil {
		line += fmt.Sprintf(" (%s)", OneLine(*p.About, 100))
	}
	return line + "\n"
}

// WaitResult is chat_wait's result: the inbox, cut to the budget like
// chat_inbox's, plus whether something arrived.
type WaitResult struct {
	inboxAnswer
	Arrived       bool    `json:"arrived"`
	WaitedSeconds float64 `json:"waited_seconds"`
}

// progressEvery keeps a host's idle timer from firing during a wait.
const progressEvery = 5 * time.Second

func wait(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		Seconds *int   `json:"seconds"`
		Channel string `json:"channel"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	seconds := 10
	if a.Seconds != nil {
		seconds = *a.Seconds
	}
	seconds = max(1, min(seconds, s.waitBounds()))
	if a.Channel != "" {
		name, err := store.ChannelName(a.Channel)
		if err != nil {
			return Result{}, err
		}
		a.Channel = name
	}
	start := time.Now()
	until, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second)
	defer cancel()
	stopProgress := s.keepAlive(ctx, start, seconds)
	defer stopProgress()
	for {
		in, err := s.DB.Inbox(ctx, s.Me)
		if err != nil {
			return Result{}, err
		}
		if a.Channel != "" && !sitsIn(in, a.Channel) {
			return Result{}, argErrorf("you are not in '%s' — pass one of your channels (%s) or join it with chat_channel_join", a.Channel, names(channelNames(in)))
		}
		arrived := waitsOnMe(in, a.Channel)
		if arrived || until.Err() != nil {
			res := WaitResult{Arrived: arrived, WaitedSeconds: math.Round(time.Since(start).Seconds()*1000) / 1000}
			res.inboxAnswer, _ = cutInbox(in, inboxCut{size: noParties(func(a inboxAnswer) int {
				r := res
				r.inboxAnswer = a
				return sizeOf(renderWait(r, seconds), r)
			})}, s.budget())
			return Result{Display: renderWait(res, seconds), Value: res}, nil
		}
		if err := s.changed(until); err != nil {
			if ctx.Err() != nil {
				return Result{}, ctx.Err() // cancelled by the client: stop at once
			}
			if until.Err() == nil {
				// The watcher failed: poll rather than spin until the deadline.
				pollWait(until)
			}
		}
	}
}

// pollWait sleeps one poll interval or until ctx ends.
func pollWait(ctx context.Context) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// waitsOnMe: an unread message, or an item needing your ack or prune-ok
// (your own item awaiting your resolve does not wake you).
func waitsOnMe(in store.Inbox, channel string) bool {
	for _, c := range in.Channels {
		if c.Unread > 0 && (channel == "" || c.Channel == channel) {
			return true
		}
	}
	for _, w := range in.WaitingOnMe {
		if w.Urgent() && (channel == "" || w.Channel == channel) {
			return true
		}
	}
	return false
}

func sitsIn(in store.Inbox, channel string) bool {
	for _, c := range in.Channels {
		if c.Channel == channel {
			return true
		}
	}
	return false
}

func channelNames(in store.Inbox) []string {
	var out []string
	for _, c := range in.Channels {
		out = append(out, c.Channel)
	}
	return out
}

func renderWait(r WaitResult, seconds int) string {
	head := fmt.Sprintf("**Nothing arrived in %ds.**", seconds)
	if r.Arrived {
		head = "**Something arrived.**"
	}
	return cutHead(r.Cut) + head + "\n\n" + renderInbox(r.Inbox)
}

// keepAlive sends a progress notification every few seconds while a wait
// runs, when the client asked for progress.
func (s *Service) keepAlive(ctx context.Context, start time.Time, seconds int) func() {
	notify := progressFrom(ctx)
	if notify == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				waited := time.Since(start).Seconds()
				notify(ctx, waited, float64(seconds), fmt.Sprintf("waiting for a peer (%.0fs of %ds)", waited, seconds))
			}
		}
	}()
	return func() { close(done) }
}
