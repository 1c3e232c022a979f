package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

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
	for _, e := range []string{SessionStart, UserPromptSubmit, Stop} {
		if strings.EqualFold(name, e) {
			return e
		}
	}
	return name
}

// Respond is what the hook prints for event, given what is pending. st is
// the session's state (nil without a session id); Respond updates it.
// An empty result means print nothing.
func Respond(event string, pl Payload, p store.Pending, st *State) string {
	r := newReport(p)
	switch event {
	case SessionStart:
		return sessionStart(event, r, st)
	case UserPromptSubmit:
		if st == nil {
			return sessionStart(event, r, nil)
		}
		return promptSubmit(event, r, st)
	case Stop:
		if pl.StopHookActive {
			return ""
		}
		return stop(r, p, st)
	}
	text, _ := r.render(nil, MaxOutput)
	return text
}

// sessionStart gives the full picture and starts the session's record
// afresh (a cleared or compacted context has forgotten what it was told).
func sessionStart(event string, r report, st *State) string {
	text, shown := r.render(nil, MaxOutput-contextOverhead(event))
	if st != nil {
		st.Told, st.Blocked = shown, nil
	}
	if text == "" {
		return ""
	}
	return contextJSON(event, text)
}

// promptSubmit injects only the lines this session has not been told yet.
func promptSubmit(event string, r report, st *State) string {
	told := newSet(st.Told)
	text, shown := r.render(told, MaxOutput-contextOverhead(event))
	// Keep what is still current, so the record never outgrows the state.
	current := newSet(r.keys())
	var keep []string
	for _, k := range st.Told {
		if current[k] {
			keep = append(keep, k)
		}
	}
	st.Told = append(keep, shown...)
	if text == "" {
		return ""
	}
	return contextJSON(event, text)
}

// stop blocks only when a peer waits on this session and the session has
// not been stopped for that same state before.
func stop(r report, p store.Pending, st *State) string {
	keys := blockingKeys(p)
	if st == nil {
		st = &State{}
	}
	fresh := missing(keys, newSet(st.Blocked))
	st.Blocked = keys
	if len(fresh) == 0 {
		return ""
	}
	message := headline(p, fresh)
	reason, shown := stopReason(r, cost(message)+len(`,"systemMessage":""`))
	st.tell(shown) // the model reads the reason: the next prompt need not repeat it
	return blockJSON(reason, message)
}

// blockingKeys names what makes a peer wait on this session: per channel
// the newest unread say, ask or reply from a peer, and every item that
// needs this party's ack. Unread events, the party's own answered items
// and pending prune-oks do not block.
func blockingKeys(p store.Pending) []string {
	var out []string
	for _, c := range p.Channels {
		if c.NewestTalk > 0 {
			out = append(out, talkKey(c))
		}
	}
	for _, w := range p.WaitingOnMe {
		if w.Needs == store.NeedAck {
			out = append(out, ackKey(w))
		}
	}
	return out
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
