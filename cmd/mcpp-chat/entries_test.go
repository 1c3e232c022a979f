package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/codexconfig"
	"github.com/mcpp/mcpp-chat/internal/config"
)

// entry is one server or hook a client would start: its program and the
// variables it sets.
type entry struct {
	what string
	prog string
	vars map[string]string
}

// opens is the store and settings an entry opens when its client starts
// it with only HOME and PATH of the user's besides its own variables (the
// rule every entry setup prints or writes is held to), worked out here
// without setup's code.
func (e entry) opens(t *testing.T, home string) (string, config.Config) {
	t.Helper()
	clean := func(k string) string {
		if v, ok := e.vars[k]; ok {
			return v
		}
		return map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}[k]
	}
	p, cfg, err := config.Resolve(clean, e.prog)
	if err != nil {
		t.Fatalf("%s: %v", e.what, err)
	}
	return p.Store, cfg
}

// claudeEntries reads the `claude mcp add` line setup claude prints.
func claudeEntries(t *testing.T, out string) []entry {
	t.Helper()
	words := shellWords(snippet(out))
	e := entry{what: "the Claude Code server", vars: map[string]string{}}
	for i := 0; i < len(words); i++ {
		switch {
		case words[i] == "-e" && i+1 < len(words):
			k, v, _ := strings.Cut(words[i+1], "=")
			e.vars[k] = v
			i++
		case words[i] == "--" && i+1 < len(words):
			e.prog = words[i+1]
			i = len(words)
		}
	}
	if e.prog == "" {
		t.Fatalf("setup claude printed no command:\n%s", out)
	}
	return []entry{e}
}

// settingsEntries reads every hook of a settings file.
func settingsEntries(t *testing.T, file string) []entry {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	doc := decodeSettings(t, data)
	for _, ev := range append(slices.Clone(hookEvents), claimsEvent) {
		for _, cmd := range doc.commands(ev) {
			h := parseHookLine(cmd)
			out = append(out, entry{what: "the Claude Code hook " + cmd, prog: h.prog, vars: h.env})
		}
	}
	if len(out) < len(hookEvents) {
		t.Fatalf("%d hooks in %s:\n%s", len(out), file, data)
	}
	return out
}

// codexEntries reads the server table and the hook groups of a Codex
// config.
func codexEntries(t *testing.T, file string) []entry {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	servers, err := codexServers(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range servers {
		out = append(out, entry{what: "the Codex server " + name, prog: s.Command, vars: s.Env})
	}
	for _, b := range codexconfig.Parse(data) {
		if ourHookGroup(b) == "" {
			continue
		}
		raw, _ := b.Value("hooks")
		cmd, _ := codexconfig.String(codexconfig.Tables(raw)[0]["command"])
		h := parseHookLine(cmd)
		out = append(out, entry{what: "the Codex hook " + cmd, prog: h.prog, vars: h.env})
	}
	if len(out) != 2+len(codexHookEvents) { // the server, the hooks and the edit hook
		t.Fatalf("%d entries in %s:\n%s", len(out), file, data)
	}
	return out
}

// Every entry setup prints or writes — each client's server and each hook
// — opens the chat setup resolved, when its client starts it with only
// the variables it sets (plus HOME and PATH): per variable that can name
// the chat, per client.
func TestEveryEntryOpensTheSameChat(t *testing.T) {
	team := "postgres://chat@127.0.0.1:1/chat"
	for _, c := range []struct {
		name string
		env  func(t *testing.T, dir string) map[string]string
	}{
		{"MCPP_CHAT_DB", func(t *testing.T, dir string) map[string]string {
			return map[string]string{"MCPP_CHAT_DB": filepath.Join(t.TempDir(), "shared data", "chat.db")}
		}},
		{"MCPP_CHAT_HOME", func(t *testing.T, dir string) map[string]string {
			other := filepath.Join(t.TempDir(), "other module")
			writeFile(t, filepath.Join(other, "config.yaml"), "identity:\n  git_root: false\n", 0o600)
			return map[string]string{"MCPP_CHAT_HOME": other}
		}},
		{"MCPP_CHAT_CONFIG", func(t *testing.T, dir string) map[string]string {
			conf := filepath.Join(t.TempDir(), "team.yaml")
			writeFile(t, conf, "storage:\n  url: "+team+"\n", 0o600)
			return map[string]string{"MCPP_CHAT_CONFIG": conf}
		}},
		{"MCPP_CHAT_STORE", func(t *testing.T, dir string) map[string]string {
			return map[string]string{"MCPP_CHAT_STORE": team}
		}},
		{"a hub member (connect saved hub.json)", func(t *testing.T, dir string) map[string]string {
			if err := config.SaveHub(filepath.Join(dir, "hub.json"), config.Hub{URL: "https://chat.team.example", Token: "mcc_x_y"}); err != nil {
				t.Fatal(err)
			}
			return map[string]string{}
		}},
		{"a hub member in another module folder", func(t *testing.T, dir string) map[string]string {
			other := t.TempDir()
			if err := config.SaveHub(filepath.Join(other, "hub.json"), config.Hub{URL: "https://chat.team.example", Token: "mcc_x_y"}); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"MCPP_CHAT_HOME": other}
		}},
	} {
		for _, client := range []string{"claude", "hooks", "codex"} {
			t.Run(c.name+"/"+client, func(t *testing.T) {
				dir := fakeInstall(t, true)
				home := t.TempDir()
				env := c.env(t, dir)
				env["HOME"] = home
				want, wantCfg, err := config.Resolve(func(k string) string { return env[k] }, filepath.Join(dir, "bin", "mcpp-chat"))
				if err != nil {
					t.Fatal(err)
				}
				var entries []entry
				switch client {
				case "claude":
					code, out, errs := runSetupEnv(t, env, "claude")
					if code != 0 {
						t.Fatalf("exit %d\n%s%s", code, out, errs)
					}
					entries = claudeEntries(t, out)
				case "hooks":
					file := filepath.Join(home, "settings.json")
					if code, out, errs := runSetupEnv(t, env, "hooks", "--write", "--settings", file); code != 0 {
						t.Fatalf("exit %d\n%s%s", code, out, errs)
					}
					entries = settingsEntries(t, file)
				case "codex":
					env["CODEX_HOME"] = filepath.Join(home, ".codex")
					if code, out, errs := runSetupEnv(t, env, "codex", "--write"); code != 0 {
						t.Fatalf("exit %d\n%s%s", code, out, errs)
					}
					entries = codexEntries(t, filepath.Join(home, ".codex", "config.toml"))
				}
				for _, e := range entries {
					store, cfg := e.opens(t, home)
					if store != want.Store || !cfg.Equal(wantCfg) {
						t.Errorf("%s (setting %v) opens %s, the server's chat is %s", e.what, e.vars, store, want.Store)
					}
				}
			})
		}
	}
}

// doctor resolves each installed server and hook as its client starts it
// — with the variables it sets, HOME and PATH — and warns of one that
// would open another chat than this install's, even when the shell doctor
// runs in has the variable that would hide it.
func TestDoctorFlagsAnEntryThatOpensAnotherChat(t *testing.T) {
	dir := fakeInstall(t, true)
	exe, hook := filepath.Join(dir, "bin", "mcpp-chat"), filepath.Join(dir, "bin", "mcpp-chat-hook")
	team := "postgres://chat@127.0.0.1:1/chat"
	home := t.TempDir()
	env := map[string]string{"HOME": home, "MCPP_CHAT_STORE": team, "MCPP_CHAT_WORKSPACE": home}
	doctor := func() (int, string) {
		var out bytes.Buffer
		code := run(context.Background(), []string{"doctor"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &out)
		return code, out.String()
	}
	settingsFile := filepath.Join(home, ".claude", "settings.json")
	hooks := func(prefix string) string {
		var groups []string
		for _, ev := range hookEvents {
			groups = append(groups, fmt.Sprintf(`%q: [{"hooks": [{"type": "command", "command": %q}]}]`, ev, prefix+shellQuote(hook)+" --event "+ev))
		}
		return `{"hooks": {` + strings.Join(groups, ", ") + `}}`
	}
	claude := func(env string) string {
		return fmt.Sprintf(`{"mcpServers": {"chat": {"command": %q, "args": ["serve"]%s}}}`, exe, env)
	}

	// What setup hooks --write wrote before: nothing names the store, so
	// a session started without the shell's variable reads the database.
	writeFile(t, settingsFile, hooks(""), 0o600)
	writeFile(t, filepath.Join(home, ".claude.json"), claude(""), 0o600)
	code, out := doctor()
	if code != exitError || strings.Count(out, "database "+filepath.Join(dir, "chat.db")+", not this install's team store "+team) != 1+len(hookEvents) {
		t.Errorf("entries that would open the database file: exit %d\n%s", code, out)
	}

	// Entries that name the store: nothing to say.
	writeFile(t, settingsFile, hooks("MCPP_CHAT_STORE="+team+" "), 0o600)
	writeFile(t, filepath.Join(home, ".claude.json"), claude(fmt.Sprintf(`, "env": {"MCPP_CHAT_STORE": %q}`, team)), 0o600)
	if _, out := doctor(); strings.Contains(out, "not this install's") || !strings.Contains(out, "hooks:       SessionStart, Stop, UserPromptSubmit") {
		t.Errorf("entries that open the team store:\n%s", out) // (exit 1: no store answers there)
	}
}
