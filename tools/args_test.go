package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckArgs(t *testing.T) {
	t.Parallel()
	m, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tool, args string
		want       string // "" = accepted; else a phrase of the error
	}{
		{"chat_read", `{}`, ""},
		{"chat_read", ``, ""},
		{"chat_read", `null`, ""},
		{"chat_read", `{"limit": 500, "since": 0, "peek": true}`, ""},
		{"chat_read", `{"limit": 5.0}`, ""},
		{"chat_read", `{"channel": null}`, ""},
		{"chat_read", `{"limit": 0}`, "`limit` is 0, out of range — pass a whole number from 1 to 500"},
		{"chat_read", `{"limit": 501}`, "from 1 to 500"},
		{"chat_read", `{"limit": 1.5}`, "`limit` must be a whole number"},
		{"chat_read", `{"limit": "50"}`, "`limit` must be a whole number, not a string"},
		{"chat_read", `{"since": -1}`, "at least 0"},
		{"chat_read", `{"peek": "yes"}`, "`peek` must be true or false"},
		{"chat_read", `{"chanel": "x"}`, "chat_read has no argument `chanel` — use only: archived, body_offset, channel, limit, peek, since"},
		{"chat_read", `[1, 2]`, "must be a JSON object"},
		{"chat_read", `"x"`, "must be a JSON object"},
		{"chat_read", `{"limit": 5`, "must be a JSON object"},
		{"chat_wait", `{"seconds": 0}`, "from 1 to 20"},
		{"chat_wait", `{"seconds": 99}`, "from 1 to 20"},
		{"chat_say", `{}`, "chat_say needs `text`"},
		{"chat_say", `{"text": ["a"]}`, "`text` must be a string, not a list"},
		{"chat_say", `{"text": {"a": 1}}`, "`text` must be a string, not an object"},
		{"chat_say", `{"text": "` + strings.Repeat("x", 101) + `"}`, "over the 100-byte limit (chat.max_body_bytes)"},
		{"chat_ask", `{"title": "t", "body": "b", "consumers": "node-dash"}`, "`consumers` must be a list"},
		{"chat_ask", `{"title": "t", "body": "b", "consumers": [1]}`, "`consumers` item 1 must be a non-empty string"},
		{"chat_channel_new", `{"name": "x", "parties": [""]}`, "non-empty string"},
		{"chat_inbox", `{"x": 1}`, "chat_inbox has no argument `x`"},
	}
	for _, c := range cases {
		tool, ok := m.Tool(c.tool)
		if !ok {
			t.Fatalf("no tool %s", c.tool)
		}
		_, err := checkArgs(tool, json.RawMessage(c.args), 100)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: refused: %v", c.tool, c.args, err)
		case c.want != "" && err == nil:
			t.Errorf("%s %s: accepted, want %q", c.tool, c.args, c.want)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s %s: error %q lacks %q", c.tool, c.args, err, c.want)
		}
	}
}

func TestInvalidUTF8Refused(t *testing.T) {
	t.Parallel()
	m, _ := LoadManifest()
	tool, _ := m.Tool("chat_say")
	if _, err := checkArgs(tool, json.RawMessage("{\"text\": \"\xff\"}"), 100); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}

func TestClean(t *testing.T) {
	t.Parallel()
	in := "red \x1b[31mALERT\x1b[0m bell\a osc \x1b]0;title\x07 ok\ttab\nline\r\x00\x7f\u0085"
	if got, want := Clean(in), "red ALERT bell osc  ok\ttab\nline"; got != want {
		t.Fatalf("Clean = %q, want %q", got, want)
	}
	if got := OneLine("a\n b  \x1b[1mc", 80); got != "a b c" {
		t.Fatalf("OneLine = %q", got)
	}
	if got := OneLine(strings.Repeat("é", 10), 5); got != "éééé…" {
		t.Fatalf("OneLine cut = %q", got)
	}
}

// A whole number written 50.0 or 1e2 is an integer to JSON Schema, and
// passed the check, then failed to decode with a Go error; it is the
// number it says. One too large for any count is refused with a sentence.
func TestWholeNumbersInAnyNotationDecode(t *testing.T) {
	t.Parallel()
	m, _ := LoadManifest()
	tool, _ := m.Tool("chat_read")
	for raw, want := range map[string]int{`{"limit": 50.0}`: 50, `{"limit": 1e2}`: 100, `{"limit": 2.5e1}`: 25, `{"limit": 500}`: 500} {
		args, err := checkArgs(tool, json.RawMessage(raw), 100)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		var got readArgs
		if err := json.Unmarshal(args, &got); err != nil || got.Limit == nil || *got.Limit != want {
			t.Errorf("%s: limit %v (%v), want %d", raw, got.Limit, err, want)
		}
	}
	_, err := checkArgs(tool, json.RawMessage(`{"since": 1e20}`), 100)
	if err == nil || !strings.Contains(err.Error(), "`since` is 1e20, out of range — pass a whole number of at least 0") {
		t.Errorf("since 1e20: %v", err)
	}
}
