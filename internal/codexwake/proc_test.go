package codexwake

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
)

// What kind of Codex process a command line runs: the interactive
// terminal (with a prompt, resume, fork), the shared background server,
// or something nobody sits at.
func TestKindOfACodexCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		kind string
		cd   string
	}{
		{nil, KindInterface, ""},
		{[]string{"--no-alt-screen"}, KindInterface, ""},
		{[]string{"-c", `model="o3"`, "fix the build"}, KindInterface, ""},
		{[]string{"-C", "/src/mesh-gw", "resume", "--last"}, KindInterface, "/src/mesh-gw"},
		{[]string{"--cd=sub", "fork"}, KindInterface, "sub"},
		{[]string{"-m", "exec", "resume"}, KindInterface, ""}, // -m takes "exec" as its value
		{[]string{"app-server", "--listen", "unix://", "--managed-daemon"}, KindServer, ""},
		{[]string{"app-server", "daemon", "pid-update-loop"}, KindServer, ""},
		{[]string{"exec", "--json", "hi"}, KindOther, ""},
		{[]string{"--enable", "x", "queue", "--thread", "t", "--message", "m"}, KindOther, ""},
		{[]string{"mcp-server"}, KindOther, ""},
	} {
		if got := kindOf(tc.args); got != tc.kind {
			t.Errorf("codex %q is %s, want %s", tc.args, got, tc.kind)
		}
		if got := parseCommandLine(tc.args).cd; got != tc.cd {
			t.Errorf("codex %q works in %q, want %q", tc.args, got, tc.cd)
		}
	}
}

func TestCodexBinaries(t *testing.T) {
	for exe, want := range map[string]bool{
		"/usr/lib/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex":                   true,
		"/home/you/.codex/packages/app-server-daemon/releases/0.171.0-x86_64-unknown-linux-musl/bin/codex (deleted)": true,
		"/usr/bin/node":         false,
		"/usr/bin/codex-helper": false,
	} {
		if isCodexExe(exe) != want {
			t.Errorf("isCodexExe(%q) = %v", exe, !want)
		}
	}
	if v := versionFromPath("/home/you/.codex/packages/app-server-daemon/releases/0.171.0-x86_64-unknown-linux-musl/bin/codex"); v != "0.171.0" {
		t.Errorf("the background server's binary names version %q", v)
	}
	if v := versionFromPath("/usr/lib/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"); v != "" {
		t.Errorf("a path without a release names version %q", v)
	}
}

func TestCodexHomeFromTheTranscript(t *testing.T) {
	if got := HomeOf("/home/you/.codex/sessions/2026/12/02/rollout-2026-12-02T10-31-55-01a2364f-9770-7672-ab08-0202f9caf2b0.jsonl"); got != "/home/you/.codex" {
		t.Errorf("HomeOf = %q", got)
	}
	if got := HomeOf("/tmp/transcript.jsonl"); got != "" {
		t.Errorf("HomeOf of another path = %q", got)
	}
	if got := codexHomeOf(map[string]string{"HOME": "/home/you"}); got != "/home/you/.codex" {
		t.Errorf("codexHomeOf = %q", got)
	}
	if got := codexHomeOf(map[string]string{"HOME": "/home/you", "CODEX_HOME": "/work/codex/"}); got != "/work/codex" {
		t.Errorf("codexHomeOf with CODEX_HOME = %q", got)
	}
}

func TestVersions(t *testing.T) {
	for v, older := range map[string]bool{"0.170.0": true, "0.171.0": false, "0.171": false, "0.172.1": false, "1.0.0": false, "0.99.9": true, "": false} {
		if Older(v) != older {
			t.Errorf("Older(%q) = %v", v, !older)
		}
	}
	if v := VersionIn("codex-cli 0.171.0\n"); v != "0.171.0" {
		t.Errorf("VersionIn = %q", v)
	}
}

// Tested is the version the Makefile pins for the end-to-end tests.
func TestTestedIsTheMakefilesCodex(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CODEX_VERSION\s*\?=\s*(\S+)`).FindSubmatch(data)
	if m == nil || string(m[1]) != Tested {
		t.Fatalf("the Makefile pins Codex %q, the doorbell says it is tested with %s", m, Tested)
	}
}

// A record is a regular file of the hook's: a symlink planted in its
// place is refused, not followed.
func TestARecordIsNeverASymlink(t *testing.T) {
	dir := t.TempDir()
	c := Client{Process: Process{PID: 1, Start: 2}}
	target := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(target, []byte("mine"), 0o600)
	if err := os.Symlink(target, RecordPath(dir, c.Process, party)); err != nil {
		t.Fatal(err)
	}
	if err := Start(t.Context(), dir, c, party, Thread{ID: "t1", Version: Tested}); err == nil {
		t.Error("a symlinked record was written through")
	}
	if data, _ := os.ReadFile(target); string(data) != "mine" {
		t.Errorf("the file behind the link now holds %q", data)
	}
}
