package settings

import (
	"strings"
	"testing"
)

func TestInspectFindsCommandHooks(t *testing.T) {
	doc := `{"model": "opus", "hooks": {
	  "Stop": [
	    {"hooks": [{"type": "command", "command": "/x/mcpp-chat-hook --event Stop", "timeout": 10}]},
	    {"hooks": [{"type": "command", "command": "/x/mcpp-chat-hook --event Stop --wait --timeout 3600", "asyncRewake": true, "timeout": 3660}]}
	  ],
	  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "is it safe?"}]}]
	}}`
	entries, problems := Inspect([]byte(doc))
	if len(problems) != 0 {
		t.Fatalf("problems: %q", problems)
	}
	if len(entries) != 2 || entries[0].Where != "hooks.Stop[0].hooks[0]" || entries[0].AsyncRewake || !entries[1].AsyncRewake || entries[1].Event != "Stop" {
		t.Fatalf("entries: %+v", entries)
	}
	for _, empty := range []string{"", "  \n", "{}", `{"model": "opus"}`} {
		if entries, problems := Inspect([]byte(empty)); len(entries)+len(problems) != 0 {
			t.Errorf("%q: %+v %q", empty, entries, problems)
		}
	}
}

// What Claude Code would not load is named, with where it is.
func TestInspectNamesWhatWouldNotLoad(t *testing.T) {
	cases := map[string]string{
		"# Claude Code hooks\n{\"hooks\": {}}":                    "not valid JSON (line 1",
		`{"hooks": {}} trailing`:                                  "not valid JSON",
		`["hooks"]`:                                               "not a JSON object",
		`{"hooks": []}`:                                           `"hooks" is not a JSON object`,
		`{"hooks": {"Stop": {"hooks": []}}}`:                      "hooks.Stop is not a list",
		`{"hooks": {"Stop": [{"command": "x"}]}}`:                 `hooks.Stop[0] is not an object with a "hooks" list`,
		`{"hooks": {"Stop": [{"hooks": ["x"]}]}}`:                 "hooks.Stop[0].hooks[0] is not an object",
		`{"hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}}`:    `hooks.Stop[0].hooks[0] has no "type"`,
		`{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}`: `"command" is not a non-empty string`,
		`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": "10"}]}]}}`: `"timeout" is not a positive number`,
	}
	for doc, want := range cases {
		_, problems := Inspect([]byte(doc))
		if len(problems) != 1 || !strings.Contains(problems[0], want) {
			t.Errorf("%s: problems %q, want one containing %q", doc, problems, want)
		}
	}
}
