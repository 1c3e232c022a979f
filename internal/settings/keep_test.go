package settings

import (
	"encoding/json"
	"strings"
	"testing"
)

// Settings files as people lay them out by hand: four spaces, tabs, short
// arrays on one line, CRLF, hooks of their own or none.
var handFormatted = []string{
	"{\n    \"model\": \"opus\",\n    \"permissions\": { \"allow\": [\"Bash(make test)\", \"Read\"] },\n    \"env\": {\"A\":\"1\"}\n}\n",
	"{\n\t\"theme\": \"dark\",\n\t\"hooks\": {\n\t\t\"Stop\": [ { \"hooks\": [ { \"type\": \"command\", \"command\": \"notify-send done\" } ] } ],\n\t\t\"PreToolUse\": [\n\t\t\t{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"/usr/local/bin/guard\"}]}\n\t\t]\n\t}\n}",
	"{\r\n  \"model\" : \"opus\" ,\r\n  \"hooks\" : {\r\n    \"Stop\" : [\r\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"echo \\u003cok\\u003e\"}]}\r\n    ]\r\n  }\r\n}\r\n",
	"{\n  \"hooks\": {}, \"statusLine\": {\"type\": \"command\", \"command\": \"~/bin/status\"}\n}\n",
}

var ours = []Hook{
	{Event: "SessionStart", Command: "/x/mcpp-chat-hook --event SessionStart", Timeout: 10},
	{Event: "Stop", Command: "/x/mcpp-chat-hook --event Stop", Timeout: 10},
}

func isOurs(_, cmd string) bool { return strings.Contains(cmd, "mcpp-chat-hook") }

// Merging our hooks keeps the person's layout where nothing changed:
// every line of theirs that holds no list we add to stays byte for byte,
// ours are indented as their lines are, and taking ours out again gives
// back their file byte for byte.
func TestMergeKeepsAHandWrittenLayout(t *testing.T) {
	for _, doc := range handFormatted {
		merged, _, err := Merge([]byte(doc), ours)
		if err != nil {
			t.Fatal(err)
		}
		var got, want map[string]any
		if err := json.Unmarshal(merged, &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, merged)
		}
		json.Unmarshal([]byte(doc), &want)
		for k, v := range want {
			if k != "hooks" && !jsonEqual(got[k], v) {
				t.Errorf("%s changed: %v", k, got[k])
			}
		}
		kept := 0
		for _, line := range strings.Split(doc, "\n") {
			if strings.Contains(string(merged), line) {
				kept++
			}
		}
		if lines := strings.Count(doc, "\n") + 1; kept < lines-2 { // the closing lines of a list we add to may move
			t.Errorf("only %d of %d lines kept as written:\n%s\n---\n%s", kept, lines, doc, merged)
		}
		if strings.Contains(doc, "\r\n") && strings.Count(string(merged), "\n") != strings.Count(string(merged), "\r\n") {
			t.Errorf("lines added without the file's CRLF:\n%q", merged)
		}
		if strings.Contains(doc, "\n\t") && !strings.Contains(string(merged), "\n\t\t\"SessionStart\": [\n\t\t\t{") {
			t.Errorf("ours are not indented as the file is:\n%s", merged)
		}
		removed, _, err := Remove(merged, isOurs)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(doc, `"hooks": {}`) {
			continue // an empty hooks table emptied again is taken out
		}
		if string(removed) != doc {
			t.Errorf("--write then --remove:\n%s\nwant the person's file byte for byte:\n%s", removed, doc)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// A document on one line has no layout to keep: it is written as Claude
// Code writes its files.
func TestMergeIndentsAOneLineDocument(t *testing.T) {
	out, _, err := Merge([]byte(`{"theme": "dark"}`), ours[:1])
	if err != nil || !strings.HasPrefix(string(out), "{\n  \"theme\": \"dark\",\n  \"hooks\": {\n") {
		t.Errorf("%v\n%s", err, out)
	}
}

// The judge of a settings edit: a key outside "hooks", or a hook entry
// that is not ours, changed or gone is refused; ours may change.
func TestKeptOthersJudgesAnEdit(t *testing.T) {
	before := `{"model": "opus", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}, {"type": "command", "command": "/old/mcpp-chat-hook"}]}]}}`
	for after, want := range map[string]string{
		`{"model": "opus", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}, {"type": "command", "command": "/x/mcpp-chat-hook"}]}]}}`: "",
		`{"model": "opus", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}]}]}}`:                                                      "",
		`{"model": "sonnet", "hooks": {}}`: `"model"`,
		`{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}`:                "not mcpp-chat's",
		`{"model": "opus", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send gone"}]}]}}`: "not mcpp-chat's",
		`{"model": "opus", "hooks": {}}`: "not mcpp-chat's",
	} {
		err := keptOthers([]byte(before), []byte(after), isOurs)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("after %s: %v, want %q", after, err, want)
		}
	}
}
