package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/tools"
)

// isolatedEnv is an install of its own: database, module folder, home and
// workspace in temporary folders.
func isolatedEnv(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"MCPP_CHAT_DB":        filepath.Join(dir, "data", "chat.db"),
		"MCPP_CHAT_HOME":      filepath.Join(dir, "module"),
		"MCPP_CHAT_WORKSPACE": filepath.Join(dir, "repo"),
		"HOME":                filepath.Join(dir, "home"),
	}
}

// zeros is /dev/zero with a bound, counting what was read from it.
type zeros struct{ n, limit int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n >= z.limit {
		return 0, io.EOF
	}
	n := min(len(p), z.limit-z.n)
	clear(p[:n])
	z.n += n
	return n, nil
}

// `call TOOL -` reads at most the request limit from stdin and answers a
// sentence as JSON: fed from /dev/zero, an unbounded read would take all
// memory.
func TestCallReadsBoundedArgumentsFromStdin(t *testing.T) {
	env := isolatedEnv(t)
	in := &zeros{limit: 4 * tools.MaxLineBytes}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"call", "chat_whoami", "-"}, func(k string) string { return env[k] }, in, &out, &errb)
	var r callReply
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("not one JSON answer (%v): %q %q", err, out.String(), errb.String())
	}
	if code != exitUsage || r.Success || !strings.Contains(r.Error, "over 16 MiB") {
		t.Fatalf("exit %d, answer %+v", code, r)
	}
	if in.n > tools.MaxLineBytes+1 {
		t.Fatalf("read %d bytes of stdin, want at most %d", in.n, tools.MaxLineBytes+1)
	}
}

// Every command's --help prints its usage once, on stdout; a wrong flag
// is one sentence on stderr that names --help, not the usage.
func TestHelpPrintsTheUsageOnce(t *testing.T) {
	env := isolatedEnv(t)
	getenv := func(k string) string { return env[k] }
	for _, cmd := range []string{"serve", "call", "watch", "doctor", "info", "setup", "demo", "migrate", "version"} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{cmd, "--help"}, getenv, strings.NewReader(""), &out, &errb); code != exitOK {
			t.Errorf("%s --help: exit %d", cmd, code)
		}
		if n := strings.Count(out.String(), "Usage: mcpp-chat "+cmd); n != 1 || errb.Len() != 0 {
			t.Errorf("%s --help: usage %d times on stdout, stderr %q", cmd, n, errb.String())
		}
		out.Reset()
		errb.Reset()
		if code := run(context.Background(), []string{cmd, "--no-such-flag"}, getenv, strings.NewReader(""), &out, &errb); code != exitUsage {
			t.Errorf("%s --no-such-flag: exit %d", cmd, code)
		}
		if want := "mcpp-chat " + cmd + ": there is no flag --no-such-flag — mcpp-chat " + cmd + " --help says what each flag takes\n"; errb.String() != want || out.Len() != 0 {
			t.Errorf("%s --no-such-flag: stderr %q, stdout %q; want stderr %q", cmd, errb.String(), out.String(), want)
		}
	}
}

// A flag's wrong value says what the flag takes, not the flag package's
// "parse error" and the whole usage.
func TestAWrongFlagValueSaysWhatItTakes(t *testing.T) {
	env := isolatedEnv(t)
	for args, want := range map[string]string{
		"log --since abc":  `mcpp-chat log: --since SEQ takes a whole number, not "abc" — mcpp-chat log --help says what each flag takes`,
		"log --since":      `mcpp-chat log: --since SEQ needs a value, a whole number — mcpp-chat log --help says what each flag takes`,
		"search --limit x": `mcpp-chat search: --limit N takes a whole number, not "x" — mcpp-chat search --help says what each flag takes`,
	} {
		code, out, errs := cli(t, env, strings.Fields(args)...)
		if code != exitUsage || out != "" || errs != want+"\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", args, code, out, errs, want)
		}
	}
}

// A --workspace that names no folder is refused, and nothing is written:
// a typo would otherwise make a party for a folder no session works in.
func TestCallRefusesAWorkspaceThatDoesNotExist(t *testing.T) {
	env := isolatedEnv(t)
	nowhere := filepath.Join(filepath.Dir(env["MCPP_CHAT_WORKSPACE"]), "src", "nowhere")
	code, out, _ := cli(t, env, "call", "--workspace", nowhere, "chat_whoami")
	var r callReply
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON answer (%v): %q", err, out)
	}
	if code != exitError || r.Success || !strings.Contains(r.Error, "the folder "+nowhere+" (from --workspace) does not exist") {
		t.Fatalf("exit %d, answer %+v", code, r)
	}
	if _, err := os.Stat(env["MCPP_CHAT_DB"]); !os.IsNotExist(err) {
		t.Errorf("the refused call opened the database (%v)", err)
	}
	file := filepath.Join(env["MCPP_CHAT_WORKSPACE"], "notes.txt")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := cli(t, env, "call", "--workspace", file, "chat_whoami"); code != exitError || !strings.Contains(out, "is a file, not a folder") {
		t.Errorf("a file as the workspace: exit %d, %s", code, out)
	}
}

// call --display prints the answer as a person reads it: the display text,
// unescaped, or the error on stderr.
func TestCallDisplayPrintsWhatAPersonReads(t *testing.T) {
	env := isolatedEnv(t)
	code, out, errs := cli(t, env, "call", "--display", "chat_whoami")
	if code != exitOK || !strings.HasPrefix(out, "**You are repo** — the repository at ") || strings.Contains(out, `\n`) || errs != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = cli(t, env, "call", "--display", "chat_say", `{"text": "hello"}`)
	if code != exitError || out != "" || !strings.HasPrefix(errs, "mcpp-chat call: you are not in any channel — ") {
		t.Errorf("a refused call: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, _ := cli(t, env, "call", "--display", "--stream"); code != exitUsage {
		t.Errorf("--display with --stream: exit %d, want a usage error", code)
	}
}

// mcpp-chat hook --help describes mcpp-chat hook, not the hook binary; the
// hook binary's own help is its own.
func TestHookHelpNamesTheCommandRun(t *testing.T) {
	code, out, _ := cli(t, isolatedEnv(t), "hook", "--help")
	if code != exitOK || !strings.HasPrefix(out, "mcpp-chat hook — ") || !strings.Contains(out, "  mcpp-chat hook --event Stop --wait") || strings.Contains(out, "mcpp-chat-hook --event") {
		t.Errorf("mcpp-chat hook --help: exit %d\n%s", code, out)
	}
	if code, out, _ := cli(t, isolatedEnv(t), "version", "--help"); code != exitOK || !strings.Contains(out, "Prints this mcpp-chat's version") {
		t.Errorf("version --help: exit %d\n%s", code, out)
	}
}

// `call --stream` answers a request line over the bound with an error,
// under the request's id, and goes on to the next, as serve does; it used
// to exit.
func TestCallStreamAnswersAnOverlongLineAndGoesOn(t *testing.T) {
	env := isolatedEnv(t)
	long := &zeros{limit: 2 * tools.MaxLineBytes}
	in := io.MultiReader(
		strings.NewReader(`{"id": 1, "tool": "chat_whoami"}`+"\n"),
		strings.NewReader(`{"id": 2, "tool": "chat_say", "arguments": {"text": "`), long, strings.NewReader("\"}}\n"),
		strings.NewReader(`{"id": 3, "tool": "chat_whoami"}`+"\n"),
	)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"call", "--stream"}, func(k string) string { return env[k] }, in, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 { // ready, then three answers
		t.Fatalf("%d lines: %s", len(lines), out.String())
	}
	answers := map[string]streamReply{}
	for _, line := range lines[1:] {
		var r streamReply
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		answers[string(r.ID)] = r
	}
	if a := answers["1"]; !a.Success {
		t.Errorf("the call before the long line: %+v", a)
	}
	if a := answers["3"]; !a.Success {
		t.Errorf("the call after the long line: %+v", a)
	}
	if a, ok := answers["2"]; !ok || a.Success || !strings.Contains(a.Error, "over 16 MiB") {
		t.Errorf("the long line's answer, with its id: %+v", a)
	}
}

// The id of a request cut short is found only where it leads the line.
func TestLeadingID(t *testing.T) {
	for start, want := range map[string]string{
		`{"id": 7, "tool": "chat_say", "arguments": {"text": "xxx`: "7",
		`{"id":"a-1","tool"`:                  `"a-1"`,
		`{"tool": "chat_say", "id": 7, "argu`: "null",
		`{"id": {"nested": 1}, "tool": "x"`:   "null",
		`{"id": "unterminated`:                "null",
		`not json`:                            "null",
	} {
		if got := string(leadingID([]byte(start))); got != want {
			t.Errorf("leadingID(%q) = %s, want %s", start, got, want)
		}
	}
}
