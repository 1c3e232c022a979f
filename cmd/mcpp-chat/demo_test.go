package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stand-in hook binary: answers each event the way Claude Code's hook
// contract allows, and echoes the environment it was given.
const fakeHook = `#!/bin/sh
cat >/dev/null
case "$2" in
SessionStart) printf '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"you are node-dash\\ndb=%s project=%s"}}\n' "$MCPP_CHAT_DB" "$CLAUDE_PROJECT_DIR" ;;
Stop) printf '{"decision":"block","reason":"a peer waits on node-dash"}\n' ;;
esac
`

func TestDemoShowsTheHookInItsOwnUniverse(t *testing.T) {
	dir := fakeInstall(t, false)
	if err := os.WriteFile(filepath.Join(dir, "bin", "mcpp-chat-hook"), []byte(fakeHook), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", t.TempDir())
	callerDB := filepath.Join(t.TempDir(), "mine.db")
	env := map[string]string{"MCPP_CHAT_DB": callerDB, "MCPP_CHAT_HOME": dir}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"demo"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
	if code != exitOK {
		t.Fatalf("demo: exit %d\n%s\n%s", code, errb.String(), out.String())
	}
	text := out.String()
	for _, want := range []string{
		"Claude Code in node-dash runs the hook at SessionStart:\n  added to the model's context:\n  ┊ you are node-dash\n  ┊ db=" + os.Getenv("TMPDIR"),
		"/data/chat.db project=" + os.Getenv("TMPDIR"),
		"runs the hook at Stop:\n  the turn does not end (decision: block); the model reads:\n  ┊ a peer waits on node-dash",
		"[chunk-api] is archived",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("transcript lacks %q:\n%s", want, text)
		}
	}
	if _, err := os.Stat(callerDB); err == nil {
		t.Error("demo touched the caller's database")
	}
}
