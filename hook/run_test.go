package hook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

func TestReadPayload(t *testing.T) {
	p, err := ReadPayload(strings.NewReader(`{"session_id":"s","cwd":"/x","hook_event_name":"Stop","stop_hook_active":true,"extra":1}`))
	if err != nil || p.SessionID != "s" || p.Cwd != "/x" || p.HookEventName != "Stop" || !p.StopHookActive {
		t.Fatalf("payload = %+v, %v", p, err)
	}
	for _, bad := range []string{"", "   ", "null", "[1]", "not json", `{"session_id":`, `"str"`} {
		if _, err := ReadPayload(strings.NewReader(bad)); err == nil {
			t.Errorf("payload %q accepted", bad)
		}
	}
}

func TestStateDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got := StateDir(env(map[string]string{"XDG_STATE_HOME": "/xdg", "HOME": "/h"})); got != "/xdg/mcpp-chat/hook" {
		t.Errorf("XDG: %s", got)
	}
	if got := StateDir(env(map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/h"})); got != "/h/.local/state/mcpp-chat/hook" {
		t.Errorf("relative XDG must be ignored: %s", got)
	}
	if got := StateDir(env(map[string]string{"HOME": "/h"})); got != "/h/.local/state/mcpp-chat/hook" {
		t.Errorf("HOME: %s", got)
	}
}

func TestStateKeptPerSessionAndParty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	ctx := context.Background()
	save := func(session, ws string, told ...string) {
		if err := UpdateState(ctx, dir, session, ws, func(st *State) { st.Told = told }); err != nil {
			t.Fatal(err)
		}
	}
	load := func(session, ws string) []string {
		var got []string
		UpdateState(ctx, dir, session, ws, func(st *State) { got = st.Told })
		return got
	}
	save("s1", "/a", "m/x/1")
	save("s2", "/a", "m/x/2")
	save("s1", "/b", "m/x/3")
	if got := load("s1", "/a"); !reflect.DeepEqual(got, []string{"m/x/1"}) {
		t.Fatalf("s1 /a = %v", got)
	}
	if got := load("s2", "/a"); !reflect.DeepEqual(got, []string{"m/x/2"}) {
		t.Fatalf("s2 /a = %v", got)
	}
	// A torn file starts afresh instead of failing.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.WriteFile(filepath.Join(dir, e.Name()), []byte(`{"told":["m/x`), 0o600)
	}
	if got := load("s1", "/a"); len(got) != 0 {
		t.Fatalf("torn file = %v", got)
	}
	info, _ := os.Stat(dir)
	if info.Mode().Perm() != 0o700 {
		t.Errorf("state folder mode %v", info.Mode().Perm())
	}
	// No session: nothing is kept.
	save("", "/a", "m/x/9")
	if got := load("", "/a"); len(got) != 0 {
		t.Fatalf("sessionless state kept: %v", got)
	}
}

// Concurrent hooks take turns at the session record: no update is lost.
// In fake time (synctest) the lock's polling and its 200 ms limit follow
// the updates' own pace, not the machine's load.
func TestStateLockSerialisesHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		ctx := context.Background()
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				UpdateState(ctx, dir, "s", "/a", func(st *State) {
					n := len(st.Told)
					time.Sleep(time.Millisecond)
					st.Told = append(st.Told[:n:n], "k")
				})
			}()
		}
		wg.Wait()
		var got int
		UpdateState(ctx, dir, "s", "/a", func(st *State) { got = len(st.Told) })
		if got != 20 {
			t.Fatalf("%d of 20 concurrent updates survived", got)
		}
	})
}

func TestNewerClaimWins(t *testing.T) {
	dir := t.TempDir()
	old := claimWaiter(dir, "s", "/a")
	other := claimWaiter(dir, "s", "/b")
	if old == nil || old.lost() {
		t.Fatal("first claim lost at once")
	}
	newer := claimWaiter(dir, "s", "/a")
	if !old.lost() || newer.lost() || other.lost() {
		t.Fatalf("after a newer claim: old lost %v, newer lost %v, other party lost %v", old.lost(), newer.lost(), other.lost())
	}
	old.release() // must not remove the newer claim
	if _, err := os.Stat(newer.path); err != nil {
		t.Fatal("the old waiter removed the newer claim")
	}
	newer.release()
	if _, err := os.Stat(newer.path); err == nil {
		t.Fatal("claim left behind")
	}
}

// A payload that never arrives (stdin held open) must not hold the
// session: the hook gives up within its deadline and prints nothing.
func TestRunGivesUpSilently(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	var out bytes.Buffer
	start := time.Now()
	code := Run(context.Background(), Options{Event: SessionStart, Deadline: 50 * time.Millisecond, Env: func(string) string { return "" }, Stdin: r, Stdout: &out, Stderr: &out})
	if code != ExitOK || out.Len() != 0 {
		t.Fatalf("code %d, output %q", code, out.String())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

// fixture is a database with mesh-gw and node-dash in gw--dash, and the
// environment a hook in node-dash sees.
type fixture struct {
	db       *store.DB
	gw, dash store.Identity
	env      func(string) string
	stateDir string
	dashRoot string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dashRoot: filepath.Join(dir, "node-dash"), stateDir: filepath.Join(dir, "state")}
	gwRoot := filepath.Join(dir, "mesh-gw")
	for _, r := range []string{f.dashRoot, gwRoot} {
		os.MkdirAll(filepath.Join(r, ".git"), 0o755)
	}
	f.gw = store.Identity{Name: "mesh-gw", Workspace: gwRoot}
	f.dash = store.Identity{Name: "node-dash", Workspace: f.dashRoot}
	dbPath := filepath.Join(dir, "data", "chat.db")
	db, err := store.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.db = db
	ctx := context.Background()
	for _, id := range []store.Identity{f.gw, f.dash} {
		if _, err := db.Register(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ChannelNew(ctx, f.gw, "gw--dash", "", []string{"node-dash"}); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"MCPP_CHAT_DB": dbPath, "MCPP_CHAT_HOME": filepath.Join(dir, "module"),
		"XDG_STATE_HOME": filepath.Join(dir, "state-home"), "HOME": filepath.Join(dir, "home"), "CLAUDE_PROJECT_DIR": f.dashRoot}
	f.env = func(k string) string { return vars[k] }
	f.stateDir = StateDir(f.env)
	return f
}

// waiting is a waiter running in the background.
type waiting struct {
	done   chan int
	stderr *syncBuffer
	looked chan struct{} // a look was taken; dropped when nobody waits for it
}

// waiter starts a waiter of session. It rechecks its claim often, so that a
// newer waiter replaces it without a second's delay.
func (f *fixture) waiter(ctx context.Context, session string, timeout time.Duration) *waiting {
	w := &waiting{done: make(chan int, 1), stderr: &syncBuffer{}, looked: make(chan struct{}, 1)}
	go func() {
		w.done <- Run(ctx, Options{Wait: true, Timeout: timeout, Recheck: 10 * time.Millisecond, Env: f.env,
			Stdin: strings.NewReader(`{"session_id":"` + session + `"}`), Stdout: io.Discard, Stderr: w.stderr,
			looked: func() {
				select {
				case w.looked <- struct{}{}:
				default:
				}
			}})
	}()
	return w
}

// waitLook waits until the waiter has looked at the database without
// waking, and so waits for the next change.
func (w *waiting) waitLook(t *testing.T) {
	t.Helper()
	select {
	case <-w.looked:
	case code := <-w.done:
		t.Fatalf("the waiter ended (exit %d, stderr %q) before anything arrived", code, w.stderr.String())
	case <-time.After(time.Minute):
		t.Fatal("the waiter never looked at the database")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A waiter wakes on a change after its first look, and what it told does
// not wake the session again.
func TestWaitWakesOnAPeersMessageOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w := f.waiter(ctx, "s1", time.Minute)
	w.waitLook(t)
	if _, err := f.db.Ask(ctx, f.gw, store.AskArgs{Title: "Is the enum closed?", Body: "I need FRAME_AUX.", Slug: "chunk-api"}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-w.done:
		if code != ExitWake {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiter did not wake")
	}
	mustContain(t, w.stderr.String(), "A peer is waiting on this session", `[chunk-api] "Is the enum closed?" from mesh-gw — needs your ack`)

	// The same state does not wake the session again: a new waiter looks,
	// keeps waiting, and ends silently when its time is up.
	until, cancel := context.WithCancel(ctx)
	again := f.waiter(until, "s1", time.Minute)
	again.waitLook(t)
	cancel()
	if code := <-again.done; code != ExitOK || again.stderr.String() != "" {
		t.Fatalf("second waiter: exit %d, stderr %q", code, again.stderr.String())
	}
}

func TestNewerWaiterReplacesOlder(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first := f.waiter(ctx, "s1", time.Minute)
	first.waitLook(t)
	second := f.waiter(ctx, "s1", time.Minute)
	second.waitLook(t) // it claimed the session before it looked
	select {
	case code := <-first.done:
		if code != ExitOK {
			t.Fatalf("older waiter exit %d", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the older waiter kept waiting")
	}
	select {
	case code := <-second.done:
		t.Fatalf("newer waiter ended with %d", code)
	default:
	}
	if _, err := f.db.Say(ctx, f.gw, store.SayArgs{Text: "hi", Channel: "gw--dash"}); err != nil {
		t.Fatal(err)
	}
	if code := <-second.done; code != ExitWake {
		t.Fatalf("newer waiter exit %d", code)
	}
}

// run answers one event for node-dash's session and returns the output.
func (f *fixture) run(t *testing.T, event, session string) string {
	t.Helper()
	var out bytes.Buffer
	Run(context.Background(), Options{Event: event, Env: f.env,
		Stdin: strings.NewReader(`{"session_id":"` + session + `"}`), Stdout: &out, Stderr: io.Discard})
	return out.String()
}

// forget erases what the session was told, keeping its quiet marks: a hook
// that read the database now would tell it all again.
func (f *fixture) forget(t *testing.T, session string) {
	t.Helper()
	err := UpdateState(context.Background(), f.stateDir, session, f.dashRoot, func(st *State) { st.Told, st.Blocked = nil, nil })
	if err != nil {
		t.Fatal(err)
	}
}

// letFilesAge waits until the database's fingerprint can be trusted (its
// files' last change is old enough): only then does the hook skip reading
// an unchanged database.
func (f *fixture) letFilesAge(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, ok := store.Fingerprint(f.db.Path()); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the database's fingerprint never became trustworthy")
		}
	}
}

// While nothing is written, a prompt or a Stop that had nothing new to say
// stays silent without reading the database; the first write makes it read
// again.
func TestUnchangedDatabaseIsNotReadAgain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.db.Say(ctx, f.gw, store.SayArgs{Text: "the radio build is green", Channel: "gw--dash"}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, f.run(t, UserPromptSubmit, "s1"), "the radio build is green")
	mustContain(t, f.run(t, Stop, "s1"), "A peer is waiting")
	f.letFilesAge(t)
	if out := f.run(t, UserPromptSubmit, "s1") + f.run(t, Stop, "s1"); out != "" {
		t.Fatalf("unchanged state told again:\n%s", out)
	}

	f.forget(t, "s1")
	if out := f.run(t, UserPromptSubmit, "s1") + f.run(t, Stop, "s1"); out != "" {
		t.Fatalf("the database was read again although nothing was written since:\n%s", out)
	}
	// The same record without its quiet marks: the hook reads and tells.
	err := UpdateState(ctx, f.stateDir, "s1", f.dashRoot, func(st *State) { st.PromptQuiet, st.StopQuiet = "", "" })
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, f.run(t, UserPromptSubmit, "s1"), "the radio build is green")
	mustContain(t, f.run(t, Stop, "s1"), "A peer is waiting")

	f.forget(t, "s1")
	if _, err := f.db.Say(ctx, f.gw, store.SayArgs{Text: "one more thing", Channel: "gw--dash"}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, f.run(t, UserPromptSubmit, "s1"), "one more thing")
	mustContain(t, f.run(t, Stop, "s1"), "one more thing")
	// SessionStart always reads, and makes Stop look again.
	f.forget(t, "s1")
	mustContain(t, f.run(t, SessionStart, "s1"), "one more thing")
	mustContain(t, f.run(t, Stop, "s1"), "A peer is waiting")
}

// Past the deadline Run prints nothing, so the record must not say the
// session was told.
func TestStateNotSavedPastTheDeadline(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if err := UpdateState(ctx, dir, "s1", "/srv/node-dash", func(st *State) { st.Told = []string{"m/a/1"} }); err != nil {
		t.Fatal(err)
	}
	late, cancel := context.WithCancel(ctx)
	cancel()
	err := UpdateState(late, dir, "s1", "/srv/node-dash", func(st *State) { st.Told = append(st.Told, "m/a/2"); st.PromptQuiet = "fp" })
	if err == nil {
		t.Fatal("a record changed past the deadline was saved")
	}
	UpdateState(ctx, dir, "s1", "/srv/node-dash", func(st *State) {
		if len(st.Told) != 1 || st.PromptQuiet != "" {
			t.Fatalf("the record holds %+v, want only what was saved in time", st)
		}
	})
}

// A folder that is no party gets no answer and leaves no session record.
func TestNoPartyLeavesNoRecord(t *testing.T) {
	f := newFixture(t)
	stranger := filepath.Join(t.TempDir(), "stranger")
	os.MkdirAll(filepath.Join(stranger, ".git"), 0o755)
	env := f.env
	f.env = func(k string) string {
		if k == "CLAUDE_PROJECT_DIR" {
			return stranger
		}
		return env(k)
	}
	for _, ev := range []string{SessionStart, UserPromptSubmit, Stop} {
		if out := f.run(t, ev, "s1"); out != "" {
			t.Fatalf("%s in a folder that is no party said:\n%s", ev, out)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(f.stateDir, "session-*")); len(files) != 0 {
		t.Fatalf("a folder that is no party left session records: %v", files)
	}
}

// withEnv makes the hook see extra environment variables.
func (f *fixture) withEnv(vars map[string]string) {
	env := f.env
	f.env = func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return env(k)
	}
}

func TestUnattended(t *testing.T) {
	cases := []struct {
		attended, entrypoint string
		want                 bool
	}{
		{"0", "sdk-cli", true},  // claude -p
		{"0", "cli", true},      // the flag wins over an inherited entry point
		{"1", "sdk-cli", false}, // a terminal session started from a -p run's shell
		{"", "sdk-cli", true},   // a version without the flag
		{"", "sdk-ts", true},
		{"", "cli", false},
		{"", "", false}, // not Claude Code, or too old to tell: wait as before
	}
	for _, c := range cases {
		env := func(k string) string {
			return map[string]string{"CLAUDE_CODE_SESSION_ATTENDED": c.attended, "CLAUDE_CODE_ENTRYPOINT": c.entrypoint}[k]
		}
		if got := unattended(env); got != c.want {
			t.Errorf("attended %q, entrypoint %q: unattended = %v, want %v", c.attended, c.entrypoint, got, c.want)
		}
	}
}

// In a run nobody sits at (claude -p, the Agent SDK) the waiter leaves at
// once and silently: Claude Code waits for its background hooks before such
// a run exits, and there is no idle session to wake.
func TestWaiterDoesNotHoldAnUnattendedRunOpen(t *testing.T) {
	for _, vars := range []map[string]string{
		{"CLAUDE_CODE_SESSION_ATTENDED": "0", "CLAUDE_CODE_ENTRYPOINT": "sdk-cli"},
		{"CLAUDE_CODE_ENTRYPOINT": "sdk-cli"},
	} {
		f := newFixture(t)
		f.withEnv(vars)
		w := f.waiter(context.Background(), "s1", time.Minute)
		select {
		case code := <-w.done:
			if code != ExitOK || w.stderr.String() != "" {
				t.Fatalf("%v: exit %d, stderr %q; want a silent exit 0", vars, code, w.stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: the waiter held an unattended run open", vars)
		}
		if claims, _ := filepath.Glob(filepath.Join(f.stateDir, "wait-*")); len(claims) != 0 {
			t.Fatalf("%v: the waiter left a claim: %v", vars, claims)
		}
	}
}

// A wake tells the model what waits; Claude Code then runs
// UserPromptSubmit for the wake notice, which must not repeat it.
func TestWakeIsNotRepeatedByTheNextPrompt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w := f.waiter(ctx, "s1", time.Minute)
	w.waitLook(t)
	if _, err := f.db.Ask(ctx, f.gw, store.AskArgs{Title: "Is the enum closed?", Body: "I need FRAME_AUX.", Slug: "chunk-api"}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-w.done:
		if code != ExitWake {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiter did not wake")
	}
	mustContain(t, w.stderr.String(), "I need FRAME_AUX.")
	if out := f.run(t, UserPromptSubmit, "s1"); out != "" {
		t.Fatalf("the prompt after the wake repeated it:\n%s", out)
	}
	// What arrives later is news, and only it.
	if _, err := f.db.Say(ctx, f.gw, store.SayArgs{Text: "and one more thing", Channel: "gw--dash"}); err != nil {
		t.Fatal(err)
	}
	out := f.run(t, UserPromptSubmit, "s1")
	mustContain(t, out, "and one more thing")
	if strings.Contains(out, "FRAME_AUX") {
		t.Fatalf("the woken-for ask was told again:\n%s", out)
	}
}

// A Stop block's reason reaches the model too: the next prompt does not
// repeat it.
func TestStopBlockIsNotRepeatedByTheNextPrompt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.db.Say(ctx, f.gw, store.SayArgs{Text: "the radio build is green", Channel: "gw--dash"}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, f.run(t, Stop, "s1"), "the radio build is green")
	if out := f.run(t, UserPromptSubmit, "s1"); out != "" {
		t.Fatalf("the prompt after the Stop block repeated it:\n%s", out)
	}
}

// A Stop that runs because an earlier Stop block kept the turn going
// (stop_hook_active) never blocks again: that would loop forever.
func TestStopHookActiveNeverBlocks(t *testing.T) {
	f := newFixture(t)
	if _, err := f.db.Say(context.Background(), f.gw, store.SayArgs{Text: "the radio build is green", Channel: "gw--dash"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Run(context.Background(), Options{Event: Stop, Env: f.env,
		Stdin: strings.NewReader(`{"session_id":"s1","stop_hook_active":true}`), Stdout: &out, Stderr: io.Discard})
	if out.Len() != 0 {
		t.Fatalf("a Stop with stop_hook_active blocked:\n%s", out.String())
	}
	mustContain(t, f.run(t, Stop, "s1"), "A peer is waiting")
}

// That a peer has not read the party's own message yet is no news: the
// prompt after the session posted stays silent. That the peer read it is
// news, told once, at the next prompt; the one after is silent again.
func TestSenderIsToldOnceThatAPeerReadItsMessage(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if out := f.run(t, SessionStart, "s1"); out != "" {
		t.Fatalf("nothing waits, yet SessionStart said:\n%s", out)
	}
	said, err := f.db.Say(ctx, f.dash, store.SayArgs{Text: "the dashboard shows uptime now", Channel: "gw--dash"})
	if err != nil {
		t.Fatal(err)
	}
	if out := f.run(t, UserPromptSubmit, "s1"); out != "" {
		t.Fatalf("the prompt after the party's own say, with nothing new, said:\n%s", out)
	}
	if _, err := f.db.Read(ctx, f.gw, store.ReadArgs{Channel: "gw--dash", Limit: 50}); err != nil {
		t.Fatal(err)
	}
	out := f.run(t, UserPromptSubmit, "s1")
	mustContain(t, out, fmt.Sprintf(`#gw--dash #%d — seen by mesh-gw`, said.Seq))
	if strings.Contains(out, "not yet read") {
		t.Errorf("once read, still told unread:\n%s", out)
	}
	if out := f.run(t, UserPromptSubmit, "s1"); out != "" {
		t.Errorf("told again:\n%s", out)
	}
}

// Claude Code runs UserPromptSubmit for a wake before it sends the model
// anything. When the wake told everything, that run stays silent without
// reading the database, for as long as no commit follows: the session's
// record keeps the commit mark the wake read at.
func TestWakeLeavesItsPromptQuiet(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.letFilesAge(t) // a commit mark needs a database file older than a clock tick
	w := f.waiter(ctx, "s1", time.Minute)
	w.waitLook(t)
	if _, err := f.db.Ask(ctx, f.gw, store.AskArgs{Title: "Is the enum closed?", Body: "I need FRAME_AUX.", Slug: "chunk-api"}); err != nil {
		t.Fatal(err)
	}
	if code := <-w.done; code != ExitWake {
		t.Fatalf("exit %d", code)
	}
	st, _ := PeekState(f.stateDir, "s1", f.dashRoot)
	if mark, _ := store.CommitMark(f.db.Path()); st.WakeQuiet == "" || st.WakeQuiet != mark {
		t.Fatalf("the record's wake mark is %q, want the database's %q", st.WakeQuiet, mark)
	}
	// Were the database read, the forgotten record would tell it all.
	f.forget(t, "s1")
	if out := f.run(t, UserPromptSubmit, "s1"); out != "" {
		t.Fatalf("the prompt after the wake read the database:\n%s", out)
	}
	if _, err := f.db.Say(ctx, f.gw, store.SayArgs{Text: "and one more thing", Channel: "gw--dash"}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, f.run(t, UserPromptSubmit, "s1"), "and one more thing", "FRAME_AUX")
	if st, _ := PeekState(f.stateDir, "s1", f.dashRoot); st.WakeQuiet != "" {
		t.Errorf("a prompt that read kept the wake's mark %q", st.WakeQuiet)
	}
}

// A commit appends its frames to the -wal, each a notification, before
// it becomes visible: while the commit mark stays where the last read
// saw it, moments ago, a waiter's look does not open the database.
func TestWaiterLookSparesReadsWhileNoCommitIsVisible(t *testing.T) {
	ctx := context.Background()
	reads, mark := 0, "m1"
	l := watcherLook{deadline: time.Second, mark: func() string { return mark },
		pending: func(context.Context) (store.Pending, error) { reads++; return store.Pending{}, nil }}
	look := func(want int) {
		t.Helper()
		l.check(ctx)
		if reads != want {
			t.Fatalf("mark %q: %d reads, want %d", mark, reads, want)
		}
	}
	look(1)
	look(1) // the same mark, moments later
	mark = "m2"
	look(2)
	l.lastRead = time.Now().Add(-markTrust) // the same mark, but long enough ago
	look(3)
	// A -wal written moments ago: a commit on its way, however long ago
	// the last read was.
	wrote := time.Now()
	l.written = func() time.Time { return wrote }
	l.lastRead = time.Now().Add(-time.Hour)
	look(3)
	wrote = time.Now().Add(-markTrust)
	look(4)
	mark = "" // cannot tell: read
	look(5)
	look(6)
	l.mark = nil // a store without a mark
	look(7)
}
