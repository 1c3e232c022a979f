package text

import "testing"

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
