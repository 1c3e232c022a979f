package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/codexconfig"
	"github.com/mcpp/mcpp-chat/internal/config"
)

// codexCase runs setup codex with args on a config.toml holding config,
// and returns the exit code, the output and the file afterwards.
func codexCase(t *testing.T, config string, args ...string) (code int, out, after, file string) {
	t.Helper()
	codexHome := t.TempDir()
	file = filepath.Join(codexHome, "config.toml")
	writeFile(t, file, config, 0o600)
	code, stdout, stderr := runSetupEnv(t, map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}, append([]string{"codex"}, args...)...)
	data, _ := os.ReadFile(file)
	return code, stdout + stderr, string(data), file
}

// keys is what the TOML parser reads in a config.
func keys(t *testing.T, data string) map[string]any {
	t.Helper()
	doc, err := codexconfig.Decode([]byte(data))
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return doc
}

// --remove takes out only what --write added: a `hooks = true` the person
// wrote (which --write found and left) stays.
func TestSetupCodexRemoveKeepsThePersonsFeatureFlag(t *testing.T) {
	fakeInstall(t, true)
	mine := "[features]\nhooks = true\nweb_search = true\n"
	codexHome := t.TempDir()
	env := map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}
	file := filepath.Join(codexHome, "config.toml")
	writeFile(t, file, mine, 0o600)
	runSetupEnv(t, env, "codex", "--write")
	if code, out, errs := runSetupEnv(t, env, "codex", "--remove"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if data, _ := os.ReadFile(file); string(data) != mine {
		t.Errorf("--write then --remove left\n%s\nwant the person's file\n%s", data, mine)
	}
}

// A person's explicit `hooks = false` is theirs: --write keeps the line
// and its comment byte for byte and says what it means.
func TestSetupCodexKeepsHooksOffAndSaysWhatItMeans(t *testing.T) {
	fakeInstall(t, true)
	for _, line := range []string{"hooks = false # off on purpose", "codex_hooks = false"} {
		code, out, after, _ := codexCase(t, "[features]\n"+line+"\n", "--write")
		if code != 0 || !strings.HasPrefix(after, "[features]\n"+line+"\n\n[") || strings.Contains(after, "hooks = true") {
			t.Errorf("%s: exit %d, the file is\n%s", line, code, after)
		}
		if !strings.Contains(out, "turns Codex's hooks off, so the hooks written here will not run") {
			t.Errorf("%s: setup does not say what the line means:\n%s", line, out)
		}
	}
}

// A server named chat written inline in [mcp_servers] (chat = {…}, or
// chat.command = …) would be defined twice by an appended
// [mcp_servers.chat], which Codex refuses to read: --write refuses, says
// what to do, and changes nothing.
func TestSetupCodexRefusesAChatWrittenInline(t *testing.T) {
	fakeInstall(t, true)
	for _, config := range []string{
		"[mcp_servers]\nchat = { command = \"/x/bin/mcpp-chat\", args = [\"serve\"] }\n",
		"[mcp_servers]\nchat.command = \"/x/bin/mcpp-chat\"\nchat.args = [\"serve\"]\n",
	} {
		code, out, after, file := codexCase(t, config, "--write")
		if code != exitError || after != config || !strings.Contains(out, "write it as a [mcp_servers.chat] table") || !strings.Contains(out, "nothing was written") {
			t.Errorf("exit %d\n%s\nthe file is\n%s", code, out, after)
		}
		if strings.Count(out, "run setup codex --write again")+strings.Count(out, "run this again") != 1 {
			t.Errorf("the refusal says what to do more or less than once:\n%s", out)
		}
		if _, err := os.Stat(file + ".bak"); err == nil {
			t.Error("a .bak for a refused file")
		}
	}
}

// otherChat is a second install, a member of a team hub: its server and
// hook run and open the hub, not this install's chat.
func otherChat(t *testing.T) (exe, hook string) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "module.yaml"), "", 0o600)
	exe, hook = filepath.Join(dir, "bin", "mcpp-chat"), filepath.Join(dir, "bin", "mcpp-chat-hook")
	writeFile(t, exe, "#!/bin/sh\n", 0o755)
	writeFile(t, hook, "#!/bin/sh\n", 0o755)
	if err := config.SaveHub(filepath.Join(dir, "hub.json"), config.Hub{URL: "https://hub.example", Token: "mcc_a_b"}); err != nil {
		t.Fatal(err)
	}
	return exe, hook
}

// A team hub's server and hooks beside a personal chat are the person's:
// --write and --remove leave them byte for byte, and say so.
func TestSetupCodexLeavesAnotherChatsServerAndHooks(t *testing.T) {
	fakeInstall(t, true)
	exe, hook := otherChat(t)
	hub := "[mcp_servers.hub]\ncommand = " + codexconfig.Quote(exe) + "\nargs = [\"serve\"]\n\n[[hooks.Stop]]\nhooks = [{ type = \"command\", command = " +
		codexconfig.Quote(shellQuote(hook)+" --event Stop") + " }]\n"
	codexHome := t.TempDir()
	env := map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}
	file := filepath.Join(codexHome, "config.toml")
	writeFile(t, file, hub, 0o600)
	code, out, errs := runSetupEnv(t, env, "codex", "--write")
	data, _ := os.ReadFile(file)
	if code != 0 || !strings.HasPrefix(string(data), hub) || !strings.Contains(out, "[mcp_servers.hub] runs mcpp-chat too, on the team store https://hub.example") {
		t.Fatalf("exit %d\n%s%s\nthe file is\n%s", code, out, errs, data)
	}
	if n := strings.Count(string(data), "[[hooks.Stop]]"); n != 2 || !strings.Contains(string(data), "[mcp_servers.chat]\n") {
		t.Errorf("want the hub's Stop group and ours, and our server:\n%s", data)
	}
	if code, out, _ := runSetupEnv(t, env, "codex", "--remove"); code != 0 || !strings.Contains(out, "server chat") {
		t.Fatalf("--remove: exit %d\n%s", code, out)
	}
	if data, _ := os.ReadFile(file); string(data) != hub {
		t.Errorf("--remove left\n%s\nwant the hub's tables as they were\n%s", data, hub)
	}
}

// A file that is not TOML is refused untouched: Codex cannot read it
// either, and an edit could only make it worse.
func TestSetupCodexRefusesInvalidTOML(t *testing.T) {
	fakeInstall(t, true)
	for _, config := range []string{"model = \n", "[features]\nhooks = true\nhooks = false\n", "[mcp_servers]\nx.command = 'a'\n[mcp_servers.x]\nargs = []\n"} {
		for _, args := range [][]string{{"--write"}, {"--remove"}} {
			code, out, after, file := codexCase(t, config, args...)
			if code != exitError || after != config || !strings.Contains(out, "not valid TOML (line ") || !strings.Contains(out, "nothing was written") {
				t.Errorf("%v on %q: exit %d\n%s", args, config, code, out)
			}
			if _, err := os.Stat(file + ".bak"); err == nil {
				t.Errorf("%v: a .bak for a refused file", args)
			}
		}
	}
}

// A read-only config is the person's to keep as it is: refused, unchanged.
func TestSetupCodexRefusesAReadOnlyFile(t *testing.T) {
	fakeInstall(t, true)
	codexHome := t.TempDir()
	file := filepath.Join(codexHome, "config.toml")
	writeFile(t, file, "model = \"o3\"\n", 0o400)
	code, out, errs := runSetupEnv(t, map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}, "codex", "--write")
	data, _ := os.ReadFile(file)
	info, _ := os.Stat(file)
	if code != exitError || string(data) != "model = \"o3\"\n" || info.Mode().Perm() != 0o400 || !strings.Contains(errs, "is read-only (mode 0400)") || !strings.Contains(errs, "chmod u+w") {
		t.Errorf("exit %d, mode %v\n%s%s\n%s", code, info.Mode().Perm(), out, errs, data)
	}
}

// A symlinked config.toml that leads to a file is written through, the
// link kept; one that leads nowhere is refused — writing through it would
// make a file where the person did not look, replacing it would lose the
// link — and left as it was.
func TestSetupCodexAndSymlinks(t *testing.T) {
	fakeInstall(t, true)
	codexHome := t.TempDir()
	env := map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}
	file := filepath.Join(codexHome, "config.toml")
	target := filepath.Join(t.TempDir(), "dotfiles", "codex.toml")
	if err := os.Symlink(target, file); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runSetupEnv(t, env, "codex", "--write")
	if code != exitError || !strings.Contains(errs, "is a symbolic link to "+target+", which does not exist") {
		t.Errorf("a dangling link: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("a file was made where the dangling link points")
	}
	if info, err := os.Lstat(file); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the dangling link was replaced")
	}

	writeFile(t, target, "model = \"o3\"\n", 0o600)
	if code, out, errs := runSetupEnv(t, env, "codex", "--write"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if info, err := os.Lstat(file); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
	if data, _ := os.ReadFile(target); !strings.HasPrefix(string(data), "model = \"o3\"\n") || ourCodexTables(t, data)["server chat"] == "" {
		t.Errorf("the link's file is\n%s", data)
	}
	if code, out, _ := runSetupEnv(t, env, "codex", "--remove"); code != 0 || !strings.Contains(out, "server chat") {
		t.Fatalf("--remove: exit %d\n%s", code, out)
	}
	if info, err := os.Lstat(file); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatal("--remove replaced the link")
	}
}

// [features] after a UTF-8 byte order mark is found (the flag goes into
// it, not into a second [features] Codex would refuse), and the mark and
// CRLF line ends stay.
func TestSetupCodexReadsPastAByteOrderMark(t *testing.T) {
	fakeInstall(t, true)
	for _, eol := range []string{"\n", "\r\n"} {
		mine := "\ufeff[features]" + eol + "web_search = true" + eol
		code, out, after, _ := codexCase(t, mine, "--write")
		if code != 0 || !strings.HasPrefix(after, "\ufeff[features]"+eol+"web_search = true"+eol+"hooks = true "+codexMarker+eol) || strings.Count(after, "[features]") != 1 {
			t.Errorf("%q: exit %d\n%s\n%q", eol, code, out, after)
		}
		if eol == "\r\n" && strings.Count(after, "\n") != strings.Count(after, "\r\n") {
			t.Errorf("lines setup added do not end in CRLF:\n%q", after)
		}
		if doc := keys(t, after); lookup(doc, "features", "web_search") != true {
			t.Errorf("the person's key: %v", doc)
		}
	}
}
