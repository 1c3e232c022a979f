package tools

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
)

type inboxArgs struct {
	Skip int `json:"skip"`
}

func inbox(ctx context.Context, s *Service, a inboxArgs) (Result, error) {
	in, err := s.DB.Inbox(ctx, s.Me)
	if err != nil {
		return Result{}, err
	}
	return s.sameAnswer("chat_inbox", a, in.State, func() Result {
		ans := cutInbox(in, a.Skip, func(a inboxAnswer) int { return sizeOf(renderInboxAnswer(a), a) }, s.listBudget())
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

type whoamiArgs struct {
	About string `json:"about"`
	Skip  int    `json:"skip"`
}

func whoami(ctx context.Context, s *Service, a whoamiArgs) (Result, error) {
	w, err := s.DB.Whoami(ctx, s.Me, strings.TrimSpace(a.About))
	if err != nil {
		return Result{}, err
	}
	return s.sameAnswer("chat_whoami", a, w.State, func() Result {
		ans := cutWhoami(w, min(a.Skip, len(w.KnownParties)), s.listBudget())
		return Result{Display: renderWhoami(ans), Value: ans}
	})
}

// whoamiAnswer is chat_whoami's result with its lists — your channels,
// then the known parties — cut to the answer budget.
type whoamiAnswer struct {
	Cut string `json:"cut,omitempty"`
	store.Whoami
	Omitted *whoamiOmitted `json:"omitted,omitempty"`
	Next    map[string]any `json:"next,omitempty"`
}

// whoamiOmitted counts what a cut whoami left out, skipped parties included.
type whoamiOmitted struct {
	Channels     int `json:"channels"`
	KnownParties int `json:"known_parties"`
}

// cutWhoami keeps the channels and, after skip, the known parties that fit.
func cutWhoami(w store.Whoami, skip, budget int) whoamiAnswer {
	w.KnownParties = w.KnownParties[skip:]
	ans := whoamiAnswer{Whoami: w}
	empty := ans
	empty.Channels, empty.KnownParties = []store.ChannelUnread{}, []store.PartyInfo{}
	chans, parties := sectionOf(w.Channels, channelUnreadLine), sectionOf(w.KnownParties, partyLine)
	if whole := sizeOf(renderWhoami(empty), empty) + listHeads + chans.total() + parties.total(); whole <= budget && skip == 0 {
		return ans
	} else if whole > budget && hasLongAbouts(w.KnownParties) {
		ans.KnownParties = shortParties(w.KnownParties)
		parties = sectionOf(ans.KnownParties, partyLine)
	}
	worst := empty
	worst.Omitted = &whoamiOmitted{math.MaxInt, math.MaxInt}
	worst.Cut, worst.Next = whoamiCutLine(*worst.Omitted, span{math.MaxInt, math.MaxInt, math.MaxInt})
	fill(budget-sizeOf(renderWhoami(worst), worst)-listHeads, chans, parties)
	ans.Channels, ans.KnownParties = w.Channels[:chans.keep], ans.KnownParties[:parties.keep]
	left := whoamiOmitted{Channels: chans.n() - chans.keep, KnownParties: skip + parties.n() - parties.keep}
	if left.Channels+left.KnownParties > 0 {
		ans.Omitted = &left
		ans.Cut, ans.Next = whoamiCutLine(left, span{first: skip, shown: parties.keep, total: skip + parties.n()})
	}
	return ans
}

func whoamiCutLine(left whoamiOmitted, known span) (string, map[string]any) {
	var b strings.Builder
	next := map[string]any{}
	fmt.Fprintf(&b, "%s: ", cutNote)
	if left.Channels > 0 {
		fmt.Fprintf(&b, "%s not listed: %s lists them. ", safe.Count(left.Channels, "channel"), nextCall(next, "chat_channel_list", map[string]any{}))
	}
	if left.KnownParties > 0 {
		fmt.Fprintf(&b, "known parties %d–%d of %d are here", known.first+1, known.first+known.shown, known.total)
		if rest := known.rest(); rest > 0 {
			b.WriteString("; " + nextCall(next, "chat_whoami", map[string]any{"skip": rest}) + " lists the next")
		}
		if known.first > 0 {
			b.WriteString("; chat_whoami lists the first")
		}
		b.WriteString(".")
	}
	return strings.TrimSpace(b.String()), next
}

func hasLongAbouts(list []store.PartyInfo) bool {
	for _, p := range list {
		if p.About != nil && long(*p.About) {
			return true
		}
	}
	return false
}

func renderWhoami(w whoamiAnswer) string {
	var b strings.Builder
	b.WriteString(cutHead(w.Cut))
	fmt.Fprintf(&b, "**You are %s** — the repository at %s", w.Name, w.Workspace)
	if w.About != nil {
		fmt.Fprintf(&b, " (%s)", OneLine(*w.About, 120))
	}
	b.WriteString(".\nYou are authoritative about this repository and nothing else.\n\n")
	fmt.Fprintf(&b, "**Channels** — %s\n", safe.Count(w.UnreadTotal, "unread message"))
	if len(w.Channels) == 0 && w.Omitted == nil {
		b.WriteString("You are in no channel yet — create one with chat_channel_new or join one with chat_channel_join.\n")
	}
	for _, c := range w.Channels {
		b.WriteString(channelUnreadLine(c))
	}
	switch w.WaitingOnMe {
	case 0:
		b.WriteString("\nNothing waiting on you.\n")
	default:
		fmt.Fprintf(&b, "\n**%s waiting on you** — chat_inbox lists %s.\n", safe.Count(w.WaitingOnMe, "item"), map[bool]string{true: "it", false: "them"}[w.WaitingOnMe == 1])
	}
	b.WriteString("\n**Known parties**\n")
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
	WaitedSeconds pyFloat `json:"waited_seconds"`
	// Freed are the claims the caller waited for that ended during the
	// wait (released, expired, freed, resolved): it may claim them now.
	// At most maxFreed; FreedMore counts the rest.
	Freed     []freedClaim `json:"freed,omitempty"`
	FreedMore int          `json:"freed_more,omitempty"`
	// already: it was waiting on you before the wait began (arrived is
	// true, as the Python edition answers; only the display says so).
	already bool
}

type waitArgs struct {
	Seconds *int   `json:"seconds"`
	Channel string `json:"channel"`
}

func wait(ctx context.Context, s *Service, a waitArgs) (Result, error) {
	seconds := DefaultWaitSeconds
	if a.Seconds != nil {
		seconds = *a.Seconds
	}
	seconds = max(1, min(seconds, WaitCeiling(s.Config, s.Env)))
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
	go func() { // the client said all it will say: answer now
		select {
		case <-s.StopWaiting:
			cancel()
		case <-until.Done():
		}
	}()
	stopProgress := s.keepAlive(ctx, start, seconds)
	defer stopProgress()
	stop := func() {}
	defer func() { stop() }() // the last look's wish to be woken
	var awaited []store.Claim // at the first look: what a claim's end answers
	for first := true; ; first = false {
		var changed <-chan struct{}
		changed, stop = s.nextChange(ctx)
		in, err := s.DB.Inbox(ctx, s.Me)
		if err != nil {
			return Result{}, err
		}
		if ctx.Err() != nil {
			// Cancelled during the look: the same answer as while waiting,
			// not an inbox that looks as if the time were up.
			return Result{}, ctx.Err()
		}
		if a.Channel != "" && !sitsIn(in, a.Channel) {
			return Result{}, argErrorf("you are not in '%s' — pass one of your channels (%s) or join it with chat_channel_join", a.Channel, names(channelNames(in)))
		}
		if first {
			awaited = in.ClaimsAwaited
		}
		var freed []store.Claim
		if a.Channel == "" { // a claim is in no channel
			// One handed to the caller is held now, not ended: the reply
			// that handed it arrives as a message.
			freed = ended(awaited, slices.Concat(in.ClaimsAwaited, in.ClaimsHeld))
		}
		arrived := waitsOnMe(in, a.Channel) || len(freed) > 0
		if arrived || until.Err() != nil {
			res := WaitResult{Arrived: arrived, WaitedSeconds: tenths(time.Since(start)), already: arrived && first}
			res.Freed, res.FreedMore = freedOf(freed)
			res.inboxAnswer = cutInbox(in, 0, func(a inboxAnswer) int {
				r := res
				r.inboxAnswer = a
				return sizeOf(renderWait(r, seconds), r)
			}, s.listBudget())
			return Result{Display: renderWait(res, seconds), Value: res}, nil
		}
		// A claim waited for may end by the clock, with nothing committed.
		ends, stopEnds := claimEnds(in.ClaimsAwaited) // as renewed since
		select {
		case <-changed:
		case <-ends:
		case <-until.Done():
			if ctx.Err() != nil {
				return Result{}, ctx.Err() // cancelled by the client: stop at once
			}
			// Time is up (or the client closed stdin): one last look.
		}
		stopEnds()
		stop()
	}
}

// ended are the claims of before whose resource now no longer lists:
// their ends. A hand-over makes the claim anew for its new holder, on the
// same resource, and its waiters wait on.
func ended(before, now []store.Claim) []store.Claim {
	var out []store.Claim
	for _, c := range before {
		if !slices.ContainsFunc(now, func(d store.Claim) bool { return d.Resource == c.Resource }) {
			out = append(out, c)
		}
	}
	return out
}

// claimEnds fires when the first of claims runs out (never for none);
// stop releases its timer.
func claimEnds(claims []store.Claim) (<-chan time.Time, func()) {
	var soonest time.Time
	for _, c := range claims {
		if at, err := time.Parse(time.RFC3339Nano, c.Until); err == nil && (soonest.IsZero() || at.Before(soonest)) {
			soonest = at
		}
	}
	if soonest.IsZero() {
		return nil, func() {}
	}
	t := time.NewTimer(time.Until(soonest) + 10*time.Millisecond) // past it, not at it
	return t.C, func() { t.Stop() }
}

// tenths is a duration in seconds rounded to one decimal, as the Python
// edition reports waited_seconds.
func tenths(d time.Duration) pyFloat {
	return pyFloat(math.Round(d.Seconds()*10) / 10)
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
		if w.Needs.Urgent() && (channel == "" || w.Channel == channel) {
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
	switch {
	case len(r.Freed) > 0:
		head = freedHead(r)
	case r.already:
		head = "**Already waiting on you** (from before this wait — nothing new had to arrive)."
	case r.Arrived:
		head = "**Something arrived.**"
	}
	return cutHead(r.Cut) + head + "\n\n" + renderInbox(r.Inbox)
}

// freedClaim is a claim a wait saw end: what, and who held it.
type freedClaim struct {
	Resource string `json:"resource"`
	Holder   string `json:"holder"`
}

// maxFreed bounds the claims a wait's answer names (a party may wait for
// 64): the answer stays a short notice within any budget.
const maxFreed = 8

// freedOf is what a wait's answer says of the claims that ended: the
// first maxFreed, resources shortened, and how many more.
func freedOf(claims []store.Claim) ([]freedClaim, int) {
	var out []freedClaim
	for _, c := range claims[:min(len(claims), maxFreed)] {
		out = append(out, freedClaim{Resource: short(c.Resource), Holder: c.Holder})
	}
	return out, len(claims) - len(out)
}

// freedHead names the claims a wait saw end.
func freedHead(r WaitResult) string {
	var what []string
	for _, c := range r.Freed {
		what = append(what, c.Resource+" ("+c.Holder+"'s)")
	}
	if r.FreedMore > 0 {
		what = append(what, fmt.Sprintf("%d more (chat_claims lists what is still held)", r.FreedMore))
	}
	n := len(r.Freed) + r.FreedMore
	return fmt.Sprintf("**%s you waited for ended**: %s — chat_claim %s if you still need %s.", safe.Plural(n, "The claim", "Claims"),
		strings.Join(what, ", "), safe.Plural(n, "it", "them"), safe.Plural(n, "it", "them"))
}

// progressEvery is chat.wait_progress_ms, or its default for a Service
// built without a loaded config.
func (s *Service) progressEvery() time.Duration {
	if every := s.Config.WaitProgress(); every > 0 {
		return every
	}
	return config.Defaults().WaitProgress()
}

// keepAlive sends a progress notification every chat.wait_progress_ms
// while a wait runs, when the client asked for progress, so that the
// host's idle timer does not fire during the wait.
func (s *Service) keepAlive(ctx context.Context, start time.Time, seconds int) func() {
	notify := progressFrom(ctx)
	if notify == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(s.progressEvery())
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
