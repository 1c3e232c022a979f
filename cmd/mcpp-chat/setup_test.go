package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/config"
)

// fakeInstall makes a checkout-shaped folder (module.yaml, tool.yaml,
// mcpptool.py, bin/mcpp-chat and, if withHook, bin/mcpp-chat-hook) and
// makes setup believe it is running from it.
func fakeInstall(t *testing.T, withHook bool) (dir string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "mcpp chat") // a space: paths must be quoted
	for _, f := range []string{"module.yaml", "tool.yaml", "mcpptool.py", "bin/mcpp-chat"} {
		touch(t, filepath.Join(dir, f))
	}
	if withHook {
		// A stand-in that answers --version as a hook of this build does.
		hook := filepath.Join(dir, "bin", "mcpp-chat-hook")
		if err := os.WriteFile(hook, []byte("#!/bin/sh\necho mcpp-chat-hook "+version+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := executable
	executable = func() (string, error) { return filepath.Join(dir, "bin", "mcpp-chat"), nil }
	t.Cleanup(func() { executable = old })
	return dir
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o755); err != nil {
		t.Fatal(err)
	}
}

// runSetup runs setup with HOME set and no MCPP_CHAT_* variable: the
// database is the fake install's own, <dir>/chat.db.
func runSetup(t *testing.T, home string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runSetupEnv(t, map[string]string{"HOME": home}, args...)
}

func runSetupEnv(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"setup"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// snippet drops the comment lines a section starts with.
func snippet(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "#") {
			keep = append(keep, l)
		}
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

type settingsDoc struct {
	Hooks map[string][]struct {
		Hooks []struct {
			Type    string `json:"type"`
			Command string `json:"command"`
			Timeout int    `json:"timeout"`
		} `json:"hooks"`
	} `json:"hooks"`
}

func decodeSettings(t *testing.T, data []byte) settingsDoc {
	t.Helper()
	var doc settingsDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	return doc
}

// commands lists every hook command per event.
func (d settingsDoc) commands(event string) []string {
	var out []string
	for _, g := range d.Hooks[event] {
		for _, h := range g.Hooks {
			out = append(out, h.Command)
		}
	}
	return out
}

func TestSetupPrintsEachSnippetWithAbsolutePaths(t *testing.T) {
	dir := fakeInstall(t, true)
	home := t.TempDir()
	exe := "'" + filepath.Join(dir, "bin", "mcpp-chat") + "'"
	hook := "'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "'"

	code, out, errs := runSetup(t, home)
	if code != 0 {
		t.Fatalf("setup: exit %d %s", code, errs)
	}
	for _, want := range []string{
		"claude mcp add --scope user chat -- " + exe + " serve\n",
		"[mcp_servers.chat]\ncommand = \"" + filepath.Join(dir, "bin", "mcpp-chat") + "\"\nargs = [\"serve\"]\n",
		"modules:\n  - path: \"" + dir + "\"\n",
		hook + " --event SessionStart",
		"--no-wake leaves it out", "xperimental", hook + " --event Stop --wait --timeout 3600",
		"# database: " + filepath.Join(dir, "chat.db") + "\n# Every client below finds this chat on its own.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("setup output lacks %q:\n%s", want, out)
		}
	}

	_, claude, _ := runSetup(t, home, "claude")
	if got := snippet(claude); got != "claude mcp add --scope user chat -- "+exe+" serve" {
		t.Errorf("setup claude is not one pasteable command: %q", got)
	}

	_, hooks, _ := runSetup(t, home, "hooks", "--no-wake")
	doc := decodeSettings(t, []byte(hooks)) // as printed: `setup hooks > file` must be a settings file
	for _, ev := range hookEvents {
		g := doc.Hooks[ev]
		if len(g) != 1 || len(g[0].Hooks) != 1 {
			t.Fatalf("%s: want one group with one hook, got %+v", ev, g)
		}
		h := g[0].Hooks[0]
		if h.Type != "command" || h.Command != hook+" --event "+ev || h.Timeout != 10 {
			t.Errorf("%s hook = %+v", ev, h)
		}
	}
}

// `setup hooks > file` then `claude --settings file`: Claude Code silently
// ignores a file that is not JSON, so stdout is the document alone and
// every note goes to stderr.
func TestSetupHooksPrintsValidJSON(t *testing.T) {
	dir := fakeInstall(t, true)
	hook := "'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "'"
	for _, args := range [][]string{{"hooks"}, {"hooks", "--wake"}, {"hooks", "--no-wake"}} {
		code, out, errs := runSetup(t, t.TempDir(), args...)
		if code != 0 || !json.Valid([]byte(out)) {
			t.Fatalf("setup %v: exit %d, stdout is not JSON as printed:\n%s", args, code, out)
		}
		if !strings.Contains(errs, "--write") {
			t.Errorf("setup %v: the notes are missing from stderr: %q", args, errs)
		}
	}
	_, out, _ := runSetup(t, t.TempDir(), "hooks")
	var doc struct {
		Hooks map[string][]struct {
			Hooks []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	stop := doc.Hooks["Stop"]
	if len(stop) != 2 || len(stop[1].Hooks) != 1 {
		t.Fatalf("Stop = %+v, want the synchronous entry and the waiter", stop)
	}
	want := map[string]any{"type": "command", "command": hook + " --event Stop --wait --timeout 3600", "asyncRewake": true,
		"rewakeSummary": "mcpp-chat: a peer is waiting on this session", "timeout": 3660.0}
	if got := stop[1].Hooks[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("waiter entry = %v\nwant %v", got, want)
	}
}

// docs/hooks.md shows the settings block `setup hooks --wake` prints for
// a checkout at /home/you/src/mcpp-chat: one truth, kept by this test.
func TestSetupHooksMatchesTheDocs(t *testing.T) {
	old := executable
	executable = func() (string, error) { return "/home/you/src/mcpp-chat/bin/mcpp-chat", nil }
	t.Cleanup(func() { executable = old })
	_, out, _ := runSetup(t, t.TempDir(), "hooks", "--wake")
	var printed, documented any
	if err := json.Unmarshal([]byte(out), &printed); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "hooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := docBlock(t, string(data), "## settings.json", "```json\n")
	if err := json.Unmarshal([]byte(block), &documented); err != nil {
		t.Fatalf("the settings block in docs/hooks.md is not JSON: %v\n%s", err, block)
	}
	if !reflect.DeepEqual(printed, documented) {
		t.Errorf("docs/hooks.md shows\n%s\nbut setup hooks --wake prints\n%s", block, out)
	}
}

// docBlock returns the first fenced block opened by fence after heading.
func docBlock(t *testing.T, doc, heading, fence string) string {
	t.Helper()
	_, after, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no %q section", heading)
	}
	_, after, ok = strings.Cut(after, fence)
	if !ok {
		t.Fatalf("no %q block under %q", fence, heading)
	}
	block, _, ok := strings.Cut(after, "\n```")
	if !ok {
		t.Fatalf("unclosed block under %q", heading)
	}
	return block
}

func TestSetupUsageErrors(t *testing.T) {
	fakeInstall(t, true)
	home := t.TempDir()
	for _, args := range [][]string{{"vscode"}, {"claude", "--write"}, {"hooks", "extra"}, {"claude", "--wake"}, {"codex", "--no-wake"},
		{"hooks", "--wake", "--no-wake"}, {"hooks", "--remove", "--no-wake"}} {
		code, _, errs := runSetup(t, home, args...)
		if code != exitUsage || errs == "" {
			t.Errorf("setup %v: exit %d, stderr %q; want a usage error", args, code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".claude")); err == nil {
		t.Error("a usage error wrote ~/.claude")
	}
}

func TestSetupWriteDefaultsToHomeSettings(t *testing.T) {
	dir := fakeInstall(t, true)
	home := t.TempDir()
	if code, out, errs := runSetup(t, home, "hooks", "--write"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, err := os.ReadFile(filepath.Join(home, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeSettings(t, data)
	want := "'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "' --event Stop"
	if got := doc.commands("Stop"); len(got) != 2 || got[0] != want || got[1] != want+" --wait --timeout 3600" {
		t.Fatalf("Stop hooks = %q, want [%q] and the idle wake", got, want)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude", "settings.json.bak")); err == nil {
		t.Error("wrote a .bak of a file that did not exist")
	}
}

func TestSetupWriteEmptyFile(t *testing.T) {
	fakeInstall(t, true)
	file := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runSetup(t, t.TempDir(), "--write", "--no-wake", "--settings", file); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	doc := decodeSettings(t, data)
	for _, ev := range hookEvents {
		if len(doc.commands(ev)) != 1 {
			t.Errorf("%s: %q", ev, doc.commands(ev))
		}
	}
	if bak, err := os.ReadFile(file + ".bak"); err != nil || len(bak) != 0 {
		t.Errorf(".bak = %q, %v; want the empty original", bak, err)
	}
	if info, _ := os.Stat(file); info.Mode().Perm() != 0o644 {
		t.Errorf("mode changed to %v", info.Mode().Perm())
	}
}

const userSettings = `{
  "model": "opus",
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done && echo <ok>"}]}
    ],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard", "timeout": 5}]}
    ]
  },
  "permissions": {"allow": ["Bash(make test)"]}
}
`

func TestSetupWriteKeepsOtherKeysAndHooks(t *testing.T) {
	dir := fakeInstall(t, true)
	file := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(file, []byte(userSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runSetup(t, t.TempDir(), "hooks", "--write", "--no-wake", "--settings", file); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	var all map[string]any
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	if all["model"] != "opus" {
		t.Errorf("model = %v", all["model"])
	}
	if perms, _ := json.Marshal(all["permissions"]); string(perms) != `{"allow":["Bash(make test)"]}` {
		t.Errorf("permissions = %s", perms)
	}
	doc := decodeSettings(t, data)
	ours := "'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "' --event Stop"
	if got := doc.commands("Stop"); len(got) != 2 || got[0] != "notify-send done && echo <ok>" || got[1] != ours {
		t.Errorf("Stop = %q; want the user's hook then ours", got)
	}
	edits := "'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "' --event PreToolUse"
	if got := doc.commands("PreToolUse"); len(got) != 2 || got[0] != "/usr/local/bin/guard" || got[1] != edits {
		t.Errorf("PreToolUse = %q; want the user's guard, then our edit hook", got)
	}
	if !strings.Contains(string(data), "&& echo <ok>") {
		t.Error("the user's command was re-escaped")
	}
	if i, j := strings.Index(string(data), `"model"`), strings.Index(string(data), `"permissions"`); i < 0 || j < i {
		t.Error("key order changed")
	}
	if bak, _ := os.ReadFile(file + ".bak"); string(bak) != userSettings {
		t.Errorf(".bak is not the original:\n%s", bak)
	}
}

func TestSetupWriteTwiceChangesNothing(t *testing.T) {
	fakeInstall(t, true)
	file := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(file, []byte(userSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	runSetup(t, t.TempDir(), "hooks", "--write", "--settings", file)
	first, _ := os.ReadFile(file)
	code, out, _ := runSetup(t, t.TempDir(), "hooks", "--write", "--settings", file)
	if code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	if second, _ := os.ReadFile(file); !bytes.Equal(first, second) {
		t.Errorf("second run changed the file:\n%s\n---\n%s", first, second)
	}
	if bak, _ := os.ReadFile(file + ".bak"); string(bak) != userSettings {
		t.Error("second run overwrote the .bak of the original")
	}
}

func TestSetupWriteRefusesInvalidJSON(t *testing.T) {
	fakeInstall(t, true)
	file := filepath.Join(t.TempDir(), "settings.json")
	broken := []byte(`{"model": "opus", "hooks": {` + "\n")
	if err := os.WriteFile(file, broken, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runSetup(t, t.TempDir(), "hooks", "--write", "--settings", file)
	if code != exitError || !strings.Contains(errs, "not valid JSON") || !strings.Contains(errs, "nothing was written") {
		t.Fatalf("exit %d, stderr %q; want a clear refusal", code, errs)
	}
	if data, _ := os.ReadFile(file); !bytes.Equal(data, broken) {
		t.Error("the invalid file was changed")
	}
	if _, err := os.Stat(file + ".bak"); err == nil {
		t.Error("a .bak was written for a refused file")
	}
}

func TestSetupWriteUpdatesAMovedCheckout(t *testing.T) {
	dir := fakeInstall(t, true)
	file := filepath.Join(t.TempDir(), "settings.json")
	old := `{"hooks": {"Stop": [
	  {"hooks": [{"type": "command", "command": "/old/place/bin/mcpp-chat-hook --event Stop", "timeout": 10}]},
	  {"hooks": [{"type": "command", "command": "/old/place/bin/mcpp-chat-hook --event Stop --wait", "asyncRewake": true}]}
	], "SessionStart": [
	  {"hooks": [{"type": "command", "command": "'/old place/bin/mcpp-chat-hook' --event SessionStart", "timeout": 10}]}
	]}}`
	if err := os.WriteFile(file, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runSetup(t, t.TempDir(), "hooks", "--write", "--settings", file); code != 0 || !strings.Contains(out, "updated") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	// The waiter the user added is pointed at this install too (never
	// added by --write, but never left on a path that is gone).
	hook := "'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "'"
	want := []string{hook + " --event Stop", hook + " --event Stop --wait"}
	if got := decodeSettings(t, data).commands("Stop"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Stop = %q, want %q", got, want)
	}
	// A path with a space is quoted; it is still our hook, moved.
	start := "'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "' --event SessionStart"
	if got := decodeSettings(t, data).commands("SessionStart"); len(got) != 1 || got[0] != start {
		t.Errorf("SessionStart = %q, want [%q]", got, start)
	}
}

func TestSetupWriteNeedsTheHookBinary(t *testing.T) {
	fakeInstall(t, false)
	file := filepath.Join(t.TempDir(), "settings.json")
	code, _, errs := runSetup(t, t.TempDir(), "hooks", "--write", "--settings", file)
	if code != exitError || !strings.Contains(errs, "make build") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("wrote settings pointing at a missing hook binary")
	}
}

// tomlTable returns the key = value lines of [name] in a TOML text (one
// line per value, as our snippets write them), comments left out.
func tomlTable(t *testing.T, text, name string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	in := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			in = line == "["+name+"]"
		case in:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("not a key = value line in [%s]: %q", name, line)
			}
			keys[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return keys
}

// A plain `codex exec` runs with approval policy "never": without the
// approval line it refuses every chat call. The install's own database
// the server finds on its own, from where the binary is: no env.
func TestSetupCodexApprovesTheTools(t *testing.T) {
	dir := fakeInstall(t, true)
	home := t.TempDir()
	_, out, _ := runSetup(t, home, "codex")
	got := tomlTable(t, out, "mcp_servers.chat")
	want := map[string]string{
		"command":                     `"` + filepath.Join(dir, "bin", "mcpp-chat") + `"`,
		"args":                        `["serve"]`,
		"default_tools_approval_mode": `"approve"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("setup codex table = %v\nwant %v\n%s", got, want, out)
	}

	// The README shows the same table, with placeholder paths.
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	shown := tomlTable(t, docBlock(t, string(readme), "### Codex", "```toml\n"), "mcp_servers.chat")
	for k := range want {
		if _, ok := shown[k]; !ok {
			t.Errorf("the README's Codex table lacks %s", k)
		}
	}
	if len(shown) != len(want) || shown["default_tools_approval_mode"] != `"approve"` {
		t.Errorf("the README's Codex table = %v", shown)
	}
}

// hookEnv is the MCPP_CHAT_DB a hook command sets, "" for none.
func hookEnv(t *testing.T, cmd string) string {
	t.Helper()
	return parseHookLine(cmd).env["MCPP_CHAT_DB"]
}

// With MCPP_CHAT_DB set, setup says every client shares that database:
// what it prints must give it to them, or a client started without the
// variable opens another database and talks to nobody.
func TestSetupCarriesADatabaseThatIsNotTheDefault(t *testing.T) {
	dir := fakeInstall(t, true)
	home := t.TempDir()
	db := filepath.Join(t.TempDir(), "shared data", "chat.db") // a space: quoted
	env := map[string]string{"HOME": home, "MCPP_CHAT_DB": db}

	_, claude, _ := runSetupEnv(t, env, "claude")
	words := shellWords(snippet(claude))
	want := []string{"claude", "mcp", "add", "--scope", "user", "chat", "-e", "MCPP_CHAT_DB=" + db, "--", filepath.Join(dir, "bin", "mcpp-chat"), "serve"}
	if !reflect.DeepEqual(words, want) {
		t.Errorf("setup claude = %q\nwant the words %q (-e after the name: claude's -e would take the name too)", snippet(claude), want)
	}

	_, hooks, _ := runSetupEnv(t, env, "hooks", "--wake")
	doc := decodeSettings(t, []byte(hooks))
	for _, ev := range hookEvents {
		for _, cmd := range doc.commands(ev) {
			if got := hookEnv(t, cmd); got != db {
				t.Errorf("%s hook %q runs on database %q, want %q", ev, cmd, got, db)
			}
		}
	}

	_, all, _ := runSetupEnv(t, env, "mcpp")
	if !strings.Contains(all, "MCPP_CHAT_DB="+shellQuote(db)) {
		t.Errorf("setup mcpp does not say to start the host with the database:\n%s", all)
	}
	_, codex, _ := runSetupEnv(t, env, "codex")
	if got := tomlTable(t, codex, "mcp_servers.chat")["env"]; got != `{ MCPP_CHAT_DB = "`+db+`" }` {
		t.Errorf("setup codex env = %s", got)
	}

	// MCPP_CHAT_HOME picks another database as surely as MCPP_CHAT_DB.
	other := t.TempDir()
	_, claude, _ = runSetupEnv(t, map[string]string{"HOME": home, "MCPP_CHAT_HOME": other}, "claude")
	if !strings.Contains(claude, "-e MCPP_CHAT_DB="+filepath.Join(other, "chat.db")+" --") {
		t.Errorf("with MCPP_CHAT_HOME, setup claude = %q", snippet(claude))
	}
}

// On a member machine of a team hub, what a client must reach is the hub
// connect saved: MCPP_CHAT_DB would hide it (it wins over the saved hub),
// so the snippets name the hub file, never a database.
func TestSetupOnAMemberNamesTheHubNotADatabase(t *testing.T) {
	fakeInstall(t, true)
	home, module := t.TempDir(), filepath.Join(t.TempDir(), "my module")
	hubFile := filepath.Join(module, "hub.json")
	if err := config.SaveHub(hubFile, config.Hub{URL: "https://chat.team.example", Token: "mcc_x_y"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": module}

	_, all, _ := runSetupEnv(t, env)
	if strings.Contains(all, "MCPP_CHAT_DB") {
		t.Errorf("on a member machine setup names a database, which would hide the hub:\n%s", all)
	}
	_, claude, _ := runSetupEnv(t, env, "claude")
	if !strings.Contains(snippet(claude), "-e MCPP_CHAT_HUB_FILE="+shellQuote(hubFile)+" --") {
		t.Errorf("setup claude = %q, want -e MCPP_CHAT_HUB_FILE=%s", snippet(claude), hubFile)
	}
	_, hooks, _ := runSetupEnv(t, env, "hooks", "--wake")
	doc := decodeSettings(t, []byte(hooks))
	for _, ev := range hookEvents {
		for _, cmd := range doc.commands(ev) {
			if got := parseHookLine(cmd).env["MCPP_CHAT_HUB_FILE"]; got != hubFile {
				t.Errorf("%s hook %q uses the hub file %q, want %q", ev, cmd, got, hubFile)
			}
		}
	}
	_, codex, _ := runSetupEnv(t, env, "codex")
	if got := tomlTable(t, codex, "mcp_servers.chat")["env"]; got != `{ MCPP_CHAT_HUB_FILE = "`+hubFile+`" }` {
		t.Errorf("setup codex env = %s", got)
	}
}

// The install's own database needs no variable: the snippets stay short.
func TestSetupLeavesTheDefaultDatabaseUnsaid(t *testing.T) {
	dir := fakeInstall(t, true)
	env := map[string]string{"HOME": t.TempDir(), "MCPP_CHAT_DB": filepath.Join(dir, "chat.db")}
	_, out, _ := runSetupEnv(t, env)
	if strings.Contains(out, "-e MCPP_CHAT_DB") || strings.Contains(out, "MCPP_CHAT_DB="+filepath.Join(dir, "chat.db")) {
		t.Errorf("the default database is spelled out:\n%s", out)
	}
}

// Every form of our hooks that setup or docs/hooks.md ever showed is
// recognised and updated in place: one hook per event, on this database.
func TestSetupWriteRecognisesEveryFormOnce(t *testing.T) {
	dir := fakeInstall(t, true)
	db := filepath.Join(t.TempDir(), "chat.db")
	env := map[string]string{"HOME": t.TempDir(), "MCPP_CHAT_DB": db}
	file := filepath.Join(t.TempDir(), "settings.json")
	old := `{"hooks": {
	  "SessionStart": [
	    {"hooks": [{"type": "command", "command": "/old/bin/mcpp-chat-hook --event SessionStart", "timeout": 10}]},
	    {"hooks": [{"type": "command", "command": "MCPP_CHAT_DB=/old/chat.db /old/bin/mcpp-chat-hook --event SessionStart", "timeout": 10}]}
	  ],
	  "UserPromptSubmit": [
	    {"hooks": [{"type": "command", "command": "env MCPP_CHAT_DB='/old dir/chat.db' '/old dir/mcpp-chat-hook' --event=UserPromptSubmit"}]}
	  ],
	  "Stop": [
	    {"hooks": [{"type": "command", "command": "notify-send done"}, {"type": "command", "command": "MCPP_CHAT_DB=/old/chat.db mcpp-chat-hook"}]}
	  ]
	}}`
	writeFile(t, file, old, 0o600)
	code, out, errs := runSetupEnv(t, env, "hooks", "--write", "--no-wake", "--settings", file)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	doc := decodeSettings(t, data)
	hook := "MCPP_CHAT_DB=" + db + " '" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "'"
	for ev, want := range map[string][]string{
		"SessionStart":     {hook + " --event SessionStart"},
		"UserPromptSubmit": {hook + " --event UserPromptSubmit"},
		"Stop":             {"notify-send done", hook + " --event Stop"},
	} {
		if got := doc.commands(ev); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %q\nwant %q", ev, got, want)
		}
	}
	if !strings.Contains(out, "removed 1 duplicate of it") {
		t.Errorf("the removed duplicate is not reported:\n%s", out)
	}
	if code, out, _ := runSetupEnv(t, env, "hooks", "--write", "--no-wake", "--settings", file); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Errorf("second run: exit %d\n%s", code, out)
	}
}

func TestSetupHooksRemove(t *testing.T) {
	fakeInstall(t, true)
	home := t.TempDir()
	file := filepath.Join(home, ".claude", "settings.json")
	writeFile(t, file, userSettings, 0o640)
	runSetup(t, home, "hooks", "--write")
	withOurs, _ := os.ReadFile(file)
	// the idle wake a user added by hand, beside another hook in its group
	withWaiter := strings.Replace(string(withOurs), `"command": "notify-send done && echo <ok>"`,
		`"command": "notify-send done && echo <ok>"}, {"type": "command", "command": "/x/bin/mcpp-chat-hook --event Stop --wait", "asyncRewake": true`, 1)
	writeFile(t, file, withWaiter, 0o640)

	code, out, errs := runSetup(t, home, "hooks", "--remove")
	if code != 0 || !strings.Contains(out, "removed") || !strings.Contains(out, ".bak") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	if strings.Contains(string(data), "mcpp-chat-hook") {
		t.Errorf("our hooks are still there:\n%s", data)
	}
	var got, want any
	json.Unmarshal(data, &got)
	json.Unmarshal([]byte(userSettings), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("removing our hooks did not give back the user's file:\n%s\nwant\n%s", data, userSettings)
	}
	if bak, _ := os.ReadFile(file + ".bak"); string(bak) != withWaiter {
		t.Error("the .bak is not the file as it was")
	}
	if info, _ := os.Stat(file); info.Mode().Perm() != 0o640 {
		t.Errorf("mode changed to %v", info.Mode().Perm())
	}
	if code, out, _ := runSetup(t, home, "hooks", "--remove"); code != 0 || !strings.Contains(out, "has no mcpp-chat hooks; nothing changed") {
		t.Errorf("second run: exit %d\n%s", code, out)
	}

	missing := filepath.Join(t.TempDir(), "none.json")
	if code, _, _ := runSetup(t, home, "hooks", "--remove", "--settings", missing); code != 0 {
		t.Errorf("a missing file: exit %d", code)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("--remove created a settings file")
	}
	broken := filepath.Join(t.TempDir(), "broken.json")
	writeFile(t, broken, `{"hooks": `, 0o600)
	if code, _, errs := runSetup(t, home, "hooks", "--remove", "--settings", broken); code != exitError || !strings.Contains(errs, "nothing was written") {
		t.Errorf("invalid JSON: exit %d %s", code, errs)
	}
	for _, args := range [][]string{{"--remove"}, {"claude", "--remove"}, {"hooks", "--remove", "--write"}} {
		if code, _, _ := runSetup(t, home, args...); code != exitUsage {
			t.Errorf("setup %v: exit %d, want a usage error", args, code)
		}
	}
}

// fakeClaude puts a `claude` on a PATH of its own that answers --version
// with version, and returns that PATH.
func fakeClaude(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\necho '" + version + " (Claude Code)'\n"
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waiters lists the idle wake entries (asyncRewake) of a settings file.
func waiters(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var doc struct {
		Hooks map[string][]struct {
			Hooks []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	var out []map[string]any
	for _, g := range doc.Hooks["Stop"] {
		for _, h := range g.Hooks {
			if h["asyncRewake"] == true {
				out = append(out, h)
			}
		}
	}
	return out
}

// The idle wake is written by default: a newcomer's idle session notices
// a peer without anyone typing. --wake says the same; --no-wake takes it
// out again, and the next --write puts it back.
func TestSetupWriteWritesTheIdleWake(t *testing.T) {
	dir := fakeInstall(t, true)
	env := map[string]string{"HOME": t.TempDir(), "PATH": fakeClaude(t, claudeCodeTested)}
	file := filepath.Join(t.TempDir(), "settings.json")
	code, out, errs := runSetupEnv(t, env, "hooks", "--write", "--settings", file)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "Stop (idle wake) added") {
		t.Errorf("the report does not name the idle wake:\n%s", out)
	}
	data, _ := os.ReadFile(file)
	hook := "'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "'"
	want := map[string]any{"type": "command", "command": hook + " --event Stop --wait --timeout 3600", "asyncRewake": true,
		"rewakeSummary": "mcpp-chat: a peer is waiting on this session", "timeout": 3660.0}
	if got := waiters(t, data); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("idle wake entries = %v, want [%v]", got, want)
	}
	if code, out, _ := runSetupEnv(t, env, "hooks", "--write", "--wake", "--settings", file); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Errorf("--write --wake after --write: exit %d\n%s", code, out)
	}

	code, out, _ = runSetupEnv(t, env, "hooks", "--write", "--no-wake", "--settings", file)
	data, _ = os.ReadFile(file)
	if code != 0 || len(waiters(t, data)) != 0 || !strings.Contains(out, "Stop (idle wake) removed") {
		t.Fatalf("--no-wake: exit %d, idle wake entries %v\n%s", code, waiters(t, data), out)
	}
	if got := decodeSettings(t, data).commands("Stop"); len(got) != 1 || got[0] != hook+" --event Stop" {
		t.Errorf("--no-wake left Stop = %q", got)
	}
	runSetupEnv(t, env, "hooks", "--write", "--settings", file)
	if data, _ = os.ReadFile(file); len(waiters(t, data)) != 1 {
		t.Errorf("--write after --no-wake did not put the idle wake back:\n%s", data)
	}
}

// A Claude Code older than the tested one gets the other hooks and a note
// saying why the idle wake is not there; the same or a newer one gets it.
func TestSetupLeavesTheWakeOutForAnOlderClaudeCode(t *testing.T) {
	fakeInstall(t, true)
	for _, tc := range []struct {
		version string
		wake    bool
	}{{"2.1.100", false}, {"1.0.9", false}, {claudeCodeTested, true}, {"2.2.0", true}, {"10.0.0", true}} {
		t.Run(tc.version, func(t *testing.T) {
			env := map[string]string{"HOME": t.TempDir(), "PATH": fakeClaude(t, tc.version)}
			file := filepath.Join(t.TempDir(), "settings.json")
			code, out, errs := runSetupEnv(t, env, "hooks", "--write", "--settings", file)
			data, _ := os.ReadFile(file)
			if code != 0 || (len(waiters(t, data)) == 1) != tc.wake {
				t.Fatalf("exit %d, idle wake entries %v, want it: %v\n%s%s", code, waiters(t, data), tc.wake, out, errs)
			}
			for _, ev := range hookEvents {
				if got := decodeSettings(t, data).commands(ev); len(got) == 0 {
					t.Errorf("%s hook not written", ev)
				}
			}
			older := strings.Contains(errs, "Claude Code "+tc.version) && strings.Contains(errs, "older than "+claudeCodeTested) && strings.Contains(errs, "update Claude Code")
			if older == tc.wake {
				t.Errorf("stderr %q: want a note about the older version: %v", errs, !tc.wake)
			}
			_, printed, notes := runSetupEnv(t, env, "hooks")
			if (len(waiters(t, []byte(printed))) == 1) != tc.wake || strings.Contains(notes, "older than") == tc.wake {
				t.Errorf("setup hooks printed the idle wake: %v (want %v), notes %q", len(waiters(t, []byte(printed))) == 1, tc.wake, notes)
			}
		})
	}
}

// The version the idle wake is checked against is the one the end-to-end
// tests pin in the Makefile.
func TestClaudeCodeTestedIsTheMakefilesVersion(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "?="); ok && strings.TrimSpace(k) == "CLAUDE_CODE_VERSION" {
			if strings.TrimSpace(v) != claudeCodeTested {
				t.Errorf("the Makefile pins Claude Code %s, claudeCodeTested is %s", strings.TrimSpace(v), claudeCodeTested)
			}
			return
		}
	}
	t.Fatal("no CLAUDE_CODE_VERSION in the Makefile")
}

// --remove after a --write that created the settings file leaves no file
// behind (and no `{"hooks": {}}`); in a file with other keys it leaves
// those keys and no empty hooks table.
func TestSetupHooksRemoveLeavesNothingItCreated(t *testing.T) {
	fakeInstall(t, true)
	home := t.TempDir()
	file := filepath.Join(home, ".claude", "settings.json")
	if code, out, errs := runSetup(t, home, "hooks", "--write"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, _ := runSetup(t, home, "hooks", "--remove")
	if code != 0 || !strings.Contains(out, "removed "+file) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		data, _ := os.ReadFile(file)
		t.Fatalf("the file --write created is still there:\n%s", data)
	}

	writeFile(t, file, `{"theme": "dark"}`, 0o600)
	runSetup(t, home, "hooks", "--write")
	runSetup(t, home, "hooks", "--remove")
	data, _ := os.ReadFile(file)
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil || !reflect.DeepEqual(got, map[string]any{"theme": "dark"}) {
		t.Errorf("left %s, want the user's theme alone", data)
	}
}
