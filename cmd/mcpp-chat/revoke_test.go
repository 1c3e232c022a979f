package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A member's watch says, on stderr, that the hub refused its token soon
// after the hub's admin revoked it: the long-poll it holds ends with the
// revoke, not at its end (45 s).
func TestMemberWatchSaysItsTokenWasRevoked(t *testing.T) {
	hubHome := t.TempDir()
	hubEnv := map[string]string{"HOME": hubHome, "MCPP_CHAT_HOME": hubHome, "MCPP_CHAT_STORE": "sqlite:" + filepath.Join(hubHome, "hub.db")}
	url := startHubCLI(t, hubEnv)
	_, out, _ := cli(t, hubEnv, "hub", "token", "issue", "--party", "alpha", "--label", "alpha", "--new-party")
	token := strings.SplitN(out, "\n", 2)[0]

	lap := t.TempDir()
	repo := filepath.Join(lap, "alpha")
	os.MkdirAll(repo, 0o700)
	env := map[string]string{"HOME": lap, "MCPP_CHAT_HOME": filepath.Join(lap, "home"), "MCPP_CHAT_WORKSPACE": repo}
	if code, out, errs := cli(t, env, "connect", url, "--token", token); code != exitOK {
		t.Fatalf("connect: %d %s %s", code, out, errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := &lineSignal{first: make(chan struct{})}
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"watch"}, func(k string) string { return env[k] }, strings.NewReader(""), &syncBuffer{}, errs)
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-errs.first: // it watches
	case <-time.After(time.Minute):
		t.Fatalf("watch said nothing: %s", errs.String())
	}
	if code, out, e := cli(t, hubEnv, "hub", "token", "revoke", "alpha"); code != exitOK {
		t.Fatalf("revoke: %d %s %s", code, out, e)
	}
	revoked := time.Now()
	for !strings.Contains(errs.String(), "refused this machine's token: the token was revoked") {
		if time.Since(revoked) > 20*time.Second {
			t.Fatalf("20 s after the revoke, watch has not said so:\n%s", errs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("watch said so %s after the revoke:\n%s", time.Since(revoked).Round(time.Millisecond), errs.String())
}
