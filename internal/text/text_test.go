package text

import (
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	cases := map[string]string{
		"plain":                           "plain",
		"keeps\nnew\tlines":               "keeps\nnew\tlines",
		"red \x1b[31mtext\x1b[0m":         "red text",
		"title \x1b]0;pwned\x07 set":      "title  set",
		"osc st \x1b]8;;http://x\x1b\\ok": "osc st ok",
		"bell\x07 nul\x00 del\x7f":        "bell nul del",
		"c1 \u009b31m":                    "c1 31m",
		"cr\r\nlf":                        "cr\nlf",
		"ünïcödé — fine":                  "ünïcödé — fine",
	}
	for in, want := range cases {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("  a\n\n b\t c  ", 80); got != "a b c" {
		t.Errorf("folding: %q", got)
	}
	if got := OneLine("abcdefghij", 5); got != "abcd…" {
		t.Errorf("cut: %q", got)
	}
	if got := OneLine("ääääää", 4); got != "äää…" {
		t.Errorf("cut counts runes: %q", got)
	}
	if got := OneLine("x\x1b[2Jy", 10); got != "xy" {
		t.Errorf("escapes: %q", got)
	}
}

// Direction overrides and other invisible formatting make a peer's text
// read otherwise than it is: "innocent \u202egnp.exe" shows as
// "innocent exe.png". Clean removes them, and keeps what scripts need.
func TestCleanRemovesInvisibleFormatting(t *testing.T) {
	cases := map[string]string{
		"innocent \u202egnp.exe\u202c":      "innocent gnp.exe",
		"\u2066isolate\u2069 \u2067x\u2068": "isolate x",
		"marks \u200e\u200f\u061c":          "marks ",
		"zero\u200bwidth\u2060join\ufeff":   "zerowidthjoin",
		"tag\U000E0041\U000E007F":           "tag",
		"line\u2028para\u2029":              "linepara",
		"emoji 👩\u200d💻 and نیم\u200cفاصله": "emoji 👩\u200d💻 and نیم\u200cفاصله",
	}
	for in, want := range cases {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got := OneLine("a\u202eb", 10); got != "ab" {
		t.Errorf("OneLine keeps an override: %q", got)
	}
}

func BenchmarkCleanDisplay(b *testing.B) {
	display := strings.Repeat("**mesh-gw** #12 ↳ re chunk-api — awaiting ack from node-dash · OPEN\n  a body of a message\n", 300)
	b.SetBytes(int64(len(display)))
	for b.Loop() {
		Clean(display)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 items", 1: "1 item", 2: "2 items", 1000: "1000 items"} {
		if got := Count(n, "item"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
	for word, want := range map[string]string{"party": "2 parties", "key": "2 keys", "y": "2 ys", "live item": "2 live items"} {
		if got := Count(2, word); got != want {
			t.Errorf("Count(2, %q) = %q, want %q", word, got, want)
		}
	}
}
