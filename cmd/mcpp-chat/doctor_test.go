package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runDoctor(t *testing.T, home string, args ...string) (code int, stdout string) {
	t.Helper()
	env := map[string]string{"HOME": home, "MCPP_CHAT_DB": filepath.Join(home, "chat.db"), "MCPP_CHAT_WORKSPACE": home,
		"XDG_DATA_HOME": filepath.Join(home, ".local", "share")}
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"doctor"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
	return code, out.String() + errb.String()
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// doctor says whether the hooks it finds would load and run.
func TestDoctorChecksTheHooks(t *testing.T) {
	dir := fakeInstall(t, true)
	hook := filepath.Join(dir, "bin", "mcpp-chat-hook")
	stop := `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": %s, "timeout": 10}]}]}}`
	cases := []struct {
		name, settings string
		code           int
		want           string
	}{
		{"ours, working", strings.Replace(stop, "%s", `"'`+hook+`' --event Stop"`, 1), exitOK, "hooks:       Stop in "},
		{"with a variable prefix", strings.Replace(stop, "%s", `"MCPP_CHAT_DB=/srv/chat.db '`+hook+`' --event Stop"`, 1), exitOK, "hooks:       Stop in "},
		{"what setup hooks printed before its notes went to stderr", "# Claude Code hooks\n" + strings.Replace(stop, "%s", `"x"`, 1), exitError, "not valid JSON (line 1"},
		{"wrong shape", `{"hooks": {"Stop": {"command": "x"}}}`, exitError, "hooks.Stop is not a list"},
		{"hook binary missing", strings.Replace(stop, "%s", `"/gone/bin/mcpp-chat-hook --event Stop"`, 1), exitError, "/gone/bin/mcpp-chat-hook is missing — run make build"},
		{"none of ours", strings.Replace(stop, "%s", `"notify-send done"`, 1), exitOK, "none of mcpp-chat's"},
	}
	for _, c := range cases {
		home := t.TempDir()
		writeFile(t, filepath.Join(home, ".claude", "settings.json"), c.settings, 0o600)
		code, out := runDoctor(t, home)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, want %d and %q in:\n%s", c.name, code, c.code, c.want, out)
		}
	}

	home := t.TempDir()
	if code, out := runDoctor(t, home); code != exitOK || !strings.Contains(out, "hooks:       none (no ") {
		t.Errorf("no settings file: exit %d\n%s", code, out)
	}
	if code, out := runDoctor(t, home, "--settings", filepath.Join(home, "missing.json")); code != exitError || !strings.Contains(out, "cannot read") {
		t.Errorf("a named settings file that is missing: exit %d\n%s", code, out)
	}
	if err := os.Chmod(hook, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(home, "hooks.json")
	writeFile(t, file, strings.Replace(stop, "%s", `"'`+hook+`' --event Stop"`, 1), 0o600)
	if code, out := runDoctor(t, home, "--settings", file); code != exitError || !strings.Contains(out, "is not an executable file — run: chmod +x") {
		t.Errorf("a hook binary that is not executable: exit %d\n%s", code, out)
	}
}

// What `setup hooks` prints, saved to a file, is a settings file doctor
// finds every hook in.
func TestDoctorLoadsWhatSetupPrinted(t *testing.T) {
	fakeInstall(t, true)
	home := t.TempDir()
	_, printed, _ := runSetup(t, home, "hooks", "--wake")
	file := filepath.Join(home, "hooks.json")
	writeFile(t, file, printed, 0o600)
	code, out := runDoctor(t, home, "--settings", file)
	if code != exitOK || !strings.Contains(out, "hooks:       SessionStart, Stop, Stop (idle wake), UserPromptSubmit in "+file) {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestShellWords(t *testing.T) {
	cases := map[string][]string{
		`/a/b --event Stop`:                     {"/a/b", "--event", "Stop"},
		`'/my dir/hook' --x`:                    {"/my dir/hook", "--x"},
		`"/my \"q\" dir/hook"`:                  {`/my "q" dir/hook`},
		`/my\ dir/hook`:                         {"/my dir/hook"},
		`A=1 B='x y' '/it'\''s/mcpp-chat-hook'`: {"A=1", "B=x y", "/it's/mcpp-chat-hook"},
	}
	for in, want := range cases {
		if got := shellWords(in); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("shellWords(%q) = %q, want %q", in, got, want)
		}
	}
	if prog, ours := hookProgram(`A=1 B='x y' '/it'\''s/mcpp-chat-hook' --event Stop`); !ours || prog != "/it's/mcpp-chat-hook" {
		t.Errorf("hookProgram = %q, %v", prog, ours)
	}
}
