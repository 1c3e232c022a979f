package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	safe "github.com/mcpp/mcpp-chat/internal/text"
)

// An answer — both text contents, display and JSON — must reach the model
// whole. Claude Code hands the model at most 50,000 characters of one tool
// result (beyond that a 2 KB preview), Codex about 48,000 bytes; what a
// client cuts away the agent never sees, and a read that moved the cursor
// over it has lost those messages. So every answer is measured against
// chat.answer_budget_chars the way the strictest client counts it:
//
//   - the display in UTF-8 bytes (never fewer than Claude Code's UTF-16
//     units, and what Codex counts);
//   - the JSON as an mcpp host writes it (Python's json.dumps): every
//     non-ASCII character escaped (six characters, twelve outside the Basic
//     Multilingual Plane) and a space after each comma and colon.

// answerSize is what an answer costs against the budget.
func answerSize(display string, data []byte) int { return len(display) + jsonSize(data) }

// jsonSize is the length of compact JSON written as json.dumps writes it.
func jsonSize(data []byte) int {
	n := 0
	inString, escaped := false, false
	for i := 0; i < len(data); {
		c := data[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(data[i:])
			i += size
			n += escapedLen(r)
			continue
		}
		i++
		n++
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == ':'):
			n++ // json.dumps's separators are ", " and ": "
		}
	}
	return n
}

// escapedLen is the length of a non-ASCII rune written as \uXXXX escapes.
func escapedLen(r rune) int {
	if r > 0xFFFF {
		return 12
	}
	return 6
}

// runeCost is what one rune of a string costs inside a JSON string.
func runeCost(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20:
		return 6
	case r < utf8.RuneSelf:
		return 1
	}
	return escapedLen(r)
}

// prefixWithin returns the longest prefix of s, in whole runes, whose JSON
// cost is at most room, and how many runes it holds.
func prefixWithin(s string, room int) (string, int) {
	cost, runes := 0, 0
	for i, r := range s {
		if cost+runeCost(r) > room {
			return s[:i], runes
		}
		cost += runeCost(r)
		runes++
	}
	return s, runes
}

// encodeJSON writes the result JSON as clients receive it. HTML characters
// stay as they are: escaped, each < would cost six characters of the budget.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// budget is the configured answer budget.
func (s *Service) budget() int {
	if s.Config.Chat.AnswerBudget > 0 {
		return s.Config.Chat.AnswerBudget
	}
	return defaultBudget
}

// listBudget is the room of a list answer (inbox, wait, whoami,
// channel_list): half the answer budget. A list is an overview the agent
// acts on a few entries at a time, and its next page is one call away;
// 16,000 characters hold a hundred items, and the answer costs the model
// half the context and the server half the encoding (measured:
// chat_inbox with 300 live items 1.0 → 0.66 ms a call over stdio).
func (s *Service) listBudget() int { return s.budget() / 2 }

// defaultBudget serves a Service built without a config (tests).
const defaultBudget = 32000

// cutNote starts the one line that says an answer was cut, in both contents.
const cutNote = "CUT TO FIT ONE ANSWER"

// finish encodes a tool's answer (unless it is already) and, if a tool did not keep within the
// budget itself, cuts it generically: the longest texts first, then the
// longest lists. The tools that can grow with the history (read, inbox,
// whoami, wait, channel_list) fit themselves, with counts and the call that
// shows the rest; this is the net under the answers that echo one text
// (an item's body after an ack, a 64 KiB title after an ask).
func (s *Service) finish(res Result) (Result, error) {
	// Names, channels, folders and titles in the display come from peers:
	// none may drive the user's terminal or reorder what it shows.
	res.Display = safe.Clean(res.Display)
	if res.JSON == nil {
		data, err := encodeJSON(res.Value)
		if err != nil {
			return Result{}, fmt.Errorf("encode the result: %w", err)
		}
		res.JSON = data
	}
	if answerSize(res.Display, res.JSON) <= s.budget() {
		return res, nil
	}
	return shrink(res, s.budget())
}

// shrink cuts an answer generically until it fits budget.
func shrink(res Result, budget int) (Result, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(res.JSON))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return Result{}, fmt.Errorf("decode the result to cut it: %w", err)
	}
	note := fmt.Sprintf("%s: long texts or lists in this answer were shortened to fit %d characters (chat.answer_budget_chars); chat_read shows any message in full.", cutNote, budget)
	display := note + "\n\n" + res.Display
	if len(display) > budget/4 {
		head, _ := prefixWithin(display, budget/4)
		display = head + "…"
	}
	room := budget - len(display)
	// Texts longer than limit are cut to it; halve it until the JSON fits,
	// then cut long lists too (an answer no text cut can save).
	for limit := 4096; ; limit /= 2 {
		cut := cutStrings(v, limit)
		if limit < 64 {
			cut = cutLists(cut, max(limit/8, 1))
		}
		if m, ok := cut.(map[string]any); ok {
			m["cut"] = note
		}
		data, err := encodeJSON(cut)
		if err != nil {
			return Result{}, fmt.Errorf("encode the cut result: %w", err)
		}
		if jsonSize(data) <= room || limit <= 1 {
			return Result{Display: display, Value: cut, JSON: data}, nil
		}
	}
}

// cutStrings copies v with every string longer than limit runes cut to it.
func cutStrings(v any, limit int) any {
	return rebuild(v, func(x any) any {
		s, ok := x.(string)
		if !ok {
			return x
		}
		head, rest := runePrefix(s, limit)
		if rest == "" {
			return s
		}
		return head + fmt.Sprintf("… [cut: %d more characters]", utf8.RuneCountInString(rest))
	})
}

// cutLists copies v with every list longer than keep cut to keep entries.
func cutLists(v any, keep int) any {
	return rebuild(v, func(x any) any {
		if list, ok := x.([]any); ok && len(list) > keep {
			return list[:keep]
		}
		return x
	})
}

// rebuild copies a decoded JSON value, applying change to every value on
// the way down (a list or object is changed before its members are).
func rebuild(v any, change func(any) any) any {
	switch x := change(v).(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = rebuild(e, change)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = rebuild(e, change)
		}
		return out
	default:
		return x
	}
}

// runePrefix splits s after its first n runes.
func runePrefix(s string, n int) (head, rest string) {
	for i := range s {
		if n == 0 {
			return s[:i], s[i:]
		}
		n--
	}
	return s, ""
}

// maxErrorChars bounds an error sentence: one that echoes a long argument
// back would otherwise be as long as the argument.
const maxErrorChars = 2000

// capError shortens an overlong error sentence.
func capError(msg string) string {
	if len(msg) <= maxErrorChars {
		return msg
	}
	head, _ := prefixWithin(msg, maxErrorChars)
	return head + "… (error cut)"
}
