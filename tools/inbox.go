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
	in, err := s.DB.Inbox(ctx, s.Me)
	if err != nil {
		return Result{}, err
	}
	return Result{Display: renderInbox(in), Value: in}, nil
}

func whoami(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		About string `json:"about"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	w, err := s.DB.Whoami(ctx, s.Me, strings.TrimSpace(a.About))
	if err != nil {
		return Result{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**You are %s** — the repository at %s", w.Me, w.Workspace)
	if w.About != nil {
		fmt.Fprintf(&b, " (%s)", OneLine(*w.About, 120))
	}
	b.WriteString(".\nYou are authoritative about this repository and nothing else.\n\n")
	b.WriteString(renderInbox(w.Inbox))
	b.WriteString("\n\n**Known parties**\n")
	for _, p := range w.KnownParties {
		fmt.Fprintf(&b, "- %s — %s", p.Name, p.Workspace)
		if p.About != nil {
			fmt.Fprintf(&b, " (%s)", OneLine(*p.About, 100))
		}
		b.WriteString("\n")
	}
	return Result{Display: strings.TrimRight(b.String(), "\n"), Value: w}, nil
}

// WaitResult is chat_wait's result: the inbox plus whether something arrived.
type WaitResult struct {
	store.Inbox
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
			res := WaitResult{Inbox: in, Arrived: arrived, WaitedSeconds: math.Round(time.Since(start).Seconds()*1000) / 1000}
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
	return head + "\n\n" + renderInbox(r.Inbox)
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
