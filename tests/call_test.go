package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/store"
)

func run(t *testing.T, w *world, dir string, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(chatBin, args...)
	cmd.Dir = dir
	cmd.Env = w.env
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

func TestCallExitCodesAndContract(t *testing.T) {
	w := newWorld(t)
	gw := w.repo("mesh-gw")
	out, code := run(t, w, gw, "", "call", "chat_whoami")
	var ok struct {
		Success bool           `json:"success"`
		Result  map[string]any `json:"result"`
		Display string         `json:"display"`
	}
	if err := json.Unmarshal([]byte(out), &ok); err != nil || code != 0 || !ok.Success || ok.Result["me"] != "mesh-gw" || ok.Display == "" {
		t.Fatalf("success: code %d %q", code, out)
	}
	out, code = run(t, w, gw, `{"limit": 501}`, "call", "chat_read", "-")
	var fail struct {
		Success *bool  `json:"success"`
		Error   string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &fail); err != nil || code != 1 || *fail.Success || !strings.Contains(fail.Error, "limit") {
		t.Fatalf("tool error: code %d %q", code, out)
	}
	if _, code = run(t, w, gw, "", "call", "chat_nope"); code != 2 {
		t.Fatalf("unknown tool exit %d, want 2", code)
	}
	if _, code = run(t, w, gw, "", "call"); code != 2 {
		t.Fatalf("missing tool exit %d, want 2", code)
	}
	if _, code = run(t, w, gw, "", "frobnicate"); code != 2 {
		t.Fatalf("unknown command exit %d, want 2", code)
	}
	for _, args := range [][]string{{"--help"}, {"call", "--help"}, {"serve", "--help"}, {"doctor", "--help"}, {"version"}} {
		out, code := run(t, w, gw, "", args...)
		if code != 0 || out == "" {
			t.Errorf("%v: exit %d %q", args, code, out)
		}
	}
	out, code = run(t, w, gw, "", "doctor")
	for _, want := range []string{"database:    " + w.db, "party:       mesh-gw", fmt.Sprintf("schema:      version %d", store.SchemaVersion()), "tick file:"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Fatalf("doctor exit %d", code)
	}
}

// Identity over the real binary: --workspace, CLAUDE_PROJECT_DIR, markers
// and a second root with the same basename.
func TestIdentityAcrossProcesses(t *testing.T) {
	w := newWorld(t)
	gw := w.repo("mesh-gw")
	other := filepath.Join(w.dir, "elsewhere", "mesh-gw")
	os.MkdirAll(other, 0o755)
	me := func(dir string, env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(chatBin, append([]string{"call"}, append(args, "chat_whoami")...)...)
		cmd.Dir = dir
		cmd.Env = append(append([]string{}, w.env...), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var r struct {
			Result struct {
				Me        string `json:"me"`
				Workspace string `json:"workspace"`
			} `json:"result"`
		}
		json.Unmarshal(out, &r)
		return r.Result.Me + " " + r.Result.Workspace
	}
	if got := me(filepath.Join(gw), nil); got != "mesh-gw "+gw {
		t.Fatalf("repo: %s", got)
	}
	if got := me(w.dir, nil, "--workspace", other); got != "mesh-gw~2 "+other {
		t.Fatalf("same basename elsewhere: %s", got)
	}
	if got := me(w.dir, []string{"CLAUDE_PROJECT_DIR=" + gw}); got != "mesh-gw "+gw {
		t.Fatalf("CLAUDE_PROJECT_DIR: %s", got)
	}
	svc := filepath.Join(gw, "services", "billing")
	os.MkdirAll(svc, 0o755)
	os.WriteFile(filepath.Join(svc, ".mcpp-chat.yaml"), []byte("name: billing\n"), 0o644)
	if got := me(filepath.Join(svc), nil); got != "billing "+svc {
		t.Fatalf("marker: %s", got)
	}
}

// Two processes posting at once never share a seq and never see a busy error.
func TestTwoProcessesPostingAtOnce(t *testing.T) {
	w := newWorld(t)
	gw, dash := w.seatedPair()
	const each = 15
	seqs := make(chan int64, 2*each)
	var wg sync.WaitGroup
	for _, dir := range []string{gw, dash} {
		wg.Add(1)
		go func(dir string) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				var r struct {
					Seq int64 `json:"seq"`
				}
				res := w.call(dir, "chat_say", map[string]any{"text": "hello"})
				if !res.Success {
					t.Errorf("say from %s failed: %s", dir, res.Error)
					continue
				}
				json.Unmarshal(res.Result, &r)
				seqs <- r.Seq
			}
		}(dir)
	}
	wg.Wait()
	close(seqs)
	seen := map[int64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Fatalf("seq %d given twice", s)
		}
		seen[s] = true
	}
	for s := int64(1); s <= 2*each; s++ {
		if !seen[s] {
			t.Fatalf("seq %d missing: %v", s, seen)
		}
	}
}
