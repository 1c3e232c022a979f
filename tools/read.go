package tools

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"

	"github.com/mcpp/mcpp-chat/internal/transcript"
)

type readArgs struct {
	Channel    string `json:"channel"`
	Limit      *int   `json:"limit"`
	Since      *int64 `json:"since"`
	Peek       bool   `json:"peek"`
	Archived   bool   `json:"archived"`
	BodyOffset int    `json:"body_offset"`
}

// readAnswer is chat_read's result: the store's, with the messages as
// delivered and, when the answer budget cut the page, one line saying so
// and the arguments of the call that goes on.
type readAnswer struct {
	Cut string `json:"cut,omitempty"`
	store.ReadResult
	Messages []readMessage  `json:"messages"`
	Next     map[string]any `json:"next,omitempty"`
}

// readMessage is a message as delivered: whole, or one part of a body too
// long for one answer.
type readMessage struct {
	store.Message
	Part *bodyPart `json:"part,omitempty"`
}

// bodyPart places a delivered part in its message's body, in characters.
type bodyPart struct {
	Offset int `json:"offset"` // characters before this part
	Length int `json:"length"`
	Total  int `json:"total"`
}

func read(ctx context.Context, s *Service, a readArgs) (Result, error) {
	limit := s.Config.Chat.ReadLimit
	if a.Limit != nil {
		limit = *a.Limit
	}
	var pg page
	res, err := s.DB.Read(ctx, s.Me, store.ReadArgs{
		Channel: a.Channel, Limit: limit, Since: a.Since, Peek: a.Peek, Archived: a.Archived,
		BodyOffset: a.BodyOffset, DefaultChannel: s.Config.Chat.DefaultChannel,
		Fit: func(r store.ReadResult) int {
			pg = fitPage(r, a, s.budget())
			return pg.whole
		},
	})
	if err != nil {
		return Result{}, err
	}
	ans := pg.answer(res, a)
	return Result{Display: renderRead(ans, a, pg.compact), Value: ans}, nil
}

// page is what one answer carries of the messages a read loaded.
type page struct {
	msgs    []readMessage // delivered; all whole but perhaps the last
	whole   int           // how many of msgs are whole: the cursor may pass them
	loaded  int
	compact bool // bodies in the JSON only, a preview in the display
}

// fitPage fills an answer with the loaded messages, in order, while it
// fits budget. The display shows bodies in full only when every loaded
// message fits that way; otherwise it shows previews and the JSON alone
// carries the text, so that a page holds twice as much. A first message
// that does not fit alone is delivered in parts.
func fitPage(r store.ReadResult, a readArgs, budget int) page {
	msgs := make([]readMessage, len(r.Messages))
	for i, m := range r.Messages {
		msgs[i] = readMessage{Message: m}
	}
	if a.BodyOffset > 0 && len(msgs) > 0 { // the store checked that it goes on with msgs[0]
		msgs[0] = continued(msgs[0], a.BodyOffset)
	}
	pg := page{msgs: msgs, whole: len(msgs), loaded: len(msgs)}
	if fits(r, a, msgs, false, budget) {
		return pg
	}
	pg.compact = true
	room := budget - worstCase(r, a, true)
	n := 0
	for ; n < len(msgs); n++ {
		cost := messageCost(msgs[n], true)
		if cost > room {
			break
		}
		room -= cost
	}
	pg.msgs, pg.whole = msgs[:n], n
	if n == 0 && len(msgs) > 0 {
		pg.msgs = []readMessage{firstPart(msgs[0], room)}
	}
	return pg
}

// fits reports whether every loaded message fits with the given display.
func fits(r store.ReadResult, a readArgs, msgs []readMessage, compact bool, budget int) bool {
	room := budget - worstCase(r, a, compact)
	for _, m := range msgs {
		if room -= messageCost(m, compact); room < 0 {
			return false
		}
	}
	return true
}

// worstCase is the cost of an answer with no messages, with every number
// at its longest and the cut line and next call present: a bound on the
// answer's fixed part, so the messages' own costs add up to the rest.
func worstCase(r store.ReadResult, a readArgs, compact bool) int {
	empty := r
	empty.Messages = nil
	empty.Cursor, empty.FromSeq, empty.More = math.MaxInt64, math.MaxInt64, math.MaxInt
	worst := 0
	for _, partial := range []*readMessage{nil, {Message: store.Message{Seq: math.MaxInt64}, Part: &bodyPart{Offset: math.MaxInt, Length: math.MaxInt, Total: math.MaxInt}}} {
		ans := readAnswer{ReadResult: empty, Messages: []readMessage{}}
		ans.Cut, ans.Next = cutLine(ans, a, math.MaxInt64, math.MaxInt, math.MaxInt, partial)
		data, _ := encodeJSON(ans)
		worst = max(worst, answerSize(renderRead(ans, a, compact), data))
	}
	return worst
}

// messageCost is what one message adds to an answer: its JSON and a
// separator, its display and the blank line before it.
func messageCost(m readMessage, compact bool) int {
	data, _ := encodeJSON(m)
	return jsonSize(data) + 2 + len(renderReadMessage(m, compact)) + 2
}

// continued is m from the offset'th character of its body on: the rest of
// a message an earlier answer delivered in part.
func continued(m readMessage, offset int) readMessage {
	total := utf8.RuneCountInString(m.Body)
	offset = min(offset, total)
	_, m.Body = runePrefix(m.Body, offset)
	m.Part = &bodyPart{Offset: offset, Length: total - offset, Total: total}
	return m
}

// firstPart is as much of m's body as room allows, at least one character.
func firstPart(m readMessage, room int) readMessage {
	offset, total := 0, utf8.RuneCountInString(m.Body)
	if m.Part != nil {
		offset, total = m.Part.Offset, m.Part.Total
	}
	empty := m
	empty.Body = ""
	empty.Part = &bodyPart{Offset: math.MaxInt, Length: math.MaxInt, Total: math.MaxInt}
	part, n := prefixWithin(m.Body, room-messageCost(empty, true)-previewReserve)
	if n == 0 && m.Body != "" {
		_, size := utf8.DecodeRuneInString(m.Body)
		part, n = m.Body[:size], 1
	}
	m.Body = part
	m.Part = &bodyPart{Offset: offset, Length: n, Total: total}
	return m
}

// answer assembles the result once the store has moved the cursor.
func (pg page) answer(r store.ReadResult, a readArgs) readAnswer {
	ans := readAnswer{ReadResult: r, Messages: pg.msgs}
	if ans.Messages == nil {
		ans.Messages = []readMessage{}
	}
	if pg.whole == pg.loaded {
		return ans
	}
	var partial *readMessage
	if n := len(pg.msgs); n > pg.whole {
		partial = &pg.msgs[n-1]
	}
	last := r.FromSeq
	if pg.whole > 0 {
		last = pg.msgs[pg.whole-1].Seq
	}
	ans.Cut, ans.Next = cutLine(ans, a, last, pg.whole, pg.loaded, partial)
	return ans
}

// cutLine says that the budget cut a read, and how to go on: the call
// whose answer starts at the first character this one left out. last is
// the seq of the last whole message delivered.
func cutLine(ans readAnswer, a readArgs, last int64, whole, loaded int, partial *readMessage) (string, map[string]any) {
	next := map[string]any{"channel": ans.Channel}
	if a.Limit != nil {
		next["limit"] = *a.Limit
	}
	if a.Peek {
		next["peek"] = true
	}
	if a.Archived {
		next["archived"] = true
	}
	if partial != nil {
		// since names the message the offset belongs to: another session
		// of the party may move the cursor past it before this call.
		last = partial.Seq - 1
		next["body_offset"] = partial.Part.Offset + partial.Part.Length
	}
	if partial != nil || a.Peek || a.Archived || ans.Cursor != last {
		next["since"] = last
	}
	calls := map[string]any{}
	call := nextCall(calls, "chat_read", next)
	if partial != nil {
		p := partial.Part
		return fmt.Sprintf("%s: message #%d is %d characters, more than one answer holds; characters %d–%d are here. Call %s for the next part%s.",
			cutNote, partial.Seq, p.Total, p.Offset+1, p.Offset+p.Length, call, cursorStays(a, partial.Seq)), calls
	}
	return fmt.Sprintf("%s: %d of the %d messages loaded %s here; %d more %s after #%d. Call %s for the rest.",
		cutNote, whole, loaded, safe.Plural(whole, "is", "are"), ans.More, safe.Plural(ans.More, "waits", "wait"), last, call), calls
}

func cursorStays(a readArgs, seq int64) string {
	if a.Peek || a.Archived {
		return ""
	}
	return fmt.Sprintf(" (your cursor stays before #%d until its last part is read)", seq)
}

func renderRead(ans readAnswer, a readArgs, compact bool) string {
	var b strings.Builder
	if ans.Cut != "" {
		b.WriteString("**" + ans.Cut + "**\n\n")
	}
	what := "live"
	if a.Archived {
		what = "archived"
	}
	fmt.Fprintf(&b, "**#%s** · %s after #%d · %s · with %s", ans.Channel, safe.Count(len(ans.Messages), what+" message"), ans.FromSeq, cursorNote(ans.Cursor, a.Peek || a.Archived), names(ans.Parties))
	for _, slug := range ans.ArchivedByThisRead {
		fmt.Fprintf(&b, "\n_[%s] archived by this read (done + unanimous prune-ok)_", slug)
	}
	if len(ans.Messages) == 0 {
		b.WriteString("\n\nNothing new.")
	}
	for _, m := range ans.Messages {
		b.WriteString("\n\n" + renderReadMessage(m, compact))
	}
	if ans.More > 0 {
		fmt.Fprintf(&b, "\n\n… %d more", ans.More)
	}
	return b.String()
}

// renderReadMessage shows a message in full, or compact: its head line and
// the start of its body (the JSON carries all of it).
func renderReadMessage(m readMessage, compact bool) string {
	if !compact && m.Part == nil {
		return renderMessage(m.Message) + receiptLine(m.Message)
	}
	head, _, _ := strings.Cut(renderMessage(store.Message{
		Channel: m.Channel, Seq: m.Seq, Kind: m.Kind, From: m.From, Slug: m.Slug, Title: m.Title,
		Ref: m.Ref, Status: m.Status, Consumers: m.Consumers, Re: m.Re,
	}), "\n")
	if m.Part != nil {
		head += fmt.Sprintf(" · characters %d–%d of %d", m.Part.Offset+1, m.Part.Offset+m.Part.Length, m.Part.Total)
	}
	line := "  " + OneLine(m.Body, previewChars)
	if n := utf8.RuneCountInString(m.Body); n > previewChars {
		line += fmt.Sprintf(" (%d characters; the JSON has them all)", n)
	}
	return head + "\n" + line + receiptLine(m.Message)
}

// receiptLine is who has read one of your own messages and who not yet,
// each with when our hook or wake told it, when it read, when it acked,
// as the JSON's read_by, unread_by, told_to, read_at and consumers say;
// "" for a peer's message.
func receiptLine(m store.Message) string {
	d := transcript.DeliveryOf(m)
	var parts []string
	if len(m.ReadBy) > 0 {
		parts = append(parts, "seen by "+d.Recipients(m.ReadBy))
	}
	if len(m.UnreadBy) > 0 {
		parts = append(parts, "not yet read by "+d.Recipients(m.UnreadBy))
	}
	if len(parts) == 0 {
		return ""
	}
	return "\n  _" + strings.Join(parts, " · ") + "_"
}

// preview is how many characters of a body a compact display shows;
// previewReserve bounds what that costs (four bytes a character, a
// trailing note).
const (
	previewChars   = 160
	previewReserve = 4*previewChars + 64
)

func cursorNote(cursor int64, kept bool) string {
	if kept {
		return "cursor not moved"
	}
	return fmt.Sprintf("cursor at #%d", cursor)
}
