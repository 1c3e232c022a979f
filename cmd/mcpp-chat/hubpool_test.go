package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

// A hub on PostgreSQL opens at most storage.max_connections connections
// to the store, and one more that listens for changes: its calls, its
// reads (summaries, waits, arrivals) and its token checks share one
// pool. Under calls, searches, hook summaries and arrivals pages of two
// members at once, the store never sees more of the hub's connections
// (counted in pg_stat_activity by the hub's application_name). The
// hub's reads had a pool of their own: 8 + 8 + 1 = 17 where the docs said 8.
func TestTeamHubKeepsToItsConnectionBound(t *testing.T) {
	const maxConns = 3
	base := pgtest.URL(t)
	home := t.TempDir()
	cfg := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "storage:\n  max_connections: %d\n", maxConns), 0o600); err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": home, "MCPP_CHAT_CONFIG": cfg,
		"MCPP_CHAT_STORE": base + sep + "application_name=hubpool"}
	url := startHubCLI(t, env)
	member := func(party string) *hub.Client {
		t.Helper()
		code, out, errs := cli(t, env, "hub", "token", "issue", "--party", party, "--label", party, "--new-party")
		if code != exitOK {
			t.Fatalf("issue: %s%s", out, errs)
		}
		c, err := hub.NewClient(url, strings.SplitN(out, "\n", 2)[0], party)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	call := func(c *hub.Client, tool, args string) error {
		_, err := c.Call(ctx, tool, json.RawMessage(args), nil)
		return err
	}
	alpha, beta := member("alpha"), member("beta")
	if err := call(beta, "chat_whoami", `{}`); err != nil {
		t.Fatal(err)
	}
	if err := call(alpha, "chat_channel_new", `{"name":"alpha--beta","parties":["beta"]}`); err != nil {
		t.Fatal(err)
	}

	watch, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Close() })
	var peak atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var n int64
			if err := watch.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hubpool'`).Scan(&n); err == nil && n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	var wg sync.WaitGroup
	var failed atomic.Value
	for i := range 8 {
		load := []func() error{
			func() error {
				return call(alpha, "chat_say", fmt.Sprintf(`{"channel":"alpha--beta","text":"the wire format, part %d"}`, i))
			},
			func() error { return call(beta, "chat_search", `{"query":"wire"}`) },
			func() error { _, _, err := beta.Pending(ctx, "", 3); return err },
			func() error { _, err := beta.Arrivals(ctx, 0, true); return err },
		}
		for _, do := range load {
			wg.Go(func() {
				for range 15 {
					if err := do(); err != nil {
						failed.Store(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(stop)
	<-sampled
	if err, ok := failed.Load().(error); ok {
		t.Fatalf("a member's request: %v", err)
	}
	switch n := peak.Load(); {
	case n == 0:
		t.Fatal("no connection of the hub's was seen: the count does not find them")
	case n > maxConns+1:
		t.Fatalf("the hub held %d connections to the store at once, over storage.max_connections %d and its listener's one", n, maxConns)
	default:
		t.Logf("the hub held at most %d connections (storage.max_connections %d, and the listener)", n, maxConns)
	}
}
