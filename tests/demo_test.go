package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `mcpp-chat demo` is the README's "see it work": it must finish, show the
// item archived, and leave the caller's database alone.
func TestDemoShowsTheItemArchived(t *testing.T) {
	w := newWorld(t)
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The demo runs from a bin/ beside the hook binary, as after make build.
	cmd := exec.CommandContext(ctx, chatBin, "demo")
	cmd.Dir = w.repo("bystander")
	cmd.Env = append(w.env, "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"mesh-gw ▸ chat_ask", "node-dash ▸ chat_reply", "(auto-acked)",
		"mesh-gw ▸ chat_resolve", "node-dash ▸ chat_prune_ok",
		"Archived now: done and every consumer gave prune-ok",
		"[chunk-api] is archived",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	if hookBin != "" {
		if strings.Contains(text, "(skipped:") || !strings.Contains(text, "you are node-dash") {
			t.Errorf("the hook's view is missing although %s exists", hookBin)
		}
	}
	if _, err := os.Stat(w.db); err == nil {
		t.Errorf("demo touched the caller's database %s", w.db)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("demo left %v behind", left)
	}
	if t.Failed() {
		t.Logf("transcript:\n%s", text)
	}
}
