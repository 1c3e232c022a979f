package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// The edit hook's cost as Claude Code pays it before every Edit, Write,
// MultiEdit or NotebookEdit: a whole process, beside the floor (the hook
// answering --version) and the other hooks' quiet path (a prompt with
// nothing new, no SQLite).
//
//	go test ./tests -run '^$' -bench EditHook -benchtime 200x
//
// "nothing claimed" is timed after a peer's write before each run: the
// edit hook's quiet path does not depend on the database being unchanged,
// as the prompt's does. "claimed elsewhere" has a live path claim on
// another file: the hook reads the claims and lets the edit pass.
func BenchmarkEditHook(b *testing.B) {
	w := newHookBenchWorld(b, 1)
	ctx := context.Background()
	writer, err := store.Open(ctx, w.db)
	if err != nil {
		b.Fatal(err)
	}
	defer writer.Close()
	w.hook(b, "UserPromptSubmit", "warm") // the prompt's record: quiet from now on
	target := filepath.Join(w.dash, "proto", "frame.proto")
	edit := map[string]any{"tool_name": "Edit", "tool_use_id": "toolu_1",
		"tool_input": map[string]any{"file_path": target, "old_string": "A = 1", "new_string": "A = 2"}}
	peerWrites := func(i int) {
		if _, err := writer.Say(ctx, w.gwIdent, store.SayArgs{Text: fmt.Sprintf("news %d", i), Channel: "gw--dash"}); err != nil {
			b.Fatal(err)
		}
	}
	run := func(name string, timed func(i int) (time.Duration, []byte), before func(i int), wantSilent bool) {
		b.Run(name, func(b *testing.B) {
			var lat []time.Duration
			i := 0
			for b.Loop() {
				if before != nil {
					b.StopTimer()
					before(i)
					b.StartTimer()
				}
				d, out := timed(i)
				if wantSilent && len(out) > 0 {
					b.Fatalf("%s: the hook said %s", name, out)
				}
				lat = append(lat, d)
				i++
			}
			reportPercentiles(b, lat)
		})
	}
	run("floor", func(int) (time.Duration, []byte) { return w.hook(b, "SessionStart", "floor", "--version") }, nil, false)
	run("UserPromptSubmit-quiet", func(int) (time.Duration, []byte) { return w.hook(b, "UserPromptSubmit", "warm") }, nil, true)
	run("PreToolUse-nothing-claimed", func(int) (time.Duration, []byte) { return w.editHook(b, edit) }, peerWrites, true)
	if _, err := writer.Claim(ctx, w.gwIdent, store.ClaimArgs{Resource: "path:node-dash/docs/**", Reason: "rewriting the docs",
		TTL: time.Hour, Exclusive: true, MaxLifetime: 8 * time.Hour}); err != nil {
		b.Fatal(err)
	}
	run("PreToolUse-claimed-elsewhere", func(int) (time.Duration, []byte) { return w.editHook(b, edit) }, nil, true)
}

// editHook runs the PreToolUse hook for node-dash's session with the
// tool call in extra, timed as hook times the other events.
func (w *hookBenchWorld) editHook(b *testing.B, extra map[string]any) (time.Duration, []byte) {
	p := hookPayload("edit", "PreToolUse", w.dash)
	for k, v := range extra {
		p[k] = v
	}
	payload, _ := json.Marshal(p)
	dir := b.TempDir()
	in, out := filepath.Join(dir, "payload.json"), filepath.Join(dir, "answer")
	if err := os.WriteFile(in, payload, 0o600); err != nil {
		b.Fatal(err)
	}
	stdin, err := os.Open(in)
	if err != nil {
		b.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer stdout.Close()
	cmd := exec.Command(hookBin, "--event", "PreToolUse")
	cmd.Dir = w.dash
	cmd.Env = append(append([]string{}, w.env...), "CLAUDE_PROJECT_DIR="+w.dash)
	cmd.Stdin, cmd.Stdout = stdin, stdout
	start := time.Now()
	err = cmd.Run()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("hook PreToolUse: %v", err)
	}
	answer, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	return d, answer
}
