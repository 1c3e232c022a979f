package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/pgtest"
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

// doctor says whether the hooks it finds would load and run this
// install's hook on its database.
func TestDoctorChecksTheHooks(t *testing.T) {
	dir := fakeInstall(t, true)
	hook := filepath.Join(dir, "bin", "mcpp-chat-hook")
	other := filepath.Join(t.TempDir(), "mcpp-chat-hook")
	writeFile(t, other, "#!/bin/sh\n", 0o755)
	// all three events; %s is the Stop command
	doc := `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "MCPP_CHAT_DB=$DB '` + hook + `' --event SessionStart"}]}],
	  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "env MCPP_CHAT_DB=$DB '` + hook + `' --event UserPromptSubmit"}]}],
	  "Stop": [{"hooks": [{"type": "command", "command": %s, "timeout": 10}]}]}}`
	stop := `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": %s, "timeout": 10}]}]}}`
	cases := []struct {
		name, settings string
		code           int
		want           string
	}{
		{"ours, working", strings.Replace(doc, "%s", `"MCPP_CHAT_DB=$DB '`+hook+`' --event Stop"`, 1), exitOK, "hooks:       SessionStart, Stop, UserPromptSubmit in "},
		{"on another database", strings.Replace(doc, "%s", `"MCPP_CHAT_DB=/srv/chat.db '`+hook+`' --event Stop"`, 1), exitError, "reads the database /srv/chat.db, not this install's database"},
		{"another install's hook", strings.Replace(doc, "%s", `"MCPP_CHAT_DB=$DB `+other+` --event Stop"`, 1), exitError, "runs " + other + ", not this install's " + hook},
		{"one event only", strings.Replace(stop, "%s", `"MCPP_CHAT_DB=$DB '`+hook+`' --event Stop"`, 1), exitError, "has no mcpp-chat SessionStart hook — run: " + invocation(func(string) string { return "" }) + " setup hooks --write"},
		{"twice", strings.Replace(doc, "%s", `"MCPP_CHAT_DB=$DB '`+hook+`' --event Stop"}, {"type": "command", "command": "MCPP_CHAT_DB=$DB '`+hook+`' --event Stop"`, 1), exitError, "runs mcpp-chat's Stop hook 2 times"},
		{"what setup hooks printed before its notes went to stderr", "# Claude Code hooks\n" + strings.Replace(stop, "%s", `"x"`, 1), exitError, "not valid JSON (line 1"},
		{"wrong shape", `{"hooks": {"Stop": {"command": "x"}}}`, exitError, "hooks.Stop is not a list"},
		{"hook binary missing", strings.Replace(stop, "%s", `"/gone/bin/mcpp-chat-hook --event Stop"`, 1), exitError, "/gone/bin/mcpp-chat-hook is missing — run make build"},
		{"none of ours", strings.Replace(stop, "%s", `"notify-send done"`, 1), exitOK, "none of mcpp-chat's"},
		{"no idle wake", strings.Replace(doc, "%s", `"MCPP_CHAT_DB=$DB '`+hook+`' --event Stop"`, 1), exitOK, "to add it run: " + invocation(func(string) string { return "" }) + " setup hooks --write"},
	}
	for _, c := range cases {
		home := t.TempDir()
		settings := strings.ReplaceAll(c.settings, "$DB", filepath.Join(home, "chat.db"))
		writeFile(t, filepath.Join(home, ".claude", "settings.json"), settings, 0o600)
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
	_, printed, _ := runSetupEnv(t, map[string]string{"HOME": home, "MCPP_CHAT_DB": filepath.Join(home, "chat.db")}, "hooks", "--wake")
	file := filepath.Join(home, "hooks.json")
	writeFile(t, file, printed, 0o600)
	code, out := runDoctor(t, home, "--settings", file)
	if code != exitOK || !strings.Contains(out, "hooks:       PreToolUse, SessionStart, Stop, Stop (idle wake), UserPromptSubmit in "+file) ||
		!strings.Contains(out, "edit hook:   installed") {
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

// doctor finds the server's registration in Claude Code's files and in
// Codex's, and warns when it runs another binary or opens another database.
func TestDoctorChecksTheRegistration(t *testing.T) {
	dir := fakeInstall(t, true)
	exe := filepath.Join(dir, "bin", "mcpp-chat")
	home := t.TempDir()
	db := filepath.Join(home, "chat.db")
	claude := `{"mcpServers": {"chat": {"type": "stdio", "command": %q, "args": ["serve"], "env": {"MCPP_CHAT_DB": %q}}, "other": {"command": "npx", "args": ["x"]}},
	  "projects": {%q: {"mcpServers": {"chat-local": {"command": "/gone/bin/mcpp-chat", "args": ["serve"]}}}}}`
	writeFile(t, filepath.Join(home, ".claude.json"), fmt.Sprintf(claude, exe, db, home), 0o600)
	writeFile(t, filepath.Join(home, ".mcp.json"), fmt.Sprintf(`{"mcpServers": {"chat": {"command": %q, "args": ["serve"], "env": {"MCPP_CHAT_DB": "/srv/other.db"}}}}`, exe), 0o600)
	codex := "model = \"o3\"\n[mcp_servers.chat]\ncommand = %q\nargs = [\"serve\"]\n# a comment\nenv = { MCPP_CHAT_DB = %q, OTHER = \"a, b\" }\n\n[mcp_servers.bare]\ncommand = %q\nargs = [ \"serve\" ]\n"
	writeFile(t, filepath.Join(home, ".codex", "config.toml"), fmt.Sprintf(codex, exe, db, exe), 0o600)

	code, out := runDoctor(t, home)
	for _, want := range []string{
		`registered:  "chat" in Claude Code, user scope (` + filepath.Join(home, ".claude.json") + "): " + exe + " serve",
		"/gone/bin/mcpp-chat is missing",
		"Claude Code, project scope (" + filepath.Join(home, ".mcp.json") + "): its server opens the database /srv/other.db, not this install's database " + db,
		`registered:  "chat" in Codex`,
		// Codex passes no MCPP_CHAT_DB from the shell: without env the
		// server opens the install's own database.
		"Codex (" + filepath.Join(home, ".codex", "config.toml") + "): its server opens the database " + filepath.Join(dir, "chat.db"),
		"delete the [mcp_servers.bare] table, then run: " + invocation(func(string) string { return "" }) + " setup codex --write",
		// claude mcp add refuses a name that is taken: the advice removes it first.
		"run: claude mcp remove --scope local chat-local, then the line `" + invocation(func(string) string { return "" }) + " setup claude` prints",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if code != exitError || strings.Count(out, "warning:") != 3 {
		t.Errorf("exit %d, want 1 and three warnings:\n%s", code, out)
	}

	empty := t.TempDir()
	if code, out := runDoctor(t, empty); code != exitOK || !strings.Contains(out, "registered:  nowhere") || !strings.Contains(out, invocation(func(string) string { return "" })+" setup claude") {
		t.Errorf("no registration: exit %d\n%s", code, out)
	}
}

// doctor warns about what other users could change or read (a team
// hub's tokens too), and about a hook binary of another build.
func TestDoctorChecksModesAndVersions(t *testing.T) {
	dir := fakeInstall(t, true)
	hook := filepath.Join(dir, "bin", "mcpp-chat-hook")
	home := t.TempDir()
	if code, out := runDoctor(t, home); code != exitOK || !strings.Contains(out, "(same build)") {
		t.Fatalf("a clean install: exit %d\n%s", code, out)
	}
	backup := filepath.Join(home, ".backups", "chat.db.260101")
	writeFile(t, backup, "x", 0o600)
	os.Chmod(backup, 0o644)
	tokens := filepath.Join(home, "chat.db.hub")
	writeFile(t, tokens, "x", 0o600)
	os.Chmod(tokens, 0o660)
	os.Chmod(home, 0o777)
	os.Chmod(hook, 0o777)
	writeFile(t, hook, "#!/bin/sh\necho mcpp-chat-hook v0.1\n", 0o777)
	code, out := runDoctor(t, home)
	for _, want := range []string{
		"other users can create and replace files in the database's folder " + home + " (mode 0777) — run: chmod o-w",
		"other users can read the backup " + backup + " (mode 0644): it is the whole chat — run: chmod 600",
		"other users can reach the team hub's tokens " + tokens + " (mode 0660), and one who can write them can give themselves a token — run: chmod 600",
		"other users can replace " + hook,
		`the hook binary is "mcpp-chat-hook v0.1", this is mcpp-chat ` + version + " — rebuild both: make build",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if code != exitError {
		t.Errorf("exit %d", code)
	}
}

// doctor and info only look: a mistyped MCPP_CHAT_DB is reported, not
// created, and an existing database is not changed (not even migrated).
func TestDoctorAndInfoWriteNothing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo", "chat.db")
	env := map[string]string{"MCPP_CHAT_DB": missing, "MCPP_CHAT_HOME": filepath.Join(dir, "module"),
		"MCPP_CHAT_WORKSPACE": filepath.Join(dir, "repo"), "HOME": filepath.Join(dir, "home")}
	for _, cmd := range []string{"doctor", "info"} {
		var out, errb bytes.Buffer
		code := runCmd([]string{cmd}, env, &out, &errb)
		if _, err := os.Stat(filepath.Dir(missing)); err == nil {
			t.Fatalf("%s created %s", cmd, filepath.Dir(missing))
		}
		if code != exitOK || !strings.Contains(out.String(), "no database at "+missing+" yet") || !strings.Contains(out.String(), "check MCPP_CHAT_DB") {
			t.Errorf("%s: exit %d, says:\n%s%s", cmd, code, out.String(), errb.String())
		}
	}

	// An existing database: every byte as it was.
	env["MCPP_CHAT_DB"] = filepath.Join(dir, "data", "chat.db")
	if err := os.Mkdir(env["MCPP_CHAT_WORKSPACE"], 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runCmd([]string{"call", "chat_whoami"}, env, &out, &errb); code != exitOK {
		t.Fatalf("call: %s %s", out.String(), errb.String())
	}
	before := dirDigest(t, filepath.Dir(env["MCPP_CHAT_DB"]))
	env["MCPP_CHAT_WORKSPACE"] = filepath.Join(dir, "another")
	for _, cmd := range []string{"doctor", "info"} {
		out.Reset()
		if code := runCmd([]string{cmd}, env, &out, &errb); code != exitOK {
			t.Errorf("%s: exit %d\n%s", cmd, code, out.String())
		}
		if after := dirDigest(t, filepath.Dir(env["MCPP_CHAT_DB"])); after != before {
			t.Errorf("%s changed the database folder:\n%s\nwas\n%s", cmd, after, before)
		}
	}
}

// dirDigest names every file in dir with its size and content hash.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %x\n", strings.TrimPrefix(path, dir), len(data), sha256.Sum256(data))
		return nil
	})
	return b.String()
}

// doctor on a team store it cannot use says why, with the fix for that
// cause: not "check that its server is running" for a missing database or
// a wrong password.
func TestDoctorSaysWhyTheTeamStoreIsOutOfReach(t *testing.T) {
	const wrong = "Wr0ngPw"
	for _, c := range []struct{ what, url, want string }{
		{"a missing database", strings.Replace(pgtest.URL(t), "postgres:///", "postgres:///no_such_chat", 1), `has no database "no_such_chat`},
		{"a wrong password", pgtest.PasswordURL(t, "Rt4pass") + "&password=" + wrong, "refused the password of user"},
		{"no server", "postgres:///chat?host=" + filepath.Join(t.TempDir(), "none") + "&connect_timeout=2", "no PostgreSQL server answers at"},
	} {
		env := isolatedEnv(t)
		env["MCPP_CHAT_STORE"] = c.url
		code, out, _ := cli(t, env, "doctor")
		if code != exitError || !strings.Contains(out, "reachable:   no — ") || !strings.Contains(out, c.want) || strings.Contains(out, wrong) {
			t.Errorf("%s: exit %d, doctor says:\n%s", c.what, code, out)
		}
		if c.what != "no server" && strings.Contains(out, "server is running") {
			t.Errorf("%s: doctor blames the server:\n%s", c.what, out)
		}
	}
}

// doctor's and setup's advice names a command that runs this binary from
// here: mcpp-chat only when that name on PATH is it, else its path —
// bin/mcpp-chat in a fresh clone, where no mcpp-chat is on PATH.
func TestAdviceNamesACommandThatWorks(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "bin", "mcpp-chat")
	writeFile(t, exe, "#!/bin/sh\n", 0o755)
	old := executable
	executable = func() (string, error) { return exe, nil }
	t.Cleanup(func() { executable = old })
	elsewhere := filepath.Join(t.TempDir(), "mcpp-chat")
	writeFile(t, elsewhere, "#!/bin/sh\n", 0o755)
	t.Chdir(dir)
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "bin"), "mcpp-chat"},
		{"", "bin/mcpp-chat"},
		{filepath.Dir(elsewhere) + ":" + filepath.Join(dir, "bin"), "bin/mcpp-chat"}, // the name runs another one
	} {
		if got := invocation(func(k string) string { return map[string]string{"PATH": c.path}[k] }); got != c.want {
			t.Errorf("PATH=%q: %q, want %q", c.path, got, c.want)
		}
	}
	t.Chdir(t.TempDir())
	if got := invocation(func(string) string { return "" }); got != exe {
		t.Errorf("outside the checkout: %q, want %q", got, exe)
	}
}

// doctor says whether the idle wake is installed, and warns when it would
// not work: the entry lost its asyncRewake flag (it would hold every
// stop), or the Claude Code here is older than the one it is tested with.
func TestDoctorSaysWhetherTheIdleWakeIsInstalled(t *testing.T) {
	fakeInstall(t, true)
	doctor := func(home, path string) (int, string) {
		env := map[string]string{"HOME": home, "MCPP_CHAT_DB": filepath.Join(home, "chat.db"), "MCPP_CHAT_WORKSPACE": home, "PATH": path}
		var out bytes.Buffer
		code := run(context.Background(), []string{"doctor"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &out)
		return code, out.String()
	}
	write := func(home string, args ...string) string {
		env := map[string]string{"HOME": home, "MCPP_CHAT_DB": filepath.Join(home, "chat.db")}
		if code, out, errs := runSetupEnv(t, env, append([]string{"hooks", "--write"}, args...)...); code != 0 {
			t.Fatalf("setup: exit %d\n%s%s", code, out, errs)
		}
		return filepath.Join(home, ".claude", "settings.json")
	}
	current := fakeClaude(t, claudeCodeTested)

	home := t.TempDir()
	file := write(home)
	code, out := doctor(home, current)
	if code != exitOK || !strings.Contains(out, "idle wake:   installed (hooks.Stop[1].hooks[0])") {
		t.Errorf("with the idle wake: exit %d\n%s", code, out)
	}
	code, out = doctor(home, fakeClaude(t, "2.1.100"))
	if code != exitError || !strings.Contains(out, "Claude Code 2.1.100") || !strings.Contains(out, "older than "+claudeCodeTested) {
		t.Errorf("with an older Claude Code: exit %d\n%s", code, out)
	}
	data, _ := os.ReadFile(file)
	writeFile(t, file, strings.Replace(string(data), `"asyncRewake": true,`, "", 1), 0o600)
	code, out = doctor(home, current)
	if code != exitError || !strings.Contains(out, `is the idle wake without "asyncRewake": true`) {
		t.Errorf("without asyncRewake: exit %d\n%s", code, out)
	}
	write(home) // puts the flag back
	if code, out := doctor(home, current); code != exitOK {
		t.Errorf("after setup hooks --write: exit %d\n%s", code, out)
	}

	home = t.TempDir()
	write(home, "--no-wake")
	code, out = doctor(home, current)
	if code != exitOK || !strings.Contains(out, "idle wake:   not installed") || !strings.Contains(out, "setup hooks --write") {
		t.Errorf("without the idle wake: exit %d\n%s", code, out)
	}
}

// A member's token, the hook's cache of excerpts and a SQLite team hub's
// tokens, kept in a checkout that is the module folder, must not be
// committed: doctor warns of each one git tracks, with the command that
// stops it, and says nothing of one git only sees.
func TestDoctorWarnsOfPrivateFilesGitTracks(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on PATH")
	}
	repo := t.TempDir()
	if out, err := exec.Command(git, "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := config.SaveHub(filepath.Join(repo, "hub.json"), config.Hub{URL: "http://127.0.0.1:1", Token: "mcc_a_b"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "hub-cache", "mesh-gw.json"), "{}", 0o600)
	writeFile(t, filepath.Join(repo, "chat.db.hub"), "", 0o600)
	env := map[string]string{"HOME": t.TempDir(), "MCPP_CHAT_HOME": repo, "MCPP_CHAT_WORKSPACE": repo}
	doctor := func() string {
		var out bytes.Buffer
		run(context.Background(), []string{"doctor"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &out)
		return out.String()
	}
	if out := doctor(); strings.Contains(out, "git tracks") {
		t.Errorf("files git does not track:\n%s", out)
	}
	if out, err := exec.Command(git, "-C", repo, "add", "-f", "hub.json", "hub-cache", "chat.db.hub").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v\n%s", err, out)
	}
	out := doctor()
	for _, want := range []string{
		"git tracks " + filepath.Join(repo, "hub.json") + ", this machine's bearer token for the team hub",
		"git tracks " + filepath.Join(repo, "hub-cache") + ", the hook's cache of message excerpts",
		"git tracks " + filepath.Join(repo, "chat.db.hub") + ", a team hub's tokens",
		"run: git -C " + repo + " rm -r --cached hub.json",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
}

// make install PREFIX=… after registering the checkout's bin/: the copy's
// doctor sees one install — the same build on the same chat — in the
// server, the hooks and Codex's tables that run bin/, and says nothing of
// them; an entry of another build it still warns of.
func TestDoctorTakesTheCheckoutAndItsCopyForOneInstall(t *testing.T) {
	checkout := fakeInstall(t, true)
	writeFile(t, filepath.Join(checkout, "bin", "mcpp-chat"), "#!/bin/sh\necho mcpp-chat "+version+"\n", 0o755)
	home := t.TempDir()
	setupEnv := map[string]string{"HOME": home}
	for _, args := range [][]string{{"hooks", "--write"}, {"codex", "--write"}} {
		if code, out, errs := runSetupEnv(t, setupEnv, args...); code != 0 {
			t.Fatalf("setup %v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	writeFile(t, filepath.Join(home, ".claude.json"), fmt.Sprintf(`{"mcpServers": {"chat": {"command": %q, "args": ["serve"]}}}`, filepath.Join(checkout, "bin", "mcpp-chat")), 0o600)

	// The copy in PREFIX/bin, which make build's record points at the checkout.
	prefix := filepath.Join(t.TempDir(), "bin")
	writeFile(t, filepath.Join(prefix, "mcpp-chat"), "#!/bin/sh\necho mcpp-chat "+version+"\n", 0o755)
	writeFile(t, filepath.Join(prefix, "mcpp-chat-hook"), "#!/bin/sh\necho mcpp-chat-hook "+version+"\n", 0o755)
	old, oldCheckout := executable, config.BuildCheckout
	executable = func() (string, error) { return filepath.Join(prefix, "mcpp-chat"), nil }
	config.BuildCheckout = checkout
	t.Cleanup(func() { executable, config.BuildCheckout = old, oldCheckout })

	doctor := func() (int, string) {
		env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": checkout, "MCPP_CHAT_WORKSPACE": home, "PATH": prefix}
		var out bytes.Buffer
		code := run(context.Background(), []string{"doctor"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &out)
		return code, out.String()
	}
	code, out := doctor()
	if code != exitOK || strings.Contains(out, "warning") {
		t.Errorf("the checkout's bin/ and its copy: exit %d\n%s", code, out)
	}

	// bin/ rebuilt from another commit: that is another build.
	writeFile(t, filepath.Join(checkout, "bin", "mcpp-chat-hook"), "#!/bin/sh\necho mcpp-chat-hook v0.1\n", 0o755)
	code, out = doctor()
	if code != exitError || !strings.Contains(out, `(another build: "mcpp-chat-hook v0.1", this is `+version+`) — run: mcpp-chat setup hooks --write`) {
		t.Errorf("another build: exit %d\n%s", code, out)
	}
}
