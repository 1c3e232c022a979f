package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setup hooks prints and writes the edit hook with its matcher; with
// --no-claims it prints none, and --write takes ours out, leaving the
// person's own PreToolUse hooks.
func TestSetupHooksWritesTheEditHook(t *testing.T) {
	dir := fakeInstall(t, true)
	home := t.TempDir()
	edits := "'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "' --event PreToolUse"
	_, out, notes := runSetup(t, home, "hooks")
	var printed struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct{ Command string }
		}
	}
	if err := json.Unmarshal([]byte(out), &printed); err != nil {
		t.Fatal(err)
	}
	if g := printed.Hooks["PreToolUse"]; len(g) != 1 || g[0].Matcher != "Edit|Write|MultiEdit|NotebookEdit" || g[0].Hooks[0].Command != edits || !strings.Contains(notes, "--no-claims") {
		t.Errorf("setup hooks prints %+v\n%s", printed.Hooks["PreToolUse"], notes)
	}
	if _, out, _ := runSetup(t, home, "hooks", "--no-claims"); strings.Contains(out, "PreToolUse") {
		t.Errorf("--no-claims prints the edit hook:\n%s", out)
	}

	file := filepath.Join(t.TempDir(), "settings.json")
	writeFile(t, file, userSettings, 0o600)
	if code, out, errs := runSetup(t, home, "hooks", "--write", "--settings", file); code != 0 || !strings.Contains(out, "PreToolUse       added") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	if !strings.Contains(string(data), `"matcher": "Edit|Write|MultiEdit|NotebookEdit"`) {
		t.Errorf("no matcher for the edit hook:\n%s", data)
	}
	code, out, errs := runSetup(t, home, "hooks", "--write", "--no-claims", "--settings", file)
	if code != 0 || !strings.Contains(out, "PreToolUse       removed") {
		t.Fatalf("--no-claims: exit %d\n%s%s", code, out, errs)
	}
	data, _ = os.ReadFile(file)
	if got := decodeSettings(t, data).commands("PreToolUse"); len(got) != 1 || got[0] != "/usr/local/bin/guard" {
		t.Errorf("after --no-claims PreToolUse = %q, want the person's guard alone", got)
	}
	if code, out, _ := runSetup(t, home, "hooks", "--write", "--no-claims", "--settings", file); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Errorf("again: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"claude", "--no-claims"}, {"mcpp", "--no-claims"}, {"hooks", "--remove", "--no-claims"}} {
		if code, _, errs := runSetup(t, home, args...); code != exitUsage || !strings.Contains(errs, "--no-claims") {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
}

// setup codex writes the edit hook as a [[hooks.PreToolUse]] group with
// its matcher, keeps it as it is the second time, takes it out with
// --no-claims and with --remove; doctor names it among the Codex hooks.
func TestSetupCodexWritesTheEditHook(t *testing.T) {
	dir := fakeInstall(t, true)
	codexHome := t.TempDir()
	env := map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}
	file := filepath.Join(codexHome, "config.toml")
	writeFile(t, file, userCodexConfig, 0o600)
	if code, out, errs := runSetupEnv(t, env, "codex", "--write"); code != 0 || !strings.Contains(out, "PreToolUse hook") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	want := "[[hooks.PreToolUse]]\nmatcher = \"apply_patch|Edit|Write\"\nhooks = [{ type = \"command\", command = \"'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "' --event PreToolUse\", timeout = 10 }]\n"
	if !strings.Contains(string(data), want) {
		t.Errorf("no edit hook group like\n%s\nin\n%s", want, data)
	}
	if code, out, _ := runSetupEnv(t, env, "codex", "--write"); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Errorf("second run: exit %d\n%s", code, out)
	}
	// A group of ours with another matcher is set back.
	writeFile(t, file, strings.Replace(string(data), `matcher = "apply_patch|Edit|Write"`, `matcher = "Edit"`, 1), 0o600)
	if code, out, _ := runSetupEnv(t, env, "codex", "--write"); code != 0 || !strings.Contains(out, "updated: ") {
		t.Errorf("another matcher: exit %d\n%s", code, out)
	}
	if data, _ := os.ReadFile(file); !strings.Contains(string(data), want) {
		t.Errorf("the matcher was not set back:\n%s", data)
	}
	code, out, errs := runSetupEnv(t, env, "codex", "--write", "--no-claims")
	data, _ = os.ReadFile(file)
	if code != 0 || !strings.Contains(out, "PreToolUse hook") || strings.Contains(string(data), "PreToolUse") {
		t.Errorf("--no-claims: exit %d\n%s%s\n%s", code, out, errs, data)
	}
	if code, out, errs := runSetupEnv(t, env, "codex", "--write"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runSetupEnv(t, env, "codex", "--remove"); code != 0 || !strings.Contains(out, "PreToolUse hook") {
		t.Fatalf("--remove: exit %d\n%s%s", code, out, errs)
	}
	if data, _ := os.ReadFile(file); strings.Contains(string(data), "[[hooks.") || !strings.HasPrefix(string(data), "# my Codex") {
		t.Errorf("after --remove:\n%s", data)
	}
}
