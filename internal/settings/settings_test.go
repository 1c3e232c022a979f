package settings

import (
	"bytes"
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
