package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

// TestWakeLatency is a benchmark, not a check: with MCPP_CHAT_BENCH=1 it
// measures how long a blocked chat_wait (over MCP stdio, `mcpp-chat serve`)
// takes to answer after a peer's `mcpp-chat call chat_say` process commits.
// Run it with
//
//	MCPP_CHAT_BENCH=1 go test ./tests/ -run TestWakeLatency -count=1 -v
//
// MCPP_CHAT_BENCH_ROUNDS overrides the 20 rounds.
func TestWakeLatency(t *testing.T) {
	if os.Getenv("MCPP_CHAT_BENCH") == "" {
		t.Skip("a benchmark: set MCPP_CHAT_BENCH=1 to run it")
	}
	rounds := 20
	if n, err := strconv.Atoi(os.Getenv("MCPP_CHAT_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	t.Run("tick", func(t *testing.T) { wakeRounds(t, rounds, true, "") })
	t.Run("no tick", func(t *testing.T) { wakeRounds(t, rounds, false, "") })
	t.Run("postgres", func(t *testing.T) { wakeRounds(t, rounds, false, pgtest.URL(t)) })
}

// wakeRounds measures rounds wake-ups; without the tick file the server
// wakes on the -wal alone, and the commit time is not known. With a team
// store (storeURL) the server is woken by the store's notification, and
// the say's own time (its created_at, the call's time) stands for the
// commit's, as the tick line's does.
func wakeRounds(t *testing.T, rounds int, tick bool, storeURL string) {
	var env []string
	var team *sql.DB
	if storeURL != "" {
		env = append(env, "MCPP_CHAT_STORE="+storeURL)
		var err error
		if team, err = sql.Open("pgx", storeURL); err != nil {
			t.Fatal(err)
		}
		defer team.Close()
	}
	if !tick {
		config := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(config, []byte("chat:\n  tick_file: \"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "MCPP_CHAT_CONFIG="+config)
	}
	w, alpha, beta := liveWorld(t, env...)
	w.configure(waitProgressFast)
	progress := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "tests", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- struct{}{}:
			default:
			}
		},
	})
	s := liveConnect(t, w, alpha, client, nil)
	var fromExit, fromCommit []time.Duration
	for i := range rounds + 1 { // round 0 warms up
		toolCall(t, s, "chat_read", nil, nil) // nothing unread: the wait blocks
		// Drop a late progress of the previous round's wait.
		select {
		case <-progress:
		default:
		}
		done := make(chan time.Time, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			params := &mcp.CallToolParams{Name: "chat_wait", Arguments: map[string]any{"seconds": 20}}
			params.SetProgressToken(fmt.Sprint("round-", i))
			res, err := s.CallTool(ctx, params)
			at := time.Now()
			if err != nil || res.IsError || !bytes.Contains([]byte(contentText(res, 1)), []byte(`"arrived":true`)) {
				t.Errorf("round %d: the wait did not see the say: %v %v", i, err, res)
			}
			done <- at
		}()
		select { // its first progress: the wait is under way
		case <-progress:
		case <-time.After(liveGenerous):
			t.Fatalf("round %d: the wait sent no progress", i)
		}
		cmd := exec.Command(chatBin, "call", "chat_say", fmt.Sprintf(`{"text": "round %d"}`, i))
		cmd.Dir, cmd.Env = beta, w.env
		if out, err := cmd.Output(); err != nil {
			t.Fatalf("peer's call: %v %s", err, out)
		}
		exited := time.Now()
		answered := <-done
		if i == 0 {
			continue
		}
		fromExit = append(fromExit, answered.Sub(exited))
		if tick {
			line, err := liveParseTick(liveReadTick(t, w))
			if err != nil {
				t.Fatal(err)
			}
			fromCommit = append(fromCommit, answered.Sub(line.at))
		}
		if team != nil {
			said := dbStrings(t, team, `SELECT created_at FROM messages ORDER BY id DESC LIMIT 1`)
			at, err := time.Parse("2006-01-02T15:04:05.999999-07:00", said[0])
			if err != nil {
				t.Fatal(err)
			}
			fromCommit = append(fromCommit, answered.Sub(at))
		}
	}
	report := func(name string, d []time.Duration) string {
		slices.Sort(d)
		return fmt.Sprintf("%s: p50 %.1f ms, p95 %.1f ms, max %.1f ms (%d rounds)", name,
			liveMs(livePct(d, 50)), liveMs(livePct(d, 95)), liveMs(d[len(d)-1]), len(d))
	}
	t.Log(report("answer after the end of the peer's call process", fromExit))
	if tick || team != nil {
		t.Log(report("answer after the peer's commit (the call's time)", fromCommit))
	}
	if raw, err := json.Marshal(map[string]any{"from_exit_ms": liveMsAll(fromExit), "from_commit_ms": liveMsAll(fromCommit)}); err == nil {
		t.Logf("raw: %s", raw)
	}
}

// pct is the nearest-rank percentile of sorted d.
func livePct(d []time.Duration, p int) time.Duration {
	i := (p*len(d)+99)/100 - 1
	return d[max(0, min(i, len(d)-1))]
}

func liveMs(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func liveMsAll(d []time.Duration) []float64 {
	out := make([]float64, len(d))
	for i, x := range d {
		out[i] = liveMs(x)
	}
	return out
}
