package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/ncruces/go-sqlite3/driver"
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

// The demo's last line quotes the tick file: it must name the demo's last
// write. The sessions write their ticks in the background, so a line read
// before the last of them lands would name an earlier write; several runs
// give that race its chances.
func TestDemoQuotesTheLastTick(t *testing.T) {
	fakeInstall(t, false)
	for run := range 5 {
		t.Setenv("TMPDIR", t.TempDir())
		env := map[string]string{"MCPP_CHAT_DB": filepath.Join(t.TempDir(), "mine.db")}
		var out, errb bytes.Buffer
		if code := runCmd([]string{"demo", "--keep"}, env, &out, &errb); code != exitOK {
			t.Fatalf("demo: exit %d\n%s", code, errb.String())
		}
		text := out.String()
		_, tick, _ := strings.Cut(text, "saw one line per write; the last: ")
		tick, _, _ = strings.Cut(tick, "\n")
		_, kept, _ := strings.Cut(text, "\nKept ")
		kept, _, _ = strings.Cut(kept, " — try")
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(kept, "data", "chat.db")+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		var newest string
		err = db.QueryRow(`SELECT c.name || ' ' || m.seq || ' ' || p.name FROM messages m
			JOIN channels c ON c.id = m.channel_id JOIN parties p ON p.id = m.author_id ORDER BY m.id DESC LIMIT 1`).Scan(&newest)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if fields := strings.Fields(tick); len(fields) != 4 || strings.Join(fields[1:], " ") != newest {
			t.Fatalf("run %d: the demo quotes the tick %q; the last write is %q", run, tick, newest)
		}
		os.RemoveAll(kept)
	}
}

func runCmd(args []string, env map[string]string, stdout, stderr *bytes.Buffer) int {
	return run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(""), stdout, stderr)
}
