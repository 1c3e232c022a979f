package codexwake

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCodex is a codex that records its arguments and CODEX_HOME and
// answers as told.
func fakeCodex(t *testing.T, answer string, code int) (exe, seen string) {
	t.Helper()
	dir := t.TempDir()
	exe, seen = filepath.Join(dir, "codex"), filepath.Join(dir, "seen")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + seen + "\necho \"CODEX_HOME=$CODEX_HOME\" >> " + seen +
		"\necho 'WARNING: proceeding, even though we could not create PATH aliases'\necho '" + answer + "'\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe, seen
}

// A ring is `codex queue --thread <id> --message <text>` with the thread's
// CODEX_HOME, and nothing else: no -c, --enable or --disable, no --resume.
func TestQueueRunsCodexQueueAndNothingElse(t *testing.T) {
	exe, seen := fakeCodex(t, "Queued message 01a-q for thread 01a-t.", 0)
	th := Thread{ID: "01a-t", Exe: exe, CodexHome: "/home/you/.codex"}
	if err := Queue(t.Context(), th, "mcpp-chat: mesh-gw is waiting", []string{"PATH=/usr/bin:/bin", "CODEX_HOME=/elsewhere"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(seen)
	want := "queue\n--thread\n01a-t\n--message\nmcpp-chat: mesh-gw is waiting\nCODEX_HOME=/home/you/.codex\n"
	if string(data) != want {
		t.Errorf("codex ran with:\n%s\nwant:\n%s", data, want)
	}
}

// A refusal is an error that says what Codex said; so is an exit 0
// without the line that says the message was queued.
func TestQueueReportsARefusal(t *testing.T) {
	exe, _ := fakeCodex(t, "Error: thread/queue/add failed: no rollout found for thread id 01a-t", 1)
	err := Queue(t.Context(), Thread{ID: "01a-t", Exe: exe}, "x", nil)
	if err == nil || !strings.Contains(err.Error(), "no rollout found") {
		t.Errorf("a refusal gave %v", err)
	}
	exe, _ = fakeCodex(t, "something else", 0)
	if err := Queue(t.Context(), Thread{ID: "01a-t", Exe: exe}, "x", nil); err == nil {
		t.Error("an answer without \"Queued message\" counted as a ring")
	}
}

// With the thread's binary gone (Codex updated its background server),
// the codex on PATH rings.
func TestQueueFallsBackToCodexOnPath(t *testing.T) {
	exe, seen := fakeCodex(t, "Queued message q for thread t.", 0)
	err := Queue(t.Context(), Thread{ID: "t", Exe: "/gone/codex"}, "x", []string{"PATH=" + filepath.Dir(exe)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(seen); err != nil {
		t.Error("the codex on PATH did not run")
	}
	if err := Queue(t.Context(), Thread{ID: "t", Exe: "/gone/codex"}, "x", []string{"PATH=/nowhere"}); err == nil {
		t.Error("with no codex at all, the ring counted")
	}
}
