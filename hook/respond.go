package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// The events Claude Code runs the hook on.
const (
	SessionStart     = "SessionStart"
	UserPromptSubmit = "UserPromptSubmit"
	Stop             = "Stop"
)

// CanonicalEvent spells a known event name the way Claude Code does;
// anything else is kept as given.
func CanonicalEvent(name string) string {
	for _, e := range []string{SessionStart, UserPromptSubmit, Stop, SessionEnd, PreToolUse} {
		if strings.EqualFold(name, e) {
			return e
		}
	}
	return name
}

// Seen is what a session's record says the session already had: the keys
// of the lines it was told and of what a Stop block or a wake reported.
// Recorded is false for a session without a record (no session id, or a
// record that could not be read): every event then tells it the full
// picture, and nothing is reported as already seen.
type Seen struct {
	Told, Blocked []string
	Recorded      bool
	// Wakes is who woke the party lately, Limit how often one sender may
	// in WakeWindow (0: no limit) and Now the time: a Stop block and a
	// wake obey them (Decide).
	Wakes WakeLog
	Limit int
	Now   time.Time
}

// Answer is the hook's answer to one event: what it prints, and what the
// session's record holds once the session has read it.
type Answer struct {
	// Text is printed as it is; "" prints nothing.
	Text string
	// Told and Blocked are the record's keys after this answer.
	Told, Blocked []string
	// Untold says the output cap kept lines back, so the event still has
	// something to say at the same state.
	Untold bool
	// Shown are the keys of the lines Text holds: what it tells the
	// session once printed (told.go).
	Shown []string
	// Due is when an item waiting on the session's ack becomes overdue
	// (nextDue): the answer holds until then at the same state.
	Due time.Time
	// Decision is what a Stop block or a wake decided (Decide): who
	// wakes the party, the chain of the turn it begins, and when a key
	// held back may wake it.
	Decision Decision
}

// Respond is what the hook answers to event, given what is pending for
// the party and what the session has seen. It only computes: what is
// printed and what is saved is up to the caller.
func Respond(event string, p store.Pending, seen Seen) Answer {
	ans := respond(event, p, seen)
	ans.Due = nextDue(p)
	return ans
}

func respond(event string, p store.Pending, seen Seen) Answer {
	r := newReport(p)
	switch event {
	case SessionStart:
		return fullPicture(event, r)
	case UserPromptSubmit:
		if !seen.Recorded {
			return fullPicture(event, r)
		}
		return news(event, r, seen)
	case Stop:
		return block(p, seen, func(fresh []string) (string, []string) {
			message := headline(p, fresh)
			reason, shown := stopReason(r, cost(message)+len(`,"systemMessage":""`))
			return blockJSON(reason, message), shown
		})
	}
	text, _ := r.render(nil, MaxOutput)
	return Answer{Text: text, Told: seen.Told, Blocked: seen.Blocked}
}

// fullPicture tells everything and starts the record afresh: SessionStart
// comes after a cleared or compacted context, which has forgotten what it
// was told.
func fullPicture(event string, r report) Answer {
	text, shown := r.render(nil, MaxOutput-contextOverhead(event))
	ans := Answer{Told: shown, Untold: len(missing(r.keys(), newSet(shown))) > 0}
	if text != "" {
		ans.Text, ans.Shown = contextJSON(event, text), shown
	}
	return ans
}

// news tells only the lines the session has not been told yet.
func news(event string, r report, seen Seen) Answer {
	text, shown := r.render(newSet(seen.Told), MaxOutput-contextOverhead(event))
	// Keep what is still current, so the record never outgrows the state.
	current := newSet(r.keys())
	var told []string
	for _, k := range seen.Told {
		if current[k] {
			told = append(told, k)
		}
	}
	told = append(told, shown...)
	ans := Answer{Told: told, Blocked: seen.Blocked, Untold: len(missing(r.keys(), newSet(told))) > 0}
	if text != "" {
		ans.Text, ans.Shown = contextJSON(event, text), shown
	}
	return ans
}

// block is how a Stop block and a wake report: only when a peer waits on
// the session and the session was not stopped or woken for that same
// state before. report renders the fresh blocking keys and returns the
// keys of the summary lines it quotes: the model reads them, so the next
// prompt need not repeat them.
func block(p store.Pending, seen Seen, report func(fresh []string) (text string, shown []string)) Answer {
	now := seen.Now
	if now.IsZero() {
		now = time.Now()
	}
	d := Decide(p, seen.Blocked, seen.Wakes, seen.Limit, now)
	// What is held back stays unreported, so that it wakes the party
	// once its sender may again; a wake for anything else reports it
	// too (the report holds the whole summary): gathered into that wake.
	ans := Answer{Told: seen.Told, Blocked: missing(d.Keys, newSet(d.Held)), Decision: d}
	if len(d.Fresh) == 0 {
		return ans
	}
	text, shown := report(d.Fresh)
	ans.Text, ans.Shown = text, shown
	ans.Blocked = d.Keys
	ans.Told = slices.Concat(seen.Told, missing(shown, newSet(seen.Told)))
	return ans
}

// blockingKeys names what makes a peer wait on this session: per channel
// the newest unread say, ask or reply from a peer, every item that needs
// this party's ack (once more when it is overdue), its own overdue
// items the ladder woke it to decide on, and the claims it was refused
// that ended lately (freedKeys). Unread events, the party's own answered
// items and pending prune-oks do not block.
func blockingKeys(p store.Pending) []string {
	var out []string
	for _, c := range p.Channels {
		if c.NewestTalk > 0 {
			out = append(out, talkKey(c))
		}
	}
	for _, w := range p.WaitingOnMe {
		switch w.Needs {
		case store.NeedAck:
			out = append(out, ackKey(w))
			if overdue(w) {
				out = append(out, overdueKey(w)) // blocks and wakes once more
			}
		case store.NeedDecide:
			out = append(out, decideKey(w))
		}
	}
	return append(out, freedKeys(p)...)
}

func talkKey(c store.ChannelPending) string {
	return fmt.Sprintf("talk/%s/%d", c.Channel, c.NewestTalk)
}

func ackKey(w store.WaitingOnMe) string { return fmt.Sprintf("ack/%s/%d", w.Channel, w.Seq) }

const (
	stopIntro = "A peer is waiting on this session."
	stopTodo  = "What to do before stopping: call chat_inbox, then chat_read; answer from your own repository " +
		"(chat_reply to an item or message, chat_say for chatter); chat_ack an item that needs no answer."
)

// stopReason is the text a Stop block (or a wake) gives the model, and
// the keys of the summary lines it holds; reserve is what the rest of the
// output costs.
func stopReason(r report, reserve int) (string, []string) {
	text, shown := r.render(nil, MaxOutput-reserve-cost(stopIntro)-cost(stopTodo)-len(`{"decision":"block","reason":""}`))
	return stopIntro + "\n" + text + "\n" + stopTodo, shown
}

func contextOverhead(event string) int {
	return len(contextJSON(event, ""))
}

// contextOutput is the SessionStart / UserPromptSubmit output shape: the
// text is added to the model's context.
type contextOutput struct {
	HookSpecificOutput struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// blockOutput is the Stop output shape that keeps the session working; the
// reason is what the model reads, and Claude Code also shows it to the
// person at the terminal, labelled "Stop hook reported a problem". The
// systemMessage is the one line meant for that person (Claude Code shows
// it, the model does not get it; Codex's Stop output accepts it too).
type blockOutput struct {
	Decision      string `json:"decision"`
	Reason        string `json:"reason"`
	SystemMessage string `json:"systemMessage,omitempty"`
}

func contextJSON(event, text string) string {
	var out contextOutput
	out.HookSpecificOutput.HookEventName = event
	out.HookSpecificOutput.AdditionalContext = text
	return encode(out)
}

func blockJSON(reason, message string) string {
	return encode(blockOutput{Decision: "block", Reason: reason, SystemMessage: message})
}

func encode(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return b.String()
}
