package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/codexconfig"
)

// ourCodexTables lists, per table of ours in a Codex config, what it
// holds: the server's command, each hook group's command, the feature flag.
func ourCodexTables(t *testing.T, data []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, b := range codexconfig.Parse(data) {
		switch {
		case ourServer(b):
			raw, _ := b.Value("command")
			cmd, _ := codexconfig.String(raw)
			env, _ := b.Value("env")
			got["server "+b.Path[1]] = cmd + " " + env
		case ourHookGroup(b) != "":
			raw, _ := b.Value("hooks")
			cmd, _ := codexconfig.String(codexconfig.Tables(raw)[0]["command"])
			if _, dup := got[b.Path[1]]; dup {
				t.Errorf("%s hook twice", b.Path[1])
			}
			got[b.Path[1]] = cmd
		case b.Name() == "features":
			v, _ := b.Value("hooks")
			got["features.hooks"] = v
		}
	}
	return got
}

// What setup codex prints is one config.toml snippet: the server, the
// hooks feature flag and a hook group per event, running this install's
// hook on its database.
func TestSetupCodexPrintsTheHooksAndTheFeatureFlag(t *testing.T) {
	dir := fakeInstall(t, true)
	db := filepath.Join(t.TempDir(), "chat.db")
	_, out, _ := runSetupEnv(t, map[string]string{"HOME": t.TempDir(), "MCPP_CHAT_DB": db}, "codex")
	got := ourCodexTables(t, []byte(out))
	hook := "MCPP_CHAT_DB=" + db + " '" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "'"
	want := map[string]string{
		"server chat":      filepath.Join(dir, "bin", "mcpp-chat") + ` { MCPP_CHAT_DB = "` + db + `" }`,
		"features.hooks":   "true",
		"SessionStart":     hook + " --event SessionStart",
		"UserPromptSubmit": hook + " --event UserPromptSubmit",
		"Stop":             hook + " --event Stop",
		"SessionEnd":       hook + " --event SessionEnd",
		"PreToolUse":       hook + " --event PreToolUse",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("tables %v, want %v", got, want)
	}
	if !strings.Contains(out, "trust") {
		t.Errorf("setup codex does not say Codex runs new hooks only once trusted:\n%s", out)
	}
	if !strings.Contains(out, "wakes the session when it sits idle") {
		t.Errorf("setup codex does not say the hooks let an idle session be woken:\n%s", out)
	}
}

const userCodexConfig = `# my Codex
model = "gpt-5.5" # the default

[mcp_servers.docs]
command = "docs-server"

[features]
web_search = true

[hooks.state."/home/you/.codex/config.toml:stop:0:0"]
trusted_hash = "sha256:00"
`

// --write merges our tables into Codex's config.toml: everything else as
// it was, a .bak first, nothing the second time; an older form of ours
// (a moved checkout, another database, duplicates, the env as a table
// with a variable of the user's) is updated in place.
func TestSetupCodexWrite(t *testing.T) {
	dir := fakeInstall(t, true)
	codexHome := t.TempDir()
	env := map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}
	file := filepath.Join(codexHome, "config.toml")
	writeFile(t, file, userCodexConfig, 0o640)
	code, out, errs := runSetupEnv(t, env, "codex", "--write")
	if code != 0 || !strings.Contains(out, "config.toml.bak") || !strings.Contains(out, "Trust all and continue") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(data), userCodexConfig[:strings.Index(userCodexConfig, "[features]")]) ||
		!strings.Contains(string(data), "[hooks.state.\"/home/you/.codex/config.toml:stop:0:0\"]\ntrusted_hash = \"sha256:00\"\n") {
		t.Errorf("the user's tables changed:\n%s", data)
	}
	if !strings.Contains(string(data), "[features]\nweb_search = true\nhooks = true "+codexMarker+"\n") {
		t.Errorf("the feature flag is not hooks = true, marked as ours, beside the user's own:\n%s", data)
	}
	got := ourCodexTables(t, data)
	hook := "'" + filepath.Join(dir, "bin", "mcpp-chat-hook") + "'"
	for _, ev := range codexHookEvents {
		if got[ev] != hook+" --event "+ev {
			t.Errorf("%s hook = %q", ev, got[ev])
		}
	}
	if bak, _ := os.ReadFile(file + ".bak"); string(bak) != userCodexConfig {
		t.Error("the .bak is not the file as it was")
	}
	if info, _ := os.Stat(file); info.Mode().Perm() != 0o640 {
		t.Errorf("mode changed to %v", info.Mode().Perm())
	}
	if code, out, _ := runSetupEnv(t, env, "codex", "--write"); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Errorf("second run: exit %d\n%s", code, out)
	}

	// Another checkout's tables, twice over, with the env as a table.
	old := userCodexConfig + `
[mcp_servers.chat]
command = "/old/bin/mcpp-chat"
args = ["serve"]
startup_timeout_sec = 20

[mcp_servers.chat.env]
MCPP_CHAT_DB = "/old/chat.db"
MINE = "kept"

[mcp_servers.chat-again]
command = "/older/bin/mcpp-chat"
args = ["serve"]

[[hooks.Stop]]
hooks = [{ type = "command", command = "/old/bin/mcpp-chat-hook --event Stop", timeout = 10 }]

[[hooks.Stop]]
hooks = [{ type = "command", command = "MCPP_CHAT_DB=/old/chat.db /old/bin/mcpp-chat-hook --event Stop" }]
`
	writeFile(t, file, old, 0o600)
	if code, out, errs := runSetupEnv(t, env, "codex", "--write"); code != 0 || !strings.Contains(out, "removed") || !strings.Contains(out, "updated") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ = os.ReadFile(file)
	got = ourCodexTables(t, data)
	// A second server of ours that is not exactly ours is left, and said.
	if got["Stop"] != hook+" --event Stop" || got["server chat"] == "" || got["server chat-again"] == "" {
		t.Errorf("tables after the update: %v\n%s", got, data)
	}
	for _, want := range []string{"startup_timeout_sec = 20", `MINE = "kept"`, `command = "` + filepath.Join(dir, "bin", "mcpp-chat") + `"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the updated file lacks %q:\n%s", want, data)
		}
	}
	// The install's own database the server finds on its own: the old
	// variable goes, the person's stays.
	if strings.Contains(string(data), "/old/") || strings.Contains(string(data), "MCPP_CHAT_DB") {
		t.Errorf("an old path is left:\n%s", data)
	}
}

// What --write cannot extend safely it refuses, changing nothing.
func TestSetupCodexWriteRefuses(t *testing.T) {
	fakeInstall(t, true)
	for name, config := range map[string]string{
		"another server named chat": "[mcp_servers.chat]\ncommand = \"other-chat\"\n",
		"features inline":           "features = { hooks = true }\n",
		"hooks inline":              "[hooks]\nStop = []\n",
	} {
		codexHome := t.TempDir()
		file := filepath.Join(codexHome, "config.toml")
		writeFile(t, file, config, 0o600)
		code, _, errs := runSetupEnv(t, map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}, "codex", "--write")
		if code != exitError || !strings.Contains(errs, "nothing was written") {
			t.Errorf("%s: exit %d, stderr %q", name, code, errs)
		}
		if n := strings.Count(errs, "again"); n > 1 { // it said "then run this again" twice
			t.Errorf("%s: the refusal says to run it again %d times: %s", name, n, errs)
		}
		if data, _ := os.ReadFile(file); string(data) != config {
			t.Errorf("%s: the file changed:\n%s", name, data)
		}
	}
}

// --remove takes our tables out and leaves the rest; a file --write
// created is removed.
func TestSetupCodexRemove(t *testing.T) {
	fakeInstall(t, true)
	codexHome := t.TempDir()
	env := map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}
	file := filepath.Join(codexHome, "config.toml")
	runSetupEnv(t, env, "codex", "--write")
	code, out, _ := runSetupEnv(t, env, "codex", "--remove")
	if code != 0 || !strings.Contains(out, "removed "+file) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		data, _ := os.ReadFile(file)
		t.Fatalf("the file --write created is still there:\n%s", data)
	}

	writeFile(t, file, userCodexConfig, 0o600)
	runSetupEnv(t, env, "codex", "--write")
	if code, out, _ := runSetupEnv(t, env, "codex", "--remove"); code != 0 || !strings.Contains(out, "server chat") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	data, _ := os.ReadFile(file)
	if string(data) != userCodexConfig {
		t.Errorf("--remove left\n%s\nwant\n%s", data, userCodexConfig)
	}
	if code, out, _ := runSetupEnv(t, env, "codex", "--remove"); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Errorf("second run: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"codex", "--no-wake"}, {"codex", "--write", "--remove"}, {"claude", "--remove"}, {"all", "--write"}} {
		if code, _, _ := runSetupEnv(t, env, args...); code != exitUsage {
			t.Errorf("setup %v: exit %d, want a usage error", args, code)
		}
	}
}

// doctor lists the Codex hooks it finds and warns when they would not run
// this install's hook, or would not run at all.
func TestDoctorChecksTheCodexHooks(t *testing.T) {
	fakeInstall(t, true)
	home := t.TempDir()
	file := filepath.Join(home, ".codex", "config.toml")
	if code, _ := runDoctor(t, home); code != exitOK {
		t.Fatalf("without a Codex config: exit %d", code)
	}
	writeFile(t, file, "model = \"gpt-5.5\"\n", 0o600)
	if code, out := runDoctor(t, home); code != exitOK || !strings.Contains(out, "codex hooks: none in "+file) {
		t.Errorf("a Codex config without our hooks: exit %d\n%s", code, out)
	}
	if code, out, errs := runSetupEnv(t, map[string]string{"HOME": home, "MCPP_CHAT_DB": filepath.Join(home, "chat.db")}, "codex", "--write"); code != 0 {
		t.Fatalf("setup codex --write: exit %d\n%s%s", code, out, errs)
	}
	code, out := runDoctor(t, home)
	if code != exitOK || !strings.Contains(out, "codex hooks: PreToolUse, SessionEnd, SessionStart, Stop, UserPromptSubmit in "+file) {
		t.Errorf("after setup codex --write: exit %d\n%s", code, out)
	}
	data, _ := os.ReadFile(file)
	writeFile(t, file, strings.Replace(string(data), "hooks = true", "hooks = false", 1)+
		"\n[[hooks.Stop]]\nhooks = [{ type = \"command\", command = \"/gone/bin/mcpp-chat-hook --event Stop\" }]\n", 0o600)
	code, out = runDoctor(t, home)
	for _, want := range []string{"turns Codex's hooks off", "/gone/bin/mcpp-chat-hook is missing", "runs mcpp-chat's Stop hook 2 times — run: mcpp-chat setup codex --write"} {
		if code != exitError || !strings.Contains(out, want) {
			t.Errorf("exit %d, want a warning holding %q:\n%s", code, want, out)
		}
	}
}

// On a team store (storage.url in the install's config.yaml) Codex's
// server finds the store as every client does: setup codex names no
// database — one would be a chat of its own, on this machine alone — and
// --write takes out the one an earlier setup pinned, keeping the user's
// variables; doctor warns of a table that would split the chat, and not of
// one that pins the install's own file (it gives way to storage.url).
func TestSetupCodexOnATeamStore(t *testing.T) {
	dir := fakeInstall(t, true)
	store := "postgres://chat@127.0.0.1:1/chat"
	writeFile(t, filepath.Join(dir, "config.yaml"), "storage:\n  url: "+store+"\n", 0o600)
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	_, all, _ := runSetupEnv(t, env)
	if !strings.Contains(all, "# chat: the team store "+store) || strings.Contains(all, "MCPP_CHAT_DB=") || strings.Contains(all, "MCPP_CHAT_DB =") {
		t.Errorf("setup on a team store:\n%s", all)
	}
	_, out, _ := runSetupEnv(t, env, "codex")
	if got := tomlTable(t, out, "mcp_servers.chat")["env"]; got != "" || !strings.Contains(out, "finds the team store "+store) {
		t.Errorf("setup codex on a team store: env %q\n%s", got, out)
	}

	// doctor as this install's: its config.yaml names the team store.
	doctor := func() string {
		t.Helper()
		env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": dir, "MCPP_CHAT_WORKSPACE": home}
		var out bytes.Buffer
		run(context.Background(), []string{"doctor"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &out)
		if !strings.Contains(out.String(), "store:       "+store) {
			t.Fatalf("doctor does not see the team store:\n%s", out.String())
		}
		return out.String()
	}
	file := filepath.Join(home, ".codex", "config.toml")
	pinned := "[mcp_servers.chat]\ncommand = " + codexconfig.Quote(filepath.Join(dir, "bin", "mcpp-chat")) + "\nargs = [\"serve\"]\nenv = { MCPP_CHAT_DB = " +
		codexconfig.Quote(filepath.Join(dir, "chat.db")) + ", MINE = \"kept\" }\n"
	writeFile(t, file, pinned, 0o600)
	if out := doctor(); strings.Contains(out, "not this install's") {
		t.Errorf("a table pinning the install's own file (it gives way to storage.url):\n%s", out)
	}
	writeFile(t, file, strings.Replace(pinned, filepath.Join(dir, "chat.db"), "/elsewhere/chat.db", 1), 0o600)
	if out := doctor(); !strings.Contains(out, "its server opens the database /elsewhere/chat.db, not this install's team store "+store) {
		t.Errorf("a table that splits the chat: no warning\n%s", out)
	}
	if code, out, errs := runSetupEnv(t, env, "codex", "--write"); code != 0 || !strings.Contains(out, "server chat") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	if strings.Contains(string(data), "MCPP_CHAT_DB") || !strings.Contains(string(data), `env = { MINE = "kept" }`) {
		t.Errorf("--write on a team store left:\n%s", data)
	}
	if out := doctor(); strings.Contains(out, "not this install's") {
		t.Errorf("after --write doctor still sees a split:\n%s", out)
	}
}

// A team store chosen by MCPP_CHAT_STORE reaches Codex's server only
// through the table's env — unless the URL holds a password, which setup
// does not write: it refuses, saying to put the URL in storage.url.
func TestSetupCodexOnATeamStoreFromTheEnvironment(t *testing.T) {
	fakeInstall(t, true)
	store := "postgres://chat@db.example/chat"
	_, out, _ := runSetupEnv(t, map[string]string{"HOME": t.TempDir(), "MCPP_CHAT_STORE": store}, "codex")
	if got := tomlTable(t, out, "mcp_servers.chat")["env"]; got != `{ MCPP_CHAT_STORE = "`+store+`" }` {
		t.Errorf("env = %q\n%s", got, out)
	}
	secret := "postgres://chat:s3cret@db.example/chat"
	codexHome := t.TempDir()
	for _, args := range [][]string{{"codex"}, {"codex", "--write"}, {"claude"}, {"hooks"}, {}} {
		code, out, errs := runSetupEnv(t, map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome, "MCPP_CHAT_STORE": secret}, args...)
		if code != exitError || strings.Contains(out+errs, "s3cret") || out != "" || !strings.Contains(errs, "storage.url") {
			t.Errorf("setup %v with a store URL holding a password: exit %d\n%s%s", args, code, out, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(codexHome, "config.toml")); err == nil {
		t.Error("setup codex --write wrote a config that reaches another chat")
	}
}
