package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var stop = []Hook{{Event: "Stop", Command: "/x/mcpp-chat-hook --event Stop", Timeout: 10}}

func TestMergeRefusesShapesItCannotExtend(t *testing.T) {
	for doc, want := range map[string]string{
		`[]`:                          "want an object",
		`{"hooks": []}`:               `"hooks" is not a JSON object`,
		`{"hooks": {"Stop": {}}}`:     "hooks.Stop is not a JSON array",
		`{"a": 1} {"b": 2}`:           "after top-level value",
		"{\"a\": 1,\n}":               "line 2",
		`{"hooks": {"Stop": [1, 2]}}`: "",
	} {
		_, _, err := Merge([]byte(doc), stop)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v (groups it cannot read are someone else's; ours is appended)", doc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", doc, err, want)
		}
	}
}

func TestMergeUnchangedReturnsTheSameBytes(t *testing.T) {
	doc := []byte("{\"hooks\":{\"Stop\":[{\"hooks\":[{\"command\":\"/x/mcpp-chat-hook --event Stop\"}]}]}, \"z\": 1}")
	out, changes, err := Merge(doc, stop)
	if err != nil || !bytes.Equal(out, doc) || changes[0].Action != Kept {
		t.Fatalf("out %s, changes %+v, err %v", out, changes, err)
	}
}

func TestMergeFileKeepsASymlinkedSettingsFile(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "settings.json")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(`{"theme": "dark"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "settings.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := MergeFile(link, stop); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	data, _ := os.ReadFile(real)
	if !strings.Contains(string(data), `"theme": "dark"`) || !strings.Contains(string(data), "mcpp-chat-hook") {
		t.Errorf("target = %s", data)
	}
}

func TestTemplateIsWhatMergeWritesIntoNothing(t *testing.T) {
	want := "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"/x/mcpp-chat-hook --event Stop\",\n            \"timeout\": 10\n          }\n        ]\n      }\n    ]\n  }\n}\n"
	if got := string(Template(stop)); got != want {
		t.Errorf("template:\n%s\nwant:\n%s", got, want)
	}
}

// Two entries of one hook (what an older setup and a hand-written prefix
// left) become one; the first is updated in place, its group kept.
func TestMergeKeepsOneEntryPerHook(t *testing.T) {
	doc := `{"hooks": {"Stop": [
	  {"matcher": "", "hooks": [{"type": "command", "command": "/old/mcpp-chat-hook --event Stop", "timeout": 10}]},
	  {"hooks": [{"type": "command", "command": "echo mine"}, {"type": "command", "command": "DB=x /old/mcpp-chat-hook --event Stop"}]},
	  {"hooks": [{"type": "command", "command": "DB=y /old/mcpp-chat-hook --event Stop"}]}
	]}}`
	h := stop[0]
	h.Match = func(cmd string) (string, bool) { return h.Command, strings.Contains(cmd, "mcpp-chat-hook") }
	out, changes, err := Merge([]byte(doc), []Hook{h})
	if err != nil {
		t.Fatal(err)
	}
	if changes[0].Action != Updated || changes[0].Duplicates != 2 {
		t.Errorf("changes = %+v", changes)
	}
	var got struct {
		Hooks map[string][]map[string]any `json:"hooks"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	groups := got.Hooks["Stop"]
	if len(groups) != 2 || groups[0]["matcher"] != "" || fmt.Sprint(groups[0]["hooks"]) != "[map[command:/x/mcpp-chat-hook --event Stop timeout:10 type:command]]" ||
		fmt.Sprint(groups[1]["hooks"]) != "[map[command:echo mine type:command]]" {
		t.Errorf("Stop = %v", groups)
	}
}

// An UpdateOnly hook is updated where it is and never added.
func TestMergeUpdateOnly(t *testing.T) {
	h := Hook{Event: "Stop", Command: "/x/mcpp-chat-hook --wait", UpdateOnly: true,
		Match: func(cmd string) (string, bool) { return "/x/mcpp-chat-hook --wait", strings.HasSuffix(cmd, "--wait") }}
	out, changes, err := Merge([]byte(`{"a": 1}`), []Hook{h})
	if err != nil || changes[0].Action != Absent || string(out) != `{"a": 1}` {
		t.Errorf("absent: %s %+v %v", out, changes, err)
	}
	out, changes, _ = Merge([]byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/old/mcpp-chat-hook --wait"}]}]}}`), []Hook{h})
	if changes[0].Action != Updated || !strings.Contains(string(out), `"/x/mcpp-chat-hook --wait"`) {
		t.Errorf("present: %s %+v", out, changes)
	}
}

func TestRemoveDropsOnlyWhatMatches(t *testing.T) {
	doc := `{"z": 1, "hooks": {
	  "Stop": [{"hooks": [{"type": "command", "command": "ours"}]}],
	  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}, {"type": "command", "command": "ours"}]}],
	  "Other": [{"hooks": [{"type": "prompt", "prompt": "ours?"}]}, 7]
	}}`
	out, changes, err := Remove([]byte(doc), func(_, cmd string) bool { return cmd == "ours" })
	if err != nil || len(changes) != 2 || changes[0].Action != Removed {
		t.Fatalf("changes %+v, err %v", changes, err)
	}
	want := `{"z":1,"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"guard"}]}],"Other":[{"hooks":[{"type":"prompt","prompt":"ours?"}]},7]}}`
	var compact bytes.Buffer
	json.Compact(&compact, out)
	if compact.String() != want {
		t.Errorf("got  %s\nwant %s", compact.String(), want)
	}
	same, changes, _ := Remove([]byte(want), func(_, cmd string) bool { return cmd == "ours" })
	if len(changes) != 0 || string(same) != want {
		t.Errorf("nothing to remove changed the document: %s", same)
	}
}

// The backup MergeFile makes is a file of its own: a symlink planted at
// settings.json.bak is replaced, not written through.
func TestMergeFileDoesNotWriteTheBackupThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(path, []byte(`{"theme": "dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(target, []byte("precious data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path+".bak"); err != nil {
		t.Fatal(err)
	}
	if _, backup, err := MergeFile(path, stop); err != nil || backup != path+".bak" {
		t.Fatalf("MergeFile: backup %q, %v", backup, err)
	}
	if data, _ := os.ReadFile(target); string(data) != "precious data\n" {
		t.Fatalf("the symlink's target was overwritten: %q", data)
	}
	if data, _ := os.ReadFile(path + ".bak"); string(data) != `{"theme": "dark"}` {
		t.Fatalf("backup = %q", data)
	}
}

// Taking out our last hook takes out the table it leaves empty: no
// `"hooks": {}` is left behind in the user's file.
func TestRemoveLeavesNoEmptyTable(t *testing.T) {
	doc := `{"z": 1, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "ours"}]}]}}`
	out, _, err := Remove([]byte(doc), func(_, cmd string) bool { return cmd == "ours" })
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	json.Compact(&compact, out)
	if compact.String() != `{"z":1}` {
		t.Errorf("got %s, want {\"z\":1}", compact.String())
	}
}

// A settings file that held only our hooks (one MergeFile created) is
// removed by RemoveFile, its last version kept in the .bak; a file with
// anything else in it stays.
func TestRemoveFileRemovesAFileItEmptied(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	if _, _, err := MergeFile(path, stop); err != nil {
		t.Fatal(err)
	}
	created, _ := os.ReadFile(path)
	ours := func(_, cmd string) bool { return strings.Contains(cmd, "mcpp-chat-hook") }
	changes, backup, deleted, err := RemoveFile(path, ours)
	if err != nil || len(changes) != 1 || !deleted || backup != path+".bak" {
		t.Fatalf("changes %+v, backup %q, deleted %v, err %v", changes, backup, deleted, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the file is still there: %v", err)
	}
	if bak, _ := os.ReadFile(backup); !bytes.Equal(bak, created) {
		t.Errorf("the .bak is not the file as it was:\n%s", bak)
	}

	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"theme": "dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	MergeFile(other, stop)
	if _, _, deleted, err := RemoveFile(other, ours); err != nil || deleted {
		t.Fatalf("deleted %v, err %v: the file holds the user's theme", deleted, err)
	}
	if data, _ := os.ReadFile(other); strings.TrimSpace(string(data)) != "{\n  \"theme\": \"dark\"\n}" {
		t.Errorf("left %q", data)
	}
}

// A Drop hook takes every entry of it out and adds none.
func TestMergeDrop(t *testing.T) {
	doc := `{"hooks": {"Stop": [
	  {"hooks": [{"type": "command", "command": "keep"}, {"type": "command", "command": "/a/waiter"}]},
	  {"hooks": [{"type": "command", "command": "/b/waiter"}]}
	]}}`
	waiter := Hook{Event: "Stop", Drop: true, Match: func(cmd string) (string, bool) { return cmd, strings.HasSuffix(cmd, "/waiter") }}
	out, changes, err := Merge([]byte(doc), []Hook{waiter})
	if err != nil || len(changes) != 1 || changes[0].Action != Removed || changes[0].Duplicates != 1 {
		t.Fatalf("changes %+v, err %v", changes, err)
	}
	var compact bytes.Buffer
	json.Compact(&compact, out)
	if want := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"keep"}]}]}}`; compact.String() != want {
		t.Errorf("got  %s\nwant %s", compact.String(), want)
	}
	same, changes, _ := Merge(out, []Hook{waiter})
	if !bytes.Equal(same, out) || changes[0].Action != Absent {
		t.Errorf("nothing to drop: changes %+v, document changed: %s", changes, same)
	}
}

// An idle wake entry that lost its asyncRewake flag would run in the
// foreground and hold every stop: merging the hook puts the flag back.
func TestMergeRestoresAsyncRewake(t *testing.T) {
	doc := `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/x/mcpp-chat-hook --event Stop --wait", "timeout": 3660}]}]}}`
	waiter := Hook{Event: "Stop", Command: "/x/mcpp-chat-hook --event Stop --wait", AsyncRewake: true, UpdateOnly: true}
	out, changes, err := Merge([]byte(doc), []Hook{waiter})
	if err != nil || changes[0].Action != Updated {
		t.Fatalf("changes %+v, err %v", changes, err)
	}
	if !strings.Contains(string(out), `"asyncRewake": true`) {
		t.Errorf("the flag is not back:\n%s", out)
	}
}
