package tests

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// teamWorld is an install whose store is a fresh PostgreSQL database
// (MCPP_CHAT_STORE), with a connection beside it to look inside.
func teamWorld(t *testing.T) (*world, *sql.DB, string) {
	t.Helper()
	u := pgtest.URL(t)
	w := newWorld(t)
	w.env = append(w.env, "MCPP_CHAT_STORE="+u)
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return w, db, u
}

// Two repositories converse through a team store, each call its own
// process, as on one host; doctor sees the store without writing to it.
func TestTeamStoreAcrossProcesses(t *testing.T) {
	w, db, _ := teamWorld(t)
	gw, dash := w.seatedPair()
	w.mustCall(gw, "chat_ask", map[string]any{"title": "Chunk API", "body": "Which chunk size?", "slug": "chunk-api"}, nil)
	var read struct {
		Messages []struct {
			From string `json:"from"`
			Slug string `json:"slug"`
		} `json:"messages"`
	}
	w.mustCall(dash, "chat_read", map[string]any{"channel": "gw--dash"}, &read)
	if len(read.Messages) != 1 || read.Messages[0].From != "mesh-gw" || read.Messages[0].Slug != "chunk-api" {
		t.Fatalf("node-dash read %+v, want mesh-gw's item", read.Messages)
	}
	w.mustCall(dash, "chat_reply", map[string]any{"item": "chunk-api", "text": "64 KiB"}, nil)
	var inbox struct {
		WaitingOnPeers []struct{ Slug string } `json:"waiting_on_peers"`
	}
	w.mustCall(dash, "chat_inbox", nil, &inbox)
	if got := dbStrings(t, db, `SELECT status FROM messages WHERE slug = 'chunk-api'`); len(got) != 1 || got[0] != "ack" {
		t.Errorf("the reply did not ack the item in the store: status %v", got)
	}
	checkInvariants(t, db)

	before := dbStrings(t, db, `SELECT count(*) FROM messages`)
	out, err := w.command(gw, "doctor")
	if err != nil || !strings.Contains(out, "reachable:   yes") || !strings.Contains(out, fmt.Sprintf("schema:      version %d", store.SchemaVersion())) || !strings.Contains(out, "a team store on PostgreSQL") {
		t.Errorf("doctor on a team store (%v):\n%s", err, out)
	}
	if strings.Contains(out, "@") && strings.Contains(out, "password") {
		t.Errorf("doctor shows a password:\n%s", out)
	}
	if after := dbStrings(t, db, `SELECT count(*) FROM messages`); after[0] != before[0] {
		t.Errorf("doctor wrote: %v messages before, %v after", before, after)
	}
	if !strings.Contains(out, "party:       mesh-gw") || !strings.Contains(out, "party root:") {
		t.Errorf("doctor on a team store names no party:\n%s", out)
	}
	gone := *w
	gone.env = append(append([]string{}, w.env...), "MCPP_CHAT_STORE=postgres:///chat?host="+filepath.Join(w.dir, "no-server")+"&connect_timeout=2")
	out, err = gone.command(gw, "doctor")
	if err == nil || !strings.Contains(out, "reachable:   no — no PostgreSQL server answers at postgres://") {
		t.Errorf("doctor on a store whose server is not there (%v):\n%s", err, out)
	}
}

// A database of one host, copied into a team store by `mcpp-chat
// migrate`, answers there as it did; a second copy into the now
// non-empty store is refused and writes nothing.
func TestTeamStoreMigrate(t *testing.T) {
	w := newWorld(t)
	gw, dash := w.seatedPair()
	for i := range 30 {
		w.mustCall(gw, "chat_say", map[string]any{"text": fmt.Sprintf("message %d", i)}, nil)
	}
	w.mustCall(gw, "chat_ask", map[string]any{"title": "Chunk API", "body": "Which size?", "slug": "chunk-api"}, nil)
	before := w.call(dash, "chat_inbox", nil)

	u := pgtest.URL(t)
	out, err := w.command(gw, "migrate", "--to", u)
	if err != nil || !strings.Contains(out, "copied 2 parties, 1 channel, 2 seats in channels, 31 messages") {
		t.Fatalf("migrate (%v):\n%s", err, out)
	}
	team := *w
	team.env = append(append([]string{}, w.env...), "MCPP_CHAT_STORE="+u)
	after := team.call(dash, "chat_inbox", nil)
	if string(after.Result) != string(before.Result) {
		t.Errorf("the inbox differs after the migration:\nbefore %s\nafter  %s", before.Result, after.Result)
	}
	var read struct {
		Messages []json.RawMessage `json:"messages"`
	}
	team.mustCall(dash, "chat_read", map[string]any{"channel": "gw--dash", "limit": 100}, &read)
	if len(read.Messages) != 31 {
		t.Errorf("node-dash reads %d messages in the team store, want 31", len(read.Messages))
	}
	team.mustCall(gw, "chat_say", map[string]any{"text": "written in the team store"}, nil)

	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := dbStrings(t, db, `SELECT count(*) FROM messages`)
	out, err = w.command(gw, "migrate", "--to", u)
	if err == nil || !strings.Contains(out, "only into an empty store") {
		t.Errorf("a second migrate: %v\n%s", err, out)
	}
	if again := dbStrings(t, db, `SELECT count(*) FROM messages`); again[0] != count[0] {
		t.Errorf("the refused migrate wrote: %v messages, then %v", count, again)
	}
	checkInvariants(t, db)
}

// Eight processes write into one channel at once: every call succeeds,
// every message is stored once, and the channel's seqs are 1..800 with no
// gap — a cursor can never skip a row committed later with a smaller seq.
func TestTeamStoreEightWriters(t *testing.T) {
	w, db, _ := teamWorld(t)
	const writers, each = 8, 100
	repos := make([]string, writers)
	for i := range repos {
		repos[i] = w.repo(fmt.Sprintf("repo-%d", i))
		w.mustCall(repos[i], "chat_whoami", nil, nil)
	}
	var names []string
	for i := 1; i < writers; i++ {
		names = append(names, fmt.Sprintf("repo-%d", i))
	}
	w.mustCall(repos[0], "chat_channel_new", map[string]any{"name": "busy", "parties": names}, nil)
	var wg sync.WaitGroup
	failures := make(chan string, writers*each)
	for i, repo := range repos {
		s := startStream(t, w, repo)
		if r := s.next(); r.Ready == nil || !*r.Ready {
			t.Fatalf("worker in %s not ready: %s", repo, r.Error)
		}
		wg.Go(func() {
			for j := range each {
				s.send(fmt.Sprintf(`{"id": %d, "tool": "chat_say", "arguments": {"channel": "busy", "text": "writer %d message %d"}}`, j, i, j))
			}
			for range each {
				if r := s.next(); !r.Success {
					failures <- r.Error
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Errorf("a write failed: %s", f)
	}
	seqs := dbStrings(t, db, `SELECT seq FROM messages m JOIN channels c ON c.id = m.channel_id WHERE c.name = 'busy' ORDER BY seq`)
	if len(seqs) != writers*each {
		t.Fatalf("%d rows in the channel, want %d", len(seqs), writers*each)
	}
	for i, s := range seqs {
		if s != fmt.Sprint(i+1) {
			t.Fatalf("seq #%d is %s: not 1..%d without a gap", i+1, s, writers*each)
		}
	}
	if n := dbStrings(t, db, `SELECT count(DISTINCT body) FROM messages WHERE body LIKE 'writer %'`); n[0] != fmt.Sprint(writers*each) {
		t.Errorf("%s distinct messages, want %d", n[0], writers*each)
	}
	checkInvariants(t, db)
}

// A serve process raising items and one answering them are SIGKILLed at
// random moments: on PostgreSQL as on SQLite, a call is one transaction,
// so no item is left without its consumers, no reply without its auto-ack,
// and every call answered as stored is stored.
func TestTeamStoreKillDuringAsks(t *testing.T) {
	w, db, _ := teamWorld(t)
	f := &faultWorld{world: w, asker: w.repo("asker"), answerer: w.repo("answerer"), third: w.repo("third")}
	w.mustCall(f.answerer, "chat_whoami", nil, nil)
	w.mustCall(f.third, "chat_whoami", nil, nil)
	w.mustCall(f.asker, "chat_channel_new", map[string]any{"name": "faults", "parties": []string{"answerer", "third"}}, nil)
	for round := range 5 {
		checkKillRound(t, db, round, killRound(f, round))
		if t.Failed() {
			t.FailNow()
		}
	}
	w.mustCall(f.answerer, "chat_say", map[string]any{"channel": "faults", "text": "still here"}, nil)
}

// command runs `mcpp-chat ARGS…` in dir and returns its output, stdout and
// stderr together.
func (w *world) command(dir string, args ...string) (string, error) {
	cmd := exec.Command(chatBin, args...)
	cmd.Dir = dir
	cmd.Env = w.env
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(callTimeout):
			cmd.Process.Kill()
		}
	}()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A chat_wait is waiting in a server process when PostgreSQL restarts
// (every connection cut): the wait goes on, and the next write still
// wakes it.
func TestTeamStoreWaitRecoversFromARestart(t *testing.T) {
	srv := pgtest.Own(t) // its own server: restarting the shared one would cut the other tests'
	w := newWorld(t)
	w.env = append(w.env, "MCPP_CHAT_STORE="+srv.URL("postgres"))
	gw, dash := w.seatedPair()
	w.mustCall(dash, "chat_read", map[string]any{"channel": "gw--dash"}, nil)

	s := startStream(t, w, dash)
	if r := s.next(); r.Ready == nil || !*r.Ready {
		t.Fatalf("not ready: %s", r.Error)
	}
	s.send(`{"id": 1, "tool": "chat_wait", "arguments": {"seconds": 20}}`, `{"id": 2, "tool": "chat_whoami"}`)
	if r := s.next(); r.ID != float64(2) {
		t.Fatalf("first answer %+v, want the whoami's: the wait held it up", r)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	w.mustCall(gw, "chat_say", map[string]any{"channel": "gw--dash", "text": "after the restart"}, nil)
	var waited struct {
		Arrived bool `json:"arrived"`
	}
	r := s.next()
	if r.ID != float64(1) || !r.Success || json.Unmarshal(r.Result, &waited) != nil || !waited.Arrived {
		t.Fatalf("the wait after the restart: %+v, want it woken by the say", r)
	}
}

// The people's views of a team store: log and search read it, watch
// --mine prints what waits on this repository as it happens, and none of
// them writes or makes a party.
func TestTeamStoreViews(t *testing.T) {
	w, db, _ := teamWorld(t)
	alpha, beta, outsider := w.repo("alpha"), w.repo("beta"), w.repo("outsider")
	w.mustCall(beta, "chat_whoami", nil, nil)
	w.mustCall(alpha, "chat_channel_new", map[string]any{"name": "ops", "parties": []string{"beta"}}, nil)
	w.mustCall(beta, "chat_ask", map[string]any{"title": "Deploy window tonight?", "body": "We plan a flamingo rollout at 22:00.", "channel": "ops"}, nil)

	before := dbStrings(t, db, `SELECT count(*) FROM parties`)
	out, err := w.command(outsider, "log", "--all")
	if err != nil || !strings.Contains(out, "Deploy window tonight?") || !strings.Contains(out, "beta") {
		t.Errorf("log --all (%v):\n%s", err, out)
	}
	out, err = w.command(outsider, "search", "flamingo")
	if err != nil || !strings.Contains(out, "ops") || !strings.Contains(out, "Deploy window") {
		t.Errorf("search flamingo (%v):\n%s", err, out)
	}
	if after := dbStrings(t, db, `SELECT count(*) FROM parties`); after[0] != before[0] {
		t.Errorf("log and search made a party: %v parties before, %v after", before, after)
	}

	watch, lines := startWatch(t, w, alpha, "--mine")
	primeWatch(t, w, beta, lines)
	w.mustCall(beta, "chat_say", map[string]any{"text": "marker: for alpha", "channel": "ops"}, nil)
	for {
		l, ok := nextLine(lines, liveGenerous)
		if !ok {
			t.Fatal("watch --mine printed nothing for beta's say")
		}
		if strings.Contains(l, "probe") {
			continue
		}
		if !strings.Contains(l, " ops ") || !strings.HasSuffix(l, "beta say: marker: for alpha") {
			t.Fatalf("watch --mine printed %q, want beta's say in ops", l)
		}
		break
	}
	stopProcess(t, watch, syscall.SIGINT)
}

// The hook on a team store: mcpp-chat-hook hands the event to mcpp-chat
// hook, which reads PostgreSQL; the session is told what waits on it, not
// told twice, and Stop blocks once.
func TestTeamStoreHook(t *testing.T) {
	w, _, _ := teamWorld(t)
	gw, dash := w.seatedPair()
	w.mustCall(gw, "chat_say", map[string]any{"text": "the radio build is green"}, nil)
	w.mustCall(gw, "chat_ask", map[string]any{"title": "Is the chunk header enum closed?", "body": "I need FRAME_AUX.", "slug": "chunk-api"}, nil)

	contains(t, contextOf(t, w.event(dash, "s1", "SessionStart", "source", "startup"), "SessionStart"),
		"you are node-dash", "#gw--dash with mesh-gw: 2 unread", `[chunk-api] "Is the chunk header enum closed?" from mesh-gw — needs your ack`)
	mustSilent(t, "a prompt with nothing new", w.event(dash, "s1", "UserPromptSubmit", "prompt", "go on"))
	w.mustCall(gw, "chat_say", map[string]any{"text": "also: TLS next week"}, nil)
	text := contextOf(t, w.event(dash, "s1", "UserPromptSubmit"), "UserPromptSubmit")
	contains(t, text, "also: TLS next week")
	if strings.Contains(text, "radio build") {
		t.Errorf("old lines repeated:\n%s", text)
	}
	contains(t, reasonOf(t, w.event(dash, "s2", "Stop", "stop_hook_active", false)), "A peer is waiting on this session", "needs your ack")
	mustSilent(t, "a second Stop for the same state", w.event(dash, "s2", "Stop", "stop_hook_active", false))
}
