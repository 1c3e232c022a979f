package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setup hooks --write on a hand-formatted settings.json keeps the person's
// lines as they wrote them (four spaces here, a short list on one line);
// only what it adds is laid out afresh, indented as the file is.
func TestSetupHooksKeepsAHandFormattedFile(t *testing.T) {
	fakeInstall(t, true)
	mine := "{\n    \"model\": \"opus\",\n    \"permissions\": { \"allow\": [\"Bash(make test)\", \"Read\"] },\n    \"env\": {\"A\":\"1\"}\n}\n"
	file := filepath.Join(t.TempDir(), "settings.json")
	writeFile(t, file, mine, 0o600)
	if code, out, errs := runSetup(t, t.TempDir(), "hooks", "--write", "--settings", file); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(data), "{\n    \"model\": \"opus\",\n    \"permissions\": { \"allow\": [\"Bash(make test)\", \"Read\"] },\n    \"env\": {\"A\":\"1\"},\n    \"hooks\": {\n        \"SessionStart\": [\n") {
		t.Errorf("the person's layout changed:\n%s", data)
	}
	if code, out, errs := runSetup(t, t.TempDir(), "hooks", "--remove", "--settings", file); code != 0 {
		t.Fatalf("--remove: exit %d\n%s%s", code, out, errs)
	}
	if data, _ := os.ReadFile(file); string(data) != mine {
		t.Errorf("--write then --remove:\n%s\nwant the person's file byte for byte:\n%s", data, mine)
	}
}

// A read-only settings file, and a symlink that leads nowhere, are not
// setup's to replace: refused, untouched; a symlink that leads to a file
// is written through and stays a link.
func TestSetupHooksRefusesReadOnlyAndDanglingFiles(t *testing.T) {
	fakeInstall(t, true)
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro.json")
	writeFile(t, ro, "{}\n", 0o444)
	code, _, errs := runSetup(t, t.TempDir(), "hooks", "--write", "--settings", ro)
	if data, _ := os.ReadFile(ro); code != exitError || string(data) != "{}\n" || !strings.Contains(errs, "is read-only (mode 0444)") {
		t.Errorf("read-only: exit %d %s\n%s", code, errs, data)
	}
	link := filepath.Join(dir, "settings.json")
	target := filepath.Join(dir, "dotfiles", "claude.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runSetup(t, t.TempDir(), "hooks", "--write", "--settings", link)
	if _, err := os.Stat(target); code != exitError || err == nil || !strings.Contains(errs, "which does not exist") || strings.Count(errs, "run this again") != 1 {
		t.Errorf("a dangling link: exit %d %s", code, errs)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Error("the dangling link was replaced")
	}
}

// Hooks of ours on another chat that works — a team hub's beside a
// personal chat — are the person's: --write and --remove leave them and
// say so; a file that turns every hook off is left, and said to.
func TestSetupHooksLeavesAnotherChatsHooks(t *testing.T) {
	dir := fakeInstall(t, true)
	_, hubHook := otherChat(t)
	theirs := "{\n  \"disableAllHooks\": true,\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"" + hubHook + " --event Stop\"}]}\n    ]\n  }\n}\n"
	file := filepath.Join(t.TempDir(), "settings.json")
	writeFile(t, file, theirs, 0o600)
	code, out, errs := runSetup(t, t.TempDir(), "hooks", "--write", "--no-wake", "--settings", file)
	if code != 0 || !strings.Contains(out, "left as it is: hooks.Stop[0].hooks[0] runs mcpp-chat's hook on the team store https://hub.example") ||
		!strings.Contains(out, `"disableAllHooks": true, so Claude Code runs none of its hooks`) {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	stop := decodeSettings(t, data).commands("Stop")
	if len(stop) != 2 || stop[0] != hubHook+" --event Stop" || !strings.Contains(stop[1], filepath.Join(dir, "bin", "mcpp-chat-hook")) {
		t.Errorf("Stop = %q", stop)
	}
	if code, out, _ := runSetup(t, t.TempDir(), "hooks", "--remove", "--settings", file); code != 0 || !strings.Contains(out, "left as it is") {
		t.Fatalf("--remove: exit %d\n%s", code, out)
	}
	if data, _ := os.ReadFile(file); string(data) != theirs {
		t.Errorf("--remove left\n%s\nwant the hub's hook as it was\n%s", data, theirs)
	}
}
