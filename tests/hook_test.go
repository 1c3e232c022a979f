package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	_ "github.com/ncruces/go-sqlite3/driver"
)

// The hook binary as Claude Code runs it: a process in the session's
// folder, the payload on stdin, CLAUDE_PROJECT_DIR in its environment.

type hookResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// hookPayload is what Claude Code writes on the hook's stdin.
func hookPayload(session, event, cwd string, extra ...any) map[string]any {
	p := map[string]any{"session_id": session, "transcript_path": "/dev/null", "cwd": cwd,
		"hook_event_name": event, "permission_mode": "default"}
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i].(string)] = extra[i+1]
	}
	return p
}

// runHook runs the hook in dir with stdin (a payload map, or raw bytes).
func (w *world) runHook(dir string, stdin any, extraEnv []string, args ...string) hookResult {
	w.t.Helper()
	if hookBin == "" {
		w.t.Skip("no cmd/mcpp-chat-hook in this checkout")
	}
	var in []byte
	switch v := stdin.(type) {
	case []byte:
		in = v
	default:
		var err error
		if in, err = json.Marshal(v); err != nil {
			w.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hookBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, w.env...), extraEnv...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := hookResult{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("run hook: %v", err)
	}
	return r
}

// event runs the hook for event in repo's session as Claude Code would.
func (w *world) event(repo, session, event string, extra ...any) hookResult {
	w.t.Helper()
	return w.runHook(repo, hookPayload(session, event, repo, extra...), []string{"CLAUDE_PROJECT_DIR=" + repo}, "--event", event)
}

// mustSilent asserts exit 0 and no output at all.
func mustSilent(t *testing.T, what string, r hookResult) {
	t.Helper()
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("%s: want silence and exit 0, got exit %d stdout %q stderr %q", what, r.code, r.stdout, r.stderr)
	}
}

// contextOf decodes a SessionStart/UserPromptSubmit answer.
func contextOf(t *testing.T, r hookResult, event string) string {
	t.Helper()
	var out struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil {
		t.Fatalf("%s: want the context JSON and exit 0, got exit %d %q (stderr %q)", event, r.code, r.stdout, r.stderr)
	}
	if out.HookSpecificOutput.HookEventName != event {
		t.Fatalf("hookEventName %q, want %q", out.HookSpecificOutput.HookEventName, event)
	}
	return out.HookSpecificOutput.AdditionalContext
}

// reasonOf decodes a Stop block.
func reasonOf(t *testing.T, r hookResult) string {
	t.Helper()
	var out struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || out.Decision != "block" {
		t.Fatalf("Stop: want a block and exit 0, got exit %d %q (stderr %q)", r.code, r.stdout, r.stderr)
	}
	return out.Reason
}

// systemMessageOf decodes the one line a Stop block shows the person at
// the terminal.
func systemMessageOf(t *testing.T, r hookResult) string {
	t.Helper()
	var out struct {
		SystemMessage string `json:"systemMessage"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("Stop: %v in %q", err, r.stdout)
	}
	return out.SystemMessage
}

func contains(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
}

// hookPair is mesh-gw and node-dash seated in gw--dash, with mesh-gw's
// question to node-dash.
func hookPair(t *testing.T) (w *world, gw, dash string) {
	w = newWorld(t)
	gw, dash = w.seatedPair()
	w.mustCall(gw, "chat_say", map[string]any{"text": "the radio build is green"}, nil)
	w.mustCall(gw, "chat_ask", map[string]any{"title": "Is the chunk header enum closed?", "body": "I need FRAME_AUX.", "slug": "chunk-api"}, nil)
	return w, gw, dash
}

func unreadTotal(w *world, dir string) int {
	var in struct {
		UnreadTotal int `json:"unread_total"`
	}
	w.mustCall(dir, "chat_inbox", map[string]any{}, &in)
	return in.UnreadTotal
}

func TestHookSessionStartReportsItemAndWords(t *testing.T) {
	w, _, dash := hookPair(t)
	text := contextOf(t, w.event(dash, "s1", "SessionStart", "source", "startup"), "SessionStart")
	contains(t, text, "you are node-dash",
		"#gw--dash with mesh-gw: 2 unread",
		`mesh-gw #1 said: "the radio build is green"`,
		`mesh-gw #2 asked [chunk-api] "Is the chunk header enum closed?": "I need FRAME_AUX."`,
		`[chunk-api] "Is the chunk header enum closed?" from mesh-gw — needs your ack`,
		"chat_inbox", "chat_read", "Answer only for your own repository")
}

func TestHookUserPromptSubmitDoesNotRepeat(t *testing.T) {
	w, gw, dash := hookPair(t)
	text := contextOf(t, w.event(dash, "s1", "UserPromptSubmit", "prompt", "go on"), "UserPromptSubmit")
	contains(t, text, "you are node-dash", "needs your ack", "the radio build is green")
	mustSilent(t, "the same state on the next prompt", w.event(dash, "s1", "UserPromptSubmit", "prompt", "and on"))
	// Another session of the same repo has not been told yet.
	contains(t, contextOf(t, w.event(dash, "s2", "UserPromptSubmit"), "UserPromptSubmit"), "needs your ack")
	// News is injected, and only the news.
	w.mustCall(gw, "chat_say", map[string]any{"text": "also: TLS next week"}, nil)
	text = contextOf(t, w.event(dash, "s1", "UserPromptSubmit"), "UserPromptSubmit")
	contains(t, text, "also: TLS next week")
	if strings.Contains(text, "radio build") || strings.Contains(text, "needs your ack") {
		t.Fatalf("old lines repeated:\n%s", text)
	}
	// SessionStart always gives the full picture again.
	contains(t, contextOf(t, w.event(dash, "s1", "SessionStart", "source", "resume"), "SessionStart"), "radio build", "needs your ack")
	// Without a session id every prompt gets the full picture.
	for i := 0; i < 2; i++ {
		contains(t, contextOf(t, w.event(dash, "", "UserPromptSubmit"), "UserPromptSubmit"), "needs your ack")
	}
}

func TestHookStopBlocksOnce(t *testing.T) {
	w, gw, dash := hookPair(t)
	r := w.event(dash, "s1", "Stop", "stop_hook_active", false)
	reason := reasonOf(t, r)
	want := `mcpp-chat: mesh-gw is waiting on node-dash: [chunk-api] "Is the chunk header enum closed?" needs your ack; 2 unread messages in #gw--dash`
	if got := systemMessageOf(t, r); got != want {
		t.Errorf("systemMessage = %q, want %q", got, want)
	}
	contains(t, reason, "A peer is waiting on this session", "you are node-dash",
		`[chunk-api] "Is the chunk header enum closed?" from mesh-gw — needs your ack`, "I need FRAME_AUX.",
		"call chat_inbox, then chat_read", "answer from your own repository", "chat_ack an item that needs no answer")
	mustSilent(t, "Stop with stop_hook_active", w.event(dash, "s1", "Stop", "stop_hook_active", true))
	mustSilent(t, "a second Stop for the same state", w.event(dash, "s1", "Stop", "stop_hook_active", false))
	// A real message still blocks.
	w.mustCall(gw, "chat_say", map[string]any{"text": "ping?"}, nil)
	contains(t, reasonOf(t, w.event(dash, "s1", "Stop")), "ping?")
}

func TestHookAuthorIsNotAskedToAckItsOwnItem(t *testing.T) {
	w, gw, _ := hookPair(t)
	r := w.event(gw, "g1", "SessionStart")
	if strings.Contains(r.stdout, "needs your ack") {
		t.Fatalf("the author is told to ack its own item:\n%s", r.stdout)
	}
	mustSilent(t, "the author's Stop", w.event(gw, "g1", "Stop"))
}

// Unread events, your own answered item and a pending prune-ok are shown
// but never keep a session from stopping; a real message does.
func TestHookNonBlockingRows(t *testing.T) {
	w := newWorld(t)
	gw, dash := w.seatedPair()
	w.mustCall(gw, "chat_ask", map[string]any{"title": "Frame format frozen", "body": "v3 is final.", "slug": "frozen", "announce": true}, nil)
	w.mustCall(dash, "chat_read", map[string]any{}, nil)
	w.mustCall(dash, "chat_ask", map[string]any{"title": "TLS upgrade", "body": "Can you take TLS 1.3?", "slug": "tls"}, nil)
	w.mustCall(gw, "chat_ack", map[string]any{"item": "tls"}, nil)

	mustSilent(t, "Stop with only non-blocking rows", w.event(dash, "s1", "Stop"))
	text := contextOf(t, w.event(dash, "s1", "SessionStart"), "SessionStart")
	contains(t, text, `event: "[tls] acked by mesh-gw"`,
		`[tls] "TLS upgrade" from node-dash — answered; resolve when you are satisfied (no rush)`,
		`[frozen] "Frame format frozen" from mesh-gw — resolved; needs your prune-ok when you have consumed it`)
	w.mustCall(gw, "chat_say", map[string]any{"text": "TLS 1.3 works here"}, nil)
	contains(t, reasonOf(t, w.event(dash, "s1", "Stop")), "TLS 1.3 works here")
}

func TestHookSilentForStrangersAndBrokenInput(t *testing.T) {
	w, gw, _ := hookPair(t)
	stranger := w.repo("stranger")
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "Stop", "Notification"} {
		mustSilent(t, "stranger repo "+ev, w.event(stranger, "x", ev))
	}
	var who struct {
		KnownParties []struct {
			Name string `json:"name"`
		} `json:"known_parties"`
	}
	w.mustCall(gw, "chat_whoami", map[string]any{}, &who)
	if len(who.KnownParties) != 2 {
		t.Fatalf("the hook created a party: %+v", who.KnownParties)
	}
	dash := filepath.Join(filepath.Dir(gw), "node-dash")
	for _, bad := range [][]byte{nil, []byte("not json"), []byte(`["SessionStart"]`), []byte(`{"session_id": `)} {
		mustSilent(t, fmt.Sprintf("stdin %q", bad), w.runHook(dash, bad, []string{"CLAUDE_PROJECT_DIR=" + dash}, "--event", "SessionStart"))
	}
	mustSilent(t, "an unknown flag", w.runHook(dash, hookPayload("s", "SessionStart", dash), nil, "--bogus"))
	// An unreadable config.yaml is an error too: silent.
	cfg := filepath.Join(w.dir, "module", "config.yaml")
	os.MkdirAll(filepath.Dir(cfg), 0o700)
	os.WriteFile(cfg, []byte("chat: {nonsense_key: 1}\n"), 0o600)
	mustSilent(t, "a broken config", w.event(dash, "s", "SessionStart"))
}

func TestHookSilentOnMissingAndCorruptDatabase(t *testing.T) {
	w := newWorld(t)
	dash := w.repo("node-dash")
	mustSilent(t, "no database", w.event(dash, "s", "SessionStart"))
	if _, err := os.Stat(w.db); err == nil {
		t.Fatal("the hook created the database")
	}
	os.MkdirAll(filepath.Dir(w.db), 0o700)
	os.WriteFile(w.db, bytes.Repeat([]byte("garbage "), 1000), 0o600)
	mustSilent(t, "a file that is no database", w.event(dash, "s", "SessionStart"))

	// A real database with its pages overwritten past the header.
	w2, _, dash2 := hookPair(t)
	data, err := os.ReadFile(w2.db)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < len(data); i++ {
		data[i] ^= 0x5a
	}
	os.WriteFile(w2.db, data, 0o600)
	for _, ev := range []string{"SessionStart", "Stop", "Notification"} {
		mustSilent(t, "a corrupt database "+ev, w2.event(dash2, "s", ev))
	}
}

func hookOpenDB(t *testing.T, path string, pragmas ...string) *sql.DB {
	t.Helper()
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// Another process holding the write lock: a WAL reader does not wait for
// it, so the hook answers at once. A connection holding the whole file
// (exclusive locking mode) stops readers: the hook gives up quickly and
// prints nothing.
func TestHookUnderLocks(t *testing.T) {
	w, _, dash := hookPair(t)
	holder := hookOpenDB(t, w.db, "busy_timeout(5000)")
	tx, err := holder.Begin() // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE parties SET about = 'holding the lock' WHERE name = 'mesh-gw'`); err != nil {
		t.Fatal(err)
	}
	r := w.event(dash, "s1", "SessionStart")
	contains(t, contextOf(t, r, "SessionStart"), "needs your ack")
	if r.took > 2*time.Second {
		t.Fatalf("took %v under a held write lock", r.took)
	}
	tx.Rollback()
	holder.Close()

	excl := hookOpenDB(t, w.db, "locking_mode(exclusive)", "busy_timeout(5000)")
	if _, err := excl.Exec(`UPDATE parties SET about = 'exclusive' WHERE name = 'mesh-gw'`); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"SessionStart", "Stop"} {
		r := w.event(dash, "s2", ev)
		mustSilent(t, "an exclusively locked database "+ev, r)
		if r.took > 2*time.Second {
			t.Fatalf("%s took %v on a locked database; it must give up within a second", ev, r.took)
		}
	}
}

func hookDigest(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return "absent"
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// runAllEvents runs every kind of hook run in dir, both sessions.
func runAllEvents(w *world, dir string) {
	for _, s := range []string{"s1", ""} {
		for _, ev := range []string{"SessionStart", "UserPromptSubmit", "Stop", "Notification"} {
			w.event(dir, s, ev)
		}
	}
	w.runHook(dir, hookPayload("s1", "Stop", dir), []string{"CLAUDE_PROJECT_DIR=" + dir}, "--event", "Stop", "--wait", "--timeout", "1")
}

// Displaying a message does not consume it, and the hook changes no byte
// of chat.db or its -wal, whether a server keeps the -wal open or every
// connection closed (no -wal, no -shm: the hook must create neither).
func TestHookNeverConsumesNorWrites(t *testing.T) {
	w, gw, dash := hookPair(t)
	before := unreadTotal(w, dash)

	// Every connection closed: no -wal, no -shm.
	for _, f := range []string{w.db + "-wal", w.db + "-shm"} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("%s exists after every call ended", f)
		}
	}
	sum := hookDigest(t, w.db)
	runAllEvents(w, dash)
	if hookDigest(t, w.db) != sum {
		t.Fatal("the hook changed chat.db")
	}
	for _, f := range []string{w.db + "-wal", w.db + "-shm", w.db + "-journal"} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("the hook created %s", f)
		}
	}

	// A server keeps the database open: the -wal exists. It is another
	// party's: node-dash's own serve records what node-dash's hook told
	// it (tests/told_test.go), which is the serve's write, not the hook's.
	s := w.serve(gw)
	toolCall(t, s, "chat_whoami", map[string]any{"about": "gateway"}, nil)
	if _, err := os.Stat(w.db + "-wal"); err != nil {
		t.Fatalf("expected a -wal while a server runs: %v", err)
	}
	dbSum, walSum := hookDigest(t, w.db), hookDigest(t, w.db+"-wal")
	runAllEvents(w, dash)
	if hookDigest(t, w.db) != dbSum || hookDigest(t, w.db+"-wal") != walSum {
		t.Fatal("the hook changed chat.db or its -wal")
	}
	s.Close()

	if after := unreadTotal(w, dash); after != before || before != 2 {
		t.Fatalf("unread %d before the hook, %d after: the hook consumed", before, after)
	}
}

// Claude Code started in a subfolder passes that folder as
// CLAUDE_PROJECT_DIR (and cwd); the session is still its repository.
func TestHookSubfolderIsItsRepo(t *testing.T) {
	w, _, dash := hookPair(t)
	sub := filepath.Join(dash, "web", "src")
	os.MkdirAll(sub, 0o755)
	r := w.runHook(sub, hookPayload("s1", "SessionStart", sub), []string{"CLAUDE_PROJECT_DIR=" + sub}, "--event", "SessionStart")
	contains(t, contextOf(t, r, "SessionStart"), "you are node-dash", "needs your ack")
	// No CLAUDE_PROJECT_DIR: the payload's cwd decides, and the event name
	// comes from the payload.
	r = w.runHook(w.dir, hookPayload("s2", "SessionStart", sub), nil)
	contains(t, contextOf(t, r, "SessionStart"), "you are node-dash")
	// Neither: the process's folder.
	r = w.runHook(sub, hookPayload("s3", "SessionStart", ""), nil, "--event", "SessionStart")
	contains(t, contextOf(t, r, "SessionStart"), "you are node-dash")
}

func TestHookOtherEventsArePlainText(t *testing.T) {
	w, _, dash := hookPair(t)
	r := w.event(dash, "s1", "Notification")
	if r.code != 0 || strings.HasPrefix(strings.TrimSpace(r.stdout), "{") {
		t.Fatalf("want plain text, got exit %d %q", r.code, r.stdout)
	}
	contains(t, r.stdout, "you are node-dash", "needs your ack")
}

// 40 long items and messages unread: the output stays under Claude Code's
// 10,000 characters and says how much more there is.
func TestHookOutputCapped(t *testing.T) {
	w, gw, dash := hookPair(t)
	long := strings.Repeat("a long and winding explanation of the frame layout ✓ ", 60)
	for i := 0; i < 40; i++ {
		w.mustCall(gw, "chat_ask", map[string]any{"title": fmt.Sprintf("Question %d: %s", i, long[:300]), "body": long}, nil)
	}
	for _, ev := range []string{"SessionStart", "Stop", "Notification"} {
		r := w.event(dash, "cap-"+ev, ev)
		if n := len(utf16.Encode([]rune(r.stdout))); n >= 10000 || n < 2000 {
			t.Fatalf("%s printed %d characters; want under 10,000", ev, n)
		}
		contains(t, r.stdout, "42 unread", "newest 3", "more (chat_inbox lists them, a page at a time")
	}
}

func TestHookStripsEscapes(t *testing.T) {
	w, gw, dash := hookPair(t)
	w.mustCall(gw, "chat_say", map[string]any{"text": "look \x1b[31mRED\x1b[0m \x1b]0;pwned\x07here\x07 \x1b[2J done"}, nil)
	for _, ev := range []string{"SessionStart", "Notification"} {
		r := w.event(dash, "esc", ev)
		text := r.stdout
		if ev == "SessionStart" {
			text = contextOf(t, r, ev)
		}
		if strings.ContainsAny(text, "\x1b\x07\x00\r") || strings.Contains(r.stdout, `\u001b`) {
			t.Fatalf("%s: escape or control characters reached the output: %q", ev, r.stdout)
		}
		contains(t, text, `"look RED here done"`)
	}
}

// --wait blocks until a peer waits on the session, then exits 2 with the
// Stop reason on stderr; without news it exits 0 silently at its timeout.
func TestHookWaitWakesAndTimesOut(t *testing.T) {
	w, gw, dash := hookPair(t)
	// What already waits was reported by the Stop hook: the waiter must
	// not wake for it again.
	reasonOf(t, w.event(dash, "s1", "Stop"))
	r := w.runHook(dash, hookPayload("s1", "Stop", dash), []string{"CLAUDE_PROJECT_DIR=" + dash}, "--event", "Stop", "--wait", "--timeout", "1")
	mustSilent(t, "--wait with nothing new", r)
	if r.took < 900*time.Millisecond || r.took > 10*time.Second {
		t.Fatalf("--timeout 1 returned after %v", r.took)
	}

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

	w.mustCall(gw, "chat_ask", map[string]any{"title": "Can you rebuild the dashboard?", "body": "New frame ids.", "slug": "rebuild"}, nil)
	asked := time.Now()
	select {
	case err := <-exited:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 {
			t.Fatalf("--wait ended with %v, want exit 2; stderr %q", err, stderr.String())
		}
		if d := time.Since(asked); d > 2*time.Second {
			t.Fatalf("--wait exited %v after the ask returned", d)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("--wait did not wake on the peer's ask")
	}
	if stdout.Len() != 0 {
		t.Fatalf("--wait printed on stdout: %q", stdout.String())
	}
	contains(t, stderr.String(), "A peer is waiting on this session", `[rebuild] "Can you rebuild the dashboard?" from mesh-gw — needs your ack`)
	// Claude Code shows the person a wake as "Stop hook feedback" and this
	// report when expanded: its first line says who waits and for what.
	first, _, _ := strings.Cut(stderr.String(), "\n")
	if want := `mcpp-chat: mesh-gw is waiting on node-dash: [rebuild] "Can you rebuild the dashboard?" needs your ack`; !strings.HasPrefix(first, want) {
		t.Errorf("the wake's first line is %q, want it to start %q", first, want)
	}
}

// waitForClaim waits until a --wait process has claimed its place in the
// state folder and started watching the database, and returns its pid (the
// first word of its claim).
func waitForClaim(t *testing.T, w *world, exited chan error) int {
	t.Helper()
	dir := filepath.Join(w.home, ".local", "state", "mcpp-chat", "hook")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("--wait ended before anything arrived: %v", err)
		default:
		}
		if claims, _ := filepath.Glob(filepath.Join(dir, "wait-*.pid")); len(claims) > 0 {
			if len(claims) != 1 {
				t.Fatalf("claims: %v", claims)
			}
			data, err := os.ReadFile(claims[0])
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.Fields(string(data))[0])
			if err != nil {
				t.Fatalf("claim %q: %v", data, err)
			}
			waitUntilWatching(t, pid)
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatal("--wait never claimed its place")
		}
	}
}

// A newer waiter of the same session makes the older one exit 0.
func TestHookNewerWaiterReplacesOlder(t *testing.T) {
	w, _, dash := hookPair(t)
	reasonOf(t, w.event(dash, "s1", "Stop"))
	start := func() (*exec.Cmd, chan error) {
		cmd := exec.Command(hookBin, "--event", "Stop", "--wait", "--timeout", "60")
		cmd.Dir = dash
		cmd.Env = append(append([]string{}, w.env...), "CLAUDE_PROJECT_DIR="+dash)
		payload, _ := json.Marshal(hookPayload("s1", "Stop", dash))
		cmd.Stdin = bytes.NewReader(payload)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, done
	}
	_, older := start()
	waitForClaim(t, w, older)
	newer, newerDone := start()
	defer newer.Process.Kill()
	select {
	case err := <-older:
		if err != nil {
			t.Fatalf("the older waiter ended with %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the older waiter kept waiting after a newer one started")
	}
	select {
	case err := <-newerDone:
		t.Fatalf("the newer waiter ended too: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
}

// In `claude -p` Claude Code waits for background hooks before it exits:
// the waiter must not hold such a run open, not even for a moment's look.
func TestHookWaitLeavesUnattendedRunsAtOnce(t *testing.T) {
	w, _, dash := hookPair(t)
	env := []string{"CLAUDE_PROJECT_DIR=" + dash, "CLAUDE_CODE_SESSION_ATTENDED=0", "CLAUDE_CODE_ENTRYPOINT=sdk-cli"}
	r := w.runHook(dash, hookPayload("p1", "Stop", dash), env, "--event", "Stop", "--wait", "--timeout", "120")
	mustSilent(t, "--wait in a claude -p run", r)
}
