package hook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// On a member machine the hook answers from the cache a running serve
// keeps, in the hook binary itself, and tells a thing once; a stale cache
// with no hub to ask is silence.
func TestMemberHookAnswersFromTheCache(t *testing.T) {
	home := t.TempDir()
	repo := filepath.Join(home, "node-dash")
	os.MkdirAll(repo, 0o700)
	env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": filepath.Join(home, "module"),
		"MCPP_CHAT_STORE": "http://127.0.0.1:1", "MCPP_CHAT_TOKEN": "mcc_x_y", "XDG_STATE_HOME": filepath.Join(home, "state")}
	paths, _, err := config.Resolve(func(k string) string { return env[k] }, "")
	if err != nil {
		t.Fatal(err)
	}
	pending := store.Pending{Party: "node-dash", Channels: []store.ChannelPending{{Channel: "gw--dash", Parties: []string{"mesh-gw", "node-dash"}, Unread: 1, NewestTalk: 3,
		Newest: []store.Message{{Channel: "gw--dash", Seq: 3, Kind: "ask", From: "mesh-gw", Slug: "chunk-api", Title: "Chunk size?", Body: "Which chunk size?"}}}},
		WaitingOnMe: []store.WaitingOnMe{}, WaitingOnPeer: []store.WaitingOnPeer{}}
	cache := HubCachePath(paths, "node-dash")
	write := func(at time.Time) {
		// This test's process stands for the serve that keeps the cache.
		if err := WriteHubCache(cache, HubCache{Party: "node-dash", ETag: `"e1-node-dash"`, Pending: pending, CheckedAt: at, ServePID: os.Getpid()}); err != nil {
			t.Fatal(err)
		}
	}
	// The hook binary's options: no way to ask the hub, and no
	// mcpp-chat beside it to hand the event to.
	prompt := func() string {
		var out bytes.Buffer
		payload := fmt.Sprintf(`{"session_id":"s1","hook_event_name":"UserPromptSubmit","cwd":%q,"prompt":"go on"}`, repo)
		Command(context.Background(), []string{"--event", "UserPromptSubmit"}, "test", Options{
			Env: func(k string) string { return env[k] }, Exe: filepath.Join(home, "bin", "mcpp-chat-hook"),
			Stdin: strings.NewReader(payload), Stdout: &out, Stderr: &out})
		return out.String()
	}
	write(time.Now())
	if got := prompt(); !strings.Contains(got, "chunk-api") || !strings.Contains(got, "mesh-gw") || !strings.Contains(got, repo) {
		t.Fatalf("from a fresh cache the hook said %q", got)
	}
	if got := prompt(); got != "" {
		t.Fatalf("the same state told twice: %q", got)
	}
	write(time.Now().Add(-2 * HubCacheFresh))
	os.RemoveAll(env["XDG_STATE_HOME"])
	if got := prompt(); got != "" {
		t.Fatalf("a stale cache and no hub: %q", got)
	}
}

// A cache is fresh only while the serve that keeps it runs: one whose
// serve has ended answers nothing, however recently it heard the hub, and
// a serve takes away only the cache it keeps.
func TestHubCacheIsFreshOnlyWhileItsServeRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub-cache", "node-dash.json")
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Skipf("no process to outlive: %v", err)
	}
	now := time.Now()
	for _, c := range []struct {
		pid   int
		fresh bool
	}{{os.Getpid(), true}, {ended.Process.Pid, false}, {0, false}} {
		if err := WriteHubCache(path, HubCache{Party: "node-dash", ETag: `"e1"`, CheckedAt: now, ServePID: c.pid}); err != nil {
			t.Fatal(err)
		}
		if _, fresh := ReadHubCache(path, now.Add(time.Second)); fresh != c.fresh {
			t.Errorf("a cache kept by pid %d, checked a second ago: fresh %v, want %v", c.pid, fresh, c.fresh)
		}
	}

	WriteHubCache(path, HubCache{Party: "node-dash", ETag: `"e1"`, CheckedAt: now, ServePID: os.Getpid()})
	if err := DropHubCache(path, ended.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, fresh := ReadHubCache(path, now); !fresh {
		t.Fatal("another serve took away the cache this one keeps")
	}
	if err := DropHubCache(path, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the serve that keeps the cache dropped it, yet it is there: %v", err)
	}
	if err := DropHubCache(path, os.Getpid()); err != nil {
		t.Fatalf("dropping a cache that is gone: %v", err)
	}
}
