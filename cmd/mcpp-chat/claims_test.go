package main

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/wake"

	"errors"

	"fmt"

	"net/http"

	"github.com/mcpp/mcpp-chat/hub"
)

// The person lists every claim and frees one whoever holds it, which
// takes --force; the holder hears of it.
func TestClaimsListAndForceRelease(t *testing.T) {
	env := isolatedEnv(t)
	peer := maps.Clone(env)
	peer["MCPP_CHAT_WORKSPACE"] = filepath.Join(filepath.Dir(env["MCPP_CHAT_WORKSPACE"]), "peer")
	if err := os.Mkdir(peer["MCPP_CHAT_WORKSPACE"], 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  map[string]string
		args []string
	}{
		{peer, []string{"call", "chat_whoami"}},
		{env, []string{"call", "chat_channel_new", `{"name": "ops", "parties": ["peer"]}`}},
		{env, []string{"call", "chat_claim", `{"resource": "env:staging", "reason": "migrating the schema"}`}},
		{peer, []string{"call", "chat_claim", `{"resource": "env:staging"}`}},
	} {
		if code, out, errs := cli(t, c.env, c.args...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", c.args, code, out, errs)
		}
	}
	code, out, errs := cli(t, env, "claims")
	if code != exitOK || !strings.HasPrefix(out, "env:staging  repo until ") || !strings.HasSuffix(out, ": migrating the schema\n") {
		t.Fatalf("claims: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ := cli(t, env, "log", "--color", "never"); !strings.Contains(out, "\n   claimed: env:staging by repo until ") || !strings.Contains(out, " — migrating the schema\n") {
		t.Errorf("log does not show the claim:\n%s", out)
	}
	if _, out, _ := cli(t, env, "doctor"); !strings.Contains(out, "claims:      env:staging until ") {
		t.Errorf("doctor does not list the party's claim:\n%s", out)
	}
	if _, out, _ := cli(t, peer, "doctor"); !strings.Contains(out, "claims:      none held; 1 claim of its peers' seen") {
		t.Errorf("doctor for the peer:\n%s", out)
	}
	if code, out, errs := cli(t, env, "claims", "release", "env:staging"); code != exitUsage || !strings.Contains(errs, "--force") {
		t.Errorf("release without --force: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli(t, env, "claims", "release", "--force", "env:staging")
	if code != exitOK || !strings.Contains(out, "freed env:staging, held by repo") || !strings.Contains(out, "peer, which waited for it, will be told it is free") {
		t.Fatalf("release --force: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := cli(t, env, "claims", "release", "--force", "env:staging"); code != exitError || !strings.Contains(errs, "no live claim on env:staging") {
		t.Errorf("a second release: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := cli(t, env, "claims", "list"); code != exitOK || out != "Nothing is claimed.\n" {
		t.Errorf("after the release: %q", out)
	}
	code, out, errs = cli(t, env, "call", "--display", "chat_claims")
	if code != exitOK || !strings.Contains(out, "your claim on env:staging freed by the person who runs the chat") {
		t.Errorf("the holder's chat_claims: exit %d\n%s%s", code, out, errs)
	}
}

// serve renews at once, then again a second after a change of the chat
// though the store said a minute (a claim may have come that lives only
// seconds), and never once stop has returned.
func TestKeepClaimsRenewsAfterAChange(t *testing.T) {
	var calls atomic.Int64
	renewed := make(chan struct{}, 10)
	renew := func(ctx context.Context) (time.Duration, error) {
		calls.Add(1)
		renewed <- struct{}{}
		return time.Minute, ctx.Err()
	}
	changes := &wake.Broadcast{}
	stop := keepClaims(context.Background(), renew, changes, slog.New(slog.NewTextHandler(io.Discard, nil)))
	next := func(what string) {
		t.Helper()
		select {
		case <-renewed:
		case <-time.After(30 * time.Second):
			t.Fatalf("no renewal %s", what)
		}
	}
	next("at the start")
	changes.Notify()
	next("after the change")
	stop() // returns once the goroutine has ended: no renewal after it
	if n := calls.Load(); n != 2 {
		t.Errorf("%d renewals, want 2", n)
	}
}

// A member's serve says once that the hub is out of reach or refuses its
// token (followHub); the claims' renewal, failing for the same reason,
// adds no line of its own. Any other failure is its own to tell.
func TestClaimRenewalLeavesTheHubsTroubleToFollowHub(t *testing.T) {
	for _, c := range []struct {
		err   error
		quiet bool
	}{
		{&hub.RefusedError{Status: http.StatusUnauthorized, Msg: "the token was revoked"}, true},
		{&hub.RefusedError{Status: http.StatusForbidden, Msg: "not bound to the party"}, true},
		{fmt.Errorf("dial: %w", hub.ErrUnreachable), true},
		{&hub.RefusedError{Status: http.StatusServiceUnavailable, Msg: "the hub could not read its store"}, false},
		{errors.New("something else"), false},
	} {
		if got := errors.Is(hubTrouble(c.err), errHubToldElsewhere); got != c.quiet {
			t.Errorf("%v: left to followHub = %v, want %v", c.err, got, c.quiet)
		}
	}
}
