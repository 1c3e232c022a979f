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

			waiter := startWaiter(t, w, dash, "s1")
			if end == "release" {
				w.mustCall(gw, "chat_release", map[string]any{"resource": "env:staging"}, nil)
			}
			waiter.mustWakeForStaging(t, end)
		})
	}
}

// A member on another machine, refused a claim through the team hub, is
// woken when the holder releases it.
func TestHubMemberWaitWakesWhenAClaimWaitedForEnds(t *testing.T) {
	skipShort(t)
	ht := newHubTeam(t)
	a := ht.hub("A")
	m, dashDir, _ := ht.connectedDash(a)
	gw := hubMember(t, a.url, ht.issue("gw", "1h", "mesh-gw"), "")
	mustHubCall(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)
	var held, refused claimed
	mustHubCall(t, gw, "chat_claim", map[string]any{"resource": "env:staging", "reason": "deploying"}, &held)
	m.mustCall(dashDir, "chat_claim", map[string]any{"resource": "env:staging"}, &refused)
	if !held.Granted || refused.Granted || refused.HeldBy != "mesh-gw" {
		t.Fatalf("claims: %+v, %+v", held, refused)
	}
	m.event(dashDir, "s1", "Stop") // the channel's making may be news: reported here
	waiter := startWaiter(t, m, dashDir, "s1")
	mustHubCall(t, gw, "chat_release", map[string]any{"resource": "env:staging"}, nil)
	waiter.mustWakeForStaging(t, "release")
}

// waiter is a running `mcpp-chat-hook --event Stop --wait` of a session.
type waiter struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	exited         chan error
}

// startWaiter starts the idle wake of session in dir, as Claude Code runs
// it after a Stop, and waits until it has claimed its place.
func startWaiter(t *testing.T, w *world, dir, session string) *waiter {
	t.Helper()
	wt := &waiter{cmd: exec.Command(hookBin, "--event", "Stop", "--wait", "--timeout", "60"), exited: make(chan error, 1)}
	wt.cmd.Dir = dir
	wt.cmd.Env = append(append([]string{}, w.env...), "CLAUDE_PROJECT_DIR="+dir)
	payload, _ := json.Marshal(hookPayload(session, "Stop", dir, "stop_hook_active", true))
	wt.cmd.Stdin = bytes.NewReader(payload)
	wt.cmd.Stdout, wt.cmd.Stderr = &wt.stdout, &wt.stderr
	if err := wt.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { wt.exited <- wt.cmd.Wait() }()
	waitForClaim(t, w, wt.exited)
	return wt
}

// mustWakeForStaging checks that the waiter woke (exit 2) for the end of
// mesh-gw's claim on env:staging, which node-dash was refused.
func (wt *waiter) mustWakeForStaging(t *testing.T, end string) {
	t.Helper()
	select {
	case err := <-wt.exited:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 {
			t.Fatalf("--wait ended with %v, want exit 2 (a wake); stderr %q", err, wt.stderr.String())
		}
	case <-time.After(45 * time.Second):
		wt.cmd.Process.Kill()
		<-wt.exited
		t.Fatalf("--wait did not wake at the claim's %s; stderr %q", end, wt.stderr.String())
	}
	first, _, _ := strings.Cut(wt.stderr.String(), "\n")
	if want := "mcpp-chat: mesh-gw's claim on env:staging, which node-dash was refused, has ended — node-dash may claim it now"; first != want {
		t.Errorf("the wake's first line is %q, want %q", first, want)
	}
	contains(t, wt.stderr.String(), "mesh-gw's claim on env:staging, which you were refused,", "chat_claim it if you still need it")
}
