package tests

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// An idle Claude Code session that was refused a claim is woken when the
// claim ends: at the holder's release, a commit, and at its expiry, which
// commits nothing (the waiter keeps a timer for it). The wake's first
// line says the party may claim the thing now.
func TestHookWaitWakesWhenAClaimWaitedForEnds(t *testing.T) {
	for _, end := range []string{"release", "expiry"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			gw, dash := w.seatedPair()
			ttl := "30m"
			if end == "expiry" {
				ttl = "10s" // the shortest
			}
			var held, refused claimed
			w.mustCall(gw, "chat_claim", map[string]any{"resource": "env:staging", "ttl": ttl, "reason": "deploying"}, &held)
			w.mustCall(dash, "chat_claim", map[string]any{"resource": "env:staging"}, &refused)
			if !held.Granted || refused.Granted {
				t.Fatalf("claims: %+v, %+v", held, refused)
			}
			// The session's Stop hook ran with nothing waiting on it.
			mustSilent(t, "node-dash's Stop", w.event(dash, "s1", "Stop"))

			cmd := exec.Command(hookBin, "--event", "Stop", "--wait", "--timeout", "60")
			cmd.Dir = dash
			cmd.Env = append(append([]string{}, w.env...), "CLAUDE_PROJECT_DIR="+dash)
			payload, _ := json.Marshal(hookPayload("s1", "Stop", dash, "stop_hook_active", true))
			cmd.Stdin = bytes.NewReader(payload)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			waitForClaim(t, w, exited)

			if end == "release" {
				w.mustCall(gw, "chat_release", map[string]any{"resource": "env:staging"}, nil)
			}
			select {
			case err := <-exited:
				ee, ok := err.(*exec.ExitError)
				if !ok || ee.ExitCode() != 2 {
					t.Fatalf("--wait ended with %v, want exit 2 (a wake); stderr %q", err, stderr.String())
				}
			case <-time.After(45 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("--wait did not wake at the claim's %s; stderr %q", end, stderr.String())
			}
			first, _, _ := strings.Cut(stderr.String(), "\n")
			if want := "mcpp-chat: mesh-gw's claim on env:staging, which node-dash was refused, has ended — node-dash may claim it now"; first != want {
				t.Errorf("the wake's first line is %q, want %q", first, want)
			}
			contains(t, stderr.String(), "mesh-gw's claim on env:staging, which you were refused,", "chat_claim it if you still need it")
		})
	}
}
