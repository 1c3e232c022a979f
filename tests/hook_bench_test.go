package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"
	"github.com/mcpp/mcpp-chat/tests/sandbox"
)

// The hook's costs as Claude Code pays them: a whole process per event.
//
//	go test ./tests -run '^$' -bench Hook -benchtime 100x
//
// Each size reports the mean (ns/op) and p50/p95 in milliseconds.

// hookBenchWorld is an isolated install with mesh-gw and node-dash in
// gw--dash, and unread messages from mesh-gw seeded for node-dash.
type hookBenchWorld struct {
	env       []string
	db        string
	gw, dash  string
	tick      string
	dashIdent store.Identity
	gwIdent   store.Identity
}

func newHookBenchWorld(b *testing.B, unread int) *hookBenchWorld {
	b.Helper()
	if hookBin == "" {
		b.Skip("no cmd/mcpp-chat-hook in this checkout")
	}
	dir := b.TempDir()
	home := filepath.Join(dir, "home")
	w := &hookBenchWorld{db: filepath.Join(dir, "data", "chat.db"), gw: filepath.Join(dir, "repos", "mesh-gw"), dash: filepath.Join(dir, "repos", "node-dash")}
	w.tick = filepath.Join(dir, "data", ".tick")
	for _, d := range []string{home, filepath.Join(w.gw, ".git"), filepath.Join(w.dash, ".git")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	w.env = sandbox.Env("MCPP_CHAT_DB="+w.db, "MCPP_CHAT_HOME="+filepath.Join(dir, "module"), "HOME="+home,
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"))
	w.chat(b, w.dash, "chat_whoami", `{}`)
	w.chat(b, w.gw, "chat_channel_new", `{"name": "gw--dash", "parties": ["node-dash"]}`)
	w.chat(b, w.gw, "chat_ask", `{"title": "Is the enum closed?", "body": "I need FRAME_AUX.", "slug": "chunk-api"}`)
	w.seed(b, unread-1)
	w.dashIdent = store.Identity{Name: "node-dash", Workspace: w.dash}
	w.gwIdent = store.Identity{Name: "mesh-gw", Workspace: w.gw}
	return w
}

func (w *hookBenchWorld) chat(b *testing.B, dir, tool, args string) {
	b.Helper()
	cmd := exec.Command(chatBin, "call", tool, args)
	cmd.Dir, cmd.Env = dir, w.env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", tool, err, out)
	}
}

// seed appends n says from mesh-gw in one statement: node-dash's cursor
// stays put, so they are all unread for it.
func (w *hookBenchWorld) seed(b *testing.B, n int) {
	b.Helper()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: w.db}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1),
		c AS (SELECT id FROM channels WHERE name = 'gw--dash'),
		a AS (SELECT id FROM parties WHERE name = 'mesh-gw'),
		s AS (SELECT max(seq) AS top FROM messages WHERE channel_id = (SELECT id FROM c))
		INSERT INTO messages (channel_id, seq, kind, body, author_id, status, created_at, updated_at)
		SELECT (SELECT id FROM c), (SELECT top FROM s) + i, 'say',
		       'status line ' || i || ': the radio build is green and the gateway forwards frames', (SELECT id FROM a), 'none', ?2, ?2 FROM k`,
		n, store.Now())
	if err != nil {
		b.Fatal(err)
	}
}

// hook runs the hook binary once and times the process from start to exit.
// The payload comes from a file and the answer goes to one, so the timing
// holds no pipe-copying goroutines of this (large, busy) test process.
func (w *hookBenchWorld) hook(b *testing.B, event, session string, args ...string) (time.Duration, []byte) {
	payload, _ := json.Marshal(hookPayload(session, event, w.dash))
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
	cmd := exec.Command(hookBin, append([]string{"--event", event}, args...)...)
	cmd.Dir = w.dash
	cmd.Env = append(append([]string{}, w.env...), "CLAUDE_PROJECT_DIR="+w.dash)
	cmd.Stdin, cmd.Stdout = stdin, stdout
	start := time.Now()
	err = cmd.Run()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("hook %s: %v", event, err)
	}
	answer, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	return d, answer
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p int) float64 { return float64(lat[(len(lat)-1)*p/100]) / float64(time.Millisecond) }
	b.ReportMetric(pct(50), "p50-ms")
	b.ReportMetric(pct(95), "p95-ms")
}

// BenchmarkHookProcess: the hook's whole-process time with 10,000 and
// with 100,000 unread messages. SessionStart prints the full picture;
// UserPromptSubmit in a session already told, with nothing written since,
// is the every-prompt case (silent, without opening SQLite); "after a
// write" is a prompt after a peer's message, which the hook must read and
// tell; Stop blocks (a fresh session each time).
func BenchmarkHookProcess(b *testing.B) {
	for _, unread := range []int{10_000, 100_000} {
		w := newHookBenchWorld(b, unread)
		_, out := w.hook(b, "SessionStart", "warm")
		if !bytes.Contains(out, []byte(fmt.Sprintf("over %d unread", store.UnreadCountCap))) || !bytes.Contains(out, []byte("needs your ack")) {
			b.Fatalf("unexpected answer with %d unread: %s", unread, out)
		}
		b.Run(fmt.Sprintf("floor/unread=%d", unread), func(b *testing.B) {
			// The process alone: start, flags, exit (no database), through
			// the same pipes as the events below.
			var lat []time.Duration
			for b.Loop() {
				d, _ := w.hook(b, "SessionStart", "floor", "--version")
				lat = append(lat, d)
			}
			reportPercentiles(b, lat)
		})
		writer, err := store.Open(context.Background(), w.db)
		if err != nil {
			b.Fatal(err)
		}
		defer writer.Close()
		peerWrites := func(i int) {
			if _, err := writer.Say(context.Background(), w.gwIdent, store.SayArgs{Text: fmt.Sprintf("news %d", i), Channel: "gw--dash"}); err != nil {
				b.Fatal(err)
			}
		}
		cases := []struct {
			name, event string
			session     func(i int) string
			before      func(i int) // untimed
			mustSay     bool
		}{
			{"SessionStart", "SessionStart", func(int) string { return "start" }, nil, true},
			{"UserPromptSubmit", "UserPromptSubmit", func(int) string { return "warm" }, nil, false},
			{"UserPromptSubmit-after-a-write", "UserPromptSubmit", func(int) string { return "warm" }, peerWrites, true},
			{"Stop", "Stop", func(i int) string { return fmt.Sprintf("stop-%d", i) }, nil, true},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s/unread=%d", c.name, unread), func(b *testing.B) {
				var lat []time.Duration
				i, silent := 0, 0
				for b.Loop() {
					if c.before != nil {
						b.StopTimer()
						c.before(i)
						b.StartTimer()
					}
					d, out := w.hook(b, c.event, c.session(i))
					if c.mustSay && len(out) == 0 {
						silent++ // gave up at its deadline: the machine is overloaded
					}
					lat = append(lat, d)
					i++
				}
				reportPercentiles(b, lat)
				b.ReportMetric(float64(silent), "gave-up")
			})
		}
	}
}

// BenchmarkHookWaitWake: from the start of a peer's write (a say committed
// by the store, then the tick the server writes after each commit) to the
// --wait process having exited 2.
func BenchmarkHookWaitWake(b *testing.B) {
	w := newHookBenchWorld(b, 1)
	ctx := context.Background()
	db, err := store.Open(ctx, w.db)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	stateDir := ""
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "XDG_STATE_HOME="); ok {
			stateDir = filepath.Join(v, "mcpp-chat", "hook")
		}
	}
	// The Stop hook tells the session what already waits.
	w.hook(b, "Stop", "wake")
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		payload, _ := json.Marshal(hookPayload("wake", "Stop", w.dash))
		cmd := exec.Command(hookBin, "--event", "Stop", "--wait", "--timeout", "60")
		cmd.Dir = w.dash
		cmd.Env = append(append([]string{}, w.env...), "CLAUDE_PROJECT_DIR="+w.dash)
		cmd.Stdin = bytes.NewReader(payload)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		waitPid(b, stateDir, cmd.Process.Pid)
		waitUntilWatching(b, cmd.Process.Pid)
		b.StartTimer()
		start := time.Now()
		res, err := db.Say(ctx, w.gwIdent, store.SayArgs{Text: "ping", Channel: "gw--dash"})
		if err != nil {
			b.Fatal(err)
		}
		wake.WriteTick(w.tick, store.Change{Channel: res.Channel, Seq: res.Seq, Author: "mesh-gw"})
		err = cmd.Wait()
		lat = append(lat, time.Since(start))
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			b.Fatalf("--wait ended with %v, want exit 2", err)
		}
	}
	reportPercentiles(b, lat)
}

// waitPid waits until the waiter with pid has claimed its place.
func waitPid(b *testing.B, dir string, pid int) {
	b.Helper()
	want := []byte(fmt.Sprintf("%d ", pid))
	for i := 0; i < 1000; i++ {
		files, _ := filepath.Glob(filepath.Join(dir, "wait-*.pid"))
		for _, f := range files {
			if data, _ := os.ReadFile(f); bytes.HasPrefix(data, want) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatal("the waiter never claimed its place")
}
