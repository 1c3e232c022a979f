package tests

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const killRounds = 10

// faultWorld is three parties seated in one channel.
type faultWorld struct {
	*world
	asker, answerer, third string
}

func newFaultWorld(t *testing.T) *faultWorld {
	w := newWorld(t)
	f := &faultWorld{world: w, asker: w.repo("asker"), answerer: w.repo("answerer"), third: w.repo("third")}
	w.mustCall(f.answerer, "chat_whoami", nil, nil)
	w.mustCall(f.third, "chat_whoami", nil, nil)
	w.mustCall(f.asker, "chat_channel_new", map[string]any{"name": "faults", "parties": []string{"answerer", "third"}}, nil)
	return f
}

// stream calls next(i) from n goroutines until it returns false or the
// server stops answering (it was killed); it returns what succeeded.
func stream(n int, next func(i int) (tool string, args map[string]any, ok bool), k *killable) (succeeded []map[string]any) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; ; i += n {
				tool, args, ok := next(i)
				if !ok {
					return
				}
				_, errText, err := tryTool(k.session, tool, args)
				if err != nil {
					return // killed
				}
				if errText == "" {
					mu.Lock()
					succeeded = append(succeeded, args)
					mu.Unlock()
				}
			}
		}(g)
	}
	wg.Wait()
	return succeeded
}

// killAfter SIGKILLs the process at a random moment within max.
func killAfter(k *killable, max time.Duration) {
	time.Sleep(time.Duration(rand.Int64N(int64(max)))) // sleep: a random moment is the fault injected
	k.kill()
}

// killRound runs one round of TestKillDuringAsks's load — a serve process
// raising items, one answering them, both SIGKILLed at random moments —
// and returns the asks that were answered as raised.
func killRound(f *faultWorld, round int) (asked []map[string]any) {
	raiser := f.serveKillable(f.asker)
	answerer := f.serveKillable(f.answerer)
	var mu sync.Mutex
	var raised []string
	var wg sync.WaitGroup
	wg.Add(2)
	var answered []map[string]any
	go func() {
		defer wg.Done()
		asked = stream(3, func(i int) (string, map[string]any, bool) {
			slug := fmt.Sprintf("r%d-q%d", round, i)
			mu.Lock()
			raised = append(raised, slug)
			mu.Unlock()
			return "chat_ask", map[string]any{"title": "Question " + slug, "body": "Please answer.", "slug": slug}, i < 400
		}, raiser)
	}()
	go func() {
		defer wg.Done()
		answered = stream(2, func(i int) (string, map[string]any, bool) {
			time.Sleep(2 * time.Millisecond) // sleep: the answerer's pace, a load's
			mu.Lock()
			defer mu.Unlock()
			if len(raised) == 0 {
				return "chat_inbox", nil, i < 2000
			}
			slug := raised[rand.IntN(len(raised))]
			if i%3 == 0 {
				return "chat_ack", map[string]any{"item": slug, "note": "seen"}, i < 2000
			}
			return "chat_reply", map[string]any{"item": slug, "text": "answer to " + slug}, i < 2000
		}, answerer)
	}()
	go killAfter(answerer, 400*time.Millisecond)
	killAfter(raiser, 400*time.Millisecond)
	wg.Wait()
	f.t.Logf("round %d: %d asks and %d answers before the kill", round, len(asked), len(answered))
	return asked
}

// checkKillRound checks the store after a kill round: every invariant,
// and every ask that was answered as raised is stored.
func checkKillRound(t *testing.T, db *sql.DB, round int, asked []map[string]any) {
	t.Helper()
	checkInvariants(t, db)
	stored := map[string]bool{}
	for _, s := range dbStrings(t, db, `SELECT slug FROM messages WHERE kind = 'ask'`) {
		stored[s] = true
	}
	for _, a := range asked {
		if !stored[a["slug"].(string)] {
			t.Errorf("round %d: ask %s was answered as raised but is not stored", round, a["slug"])
		}
	}
}

// TestKillDuringAsks: a serve process raising a stream of items and one
// answering them (replies that auto-ack, acks with events) are SIGKILLed
// at random moments. No item may be left without its consumers, no reply
// without its auto-ack, no ack event without its ack, and every call that
// was answered as stored must be stored.
func TestKillDuringAsks(t *testing.T) {
	f := newFaultWorld(t)
	for round := 0; round < killRounds; round++ {
		asked := killRound(f, round)
		db := roDB(t, f.db)
		checkKillRound(t, db, round, asked)
		db.Close()
		if t.Failed() {
			t.FailNow()
		}
	}
	// The next process opens the database and works.
	s := f.serve(f.answerer)
	if _, e := toolCall(t, s, "chat_read", map[string]any{"limit": 500}, nil); e != "" {
		t.Fatalf("read after the kills: %s", e)
	}
	if _, e := toolCall(t, s, "chat_say", map[string]any{"text": "still here"}, nil); e != "" {
		t.Fatalf("say after the kills: %s", e)
	}
	checkInvariants(t, roDB(t, f.db))
}

// TestKillDuringArchiveSweep: items are answered in two-level threads and
// prune-ok'd by all; a serve process then resolves them and reads, so that
// its sweeps archive them with their threads, and is SIGKILLed at a random
// moment. An item is archived with its whole thread and its event, or not
// at all; what the kill left unswept, the next reader sweeps.
func TestKillDuringArchiveSweep(t *testing.T) {
	f := newFaultWorld(t)
	const items = 12
	raiser, answerer, third := f.serve(f.asker), f.serve(f.answerer), f.serve(f.third)
	archivedByKilled := 0
	for round := 0; round < killRounds; round++ {
		slugs := make([]string, items)
		for i := range slugs {
			slugs[i] = fmt.Sprintf("r%d-item%d", round, i)
			mustTool(t, raiser, "chat_ask", map[string]any{"title": slugs[i], "body": "b", "slug": slugs[i]})
			var r struct {
				Seq int64 `json:"seq"`
			}
			mustTool(t, answerer, "chat_reply", map[string]any{"item": slugs[i], "text": "answer"}, &r)
			mustTool(t, third, "chat_reply", map[string]any{"item": "faults:" + strconv.FormatInt(r.Seq, 10), "text": "+1"})
			mustTool(t, third, "chat_ack", map[string]any{"item": slugs[i]})
			for _, s := range []*mcp.ClientSession{raiser, answerer, third} {
				mustTool(t, s, "chat_prune_ok", map[string]any{"item": slugs[i]})
			}
		}
		sweeper := f.serveKillable(f.asker)
		done := make(chan struct{})
		go func() {
			defer close(done)
			stream(2, func(i int) (string, map[string]any, bool) {
				switch {
				case i >= 2*items:
					return "", nil, false
				case i%2 == 1:
					return "chat_read", map[string]any{"limit": 5}, true
				}
				return "chat_resolve", map[string]any{"item": slugs[i/2]}, true
			}, sweeper)
		}()
		killAfter(sweeper, 150*time.Millisecond)
		<-done

		db := roDB(t, f.db)
		checkInvariants(t, db)
		archivedByKilled += int(dbInt(t, db, `SELECT count(*) FROM messages WHERE kind = 'ask' AND is_archived = 1 AND slug LIKE ?`, fmt.Sprintf("r%d-%%", round)))
		db.Close()
		if t.Failed() {
			t.FailNow()
		}
		mustTool(t, third, "chat_read", map[string]any{"limit": 500})
		db = roDB(t, f.db)
		checkInvariants(t, db)
		db.Close()
	}
	t.Logf("the killed sweepers archived %d of %d items before their kills", archivedByKilled, killRounds*items)
	mustTool(t, f.serve(f.third), "chat_inbox", nil)
}

// mustTool calls a tool over MCP that must succeed and decodes its result.
func mustTool(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any, into ...any) {
	t.Helper()
	var v any
	if len(into) > 0 {
		v = into[0]
	}
	if _, e := toolCall(t, s, tool, args, v); e != "" {
		t.Fatalf("%s %v: %s", tool, args, e)
	}
}

// TestKillDuringSchemaPatch: a v1 database large enough that building the
// v2 indexes takes a while is opened by a binary that is SIGKILLed at a
// random moment. Afterwards the database is v1 without any v2 index or v2
// with all of them — never in between — and the next process migrates it
// and works. The Python edition's reference database gets the same.
func TestKillDuringSchemaPatch(t *testing.T) {
	w := newWorld(t)
	dir := w.repo("migrator")
	indexes := patchIndexes(t)
	latest := 0
	for v := range indexes {
		latest = max(latest, v)
	}
	if latest < 2 {
		t.Skip("no schema patch to apply yet")
	}
	template := filepath.Join(t.TempDir(), "v1.db")
	makeV1(t, template, 40_000)

	// How long a full open with migration takes, to spread the kills over it.
	installDB(t, template, w.db)
	start := time.Now()
	w.mustCall(dir, "chat_whoami", nil, nil)
	full := time.Since(start)
	checkSchemaState(t, w.db, indexes, latest, false)

	sources := []string{template}
	if ref := filepath.Join(repoRoot(), "..", "shared", "fixtures", "reference-v1.db"); fileExistsT(ref) {
		sources = append(sources, ref)
	}
	outcomes := map[string]int{}
	for round := 0; round < killRounds+len(sources)-1; round++ {
		src := sources[0]
		if round >= killRounds {
			src = sources[round-killRounds+1]
		}
		installDB(t, src, w.db)
		cmd := exec.Command(chatBin, "call", "chat_whoami")
		cmd.Dir = dir
		cmd.Env = w.env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if round%2 == 0 {
			// Most kills land before or inside the migration, some after it.
			time.Sleep(time.Duration(rand.Int64N(int64(full) * 5 / 4)))
		} else {
			// The moment the first pages reach the WAL: mid-transaction,
			// or between two transactions if a patch were not atomic.
			walGrows(w.db+"-wal", exited)
		}
		cmd.Process.Kill()
		<-exited
		v := checkSchemaState(t, w.db, indexes, latest, true)
		outcomes[fmt.Sprintf("v%d", v)]++
		if t.Failed() {
			t.FailNow()
		}
		// The next process finishes the job and works.
		w.mustCall(dir, "chat_whoami", nil, nil)
		if v := checkSchemaState(t, w.db, indexes, latest, false); v != latest {
			t.Fatalf("round %d: a full run left schema version %d, want %d", round, v, latest)
		}
	}
	checkIntegrity(t, rwDB(t, w.db))
	t.Logf("full open with migration: %v; after the kills: %v", full.Round(time.Millisecond), outcomes)
}

// walGrows returns once the WAL holds a frame or the process exited.
func walGrows(wal string, exited <-chan struct{}) {
	for {
		if info, err := os.Stat(wal); err == nil && info.Size() > 32 {
			return
		}
		select {
		case <-exited:
			return
		case <-time.After(200 * time.Microsecond):
		}
	}
}

func fileExistsT(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// installDB copies src over dst, dropping any -wal and -shm of dst's
// previous life (a stale WAL would be replayed into the new file).
func installDB(t *testing.T, src, dst string) {
	t.Helper()
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		os.Remove(dst + suffix)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

var createIndex = regexp.MustCompile(`(?i)CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)`)

// patchIndexes maps each schema version to the indexes its file creates.
func patchIndexes(t *testing.T) map[int][]string {
	t.Helper()
	dir := filepath.Join(repoRoot(), "schema_patches")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]string{}
	for _, e := range entries {
		v := 0
		switch name := e.Name(); {
		case name == "schema.sql":
			v = 1
		case strings.HasPrefix(name, "patch-") && strings.HasSuffix(name, ".sql"):
			v, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "patch-"), ".sql"))
		}
		if v == 0 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range createIndex.FindAllStringSubmatch(string(data), -1) {
			out[v] = append(out[v], m[1])
		}
	}
	return out
}

// checkSchemaState opens the database as the next process would (a hot
// journal is rolled back), and closes it again: an open handle would block
// the next process's switch to WAL. It checks that its indexes are exactly those of
// its schema version: every patch applied entirely or not at all.
func checkSchemaState(t *testing.T, path string, indexes map[int][]string, latest int, integrity bool) int {
	t.Helper()
	db := rwDB(t, path)
	defer db.Close()
	var version int
	if err := db.QueryRow(`SELECT version FROM schema_version WHERE id = 1`).Scan(&version); err != nil {
		t.Fatalf("schema_version: %v", err)
	}
	have := map[string]bool{}
	for _, n := range dbStrings(t, db, `SELECT name FROM sqlite_master WHERE type = 'index'`) {
		have[n] = true
	}
	var wrong []string
	for v, names := range indexes {
		for _, n := range names {
			if want := v <= version; have[n] != want {
				wrong = append(wrong, fmt.Sprintf("%s (from v%d) present=%v", n, v, have[n]))
			}
		}
	}
	sort.Strings(wrong)
	if len(wrong) > 0 || version < 1 || version > latest {
		t.Errorf("schema version %d with indexes in between: %s", version, strings.Join(wrong, "; "))
	}
	if integrity {
		checkIntegrity(t, db)
	}
	return version
}

// makeV1 writes a schema-v1 database with n items, in the rollback journal
// mode the Python edition leaves it in. Every v2 index covers them all, so
// each takes a while to build.
func makeV1(t *testing.T, path string, n int) {
	t.Helper()
	schema, err := os.ReadFile(filepath.Join(repoRoot(), "schema_patches", "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := "2026-11-29T18:09:27.660870+00:00"
	stmts := []struct {
		q    string
		args []any
	}{
		{string(schema), nil},
		{`INSERT INTO schema_version (id, version, updated_at) VALUES (1, 1, ?)`, []any{now}},
		{`INSERT INTO parties (name, workspace_path, first_seen, last_seen) VALUES ('old', '/srv/old', ?1, ?1)`, []any{now}},
		{`INSERT INTO channels (name, created_by, created_at) VALUES ('history', 1, ?)`, []any{now}},
		{`INSERT INTO channel_parties (channel_id, party_id, joined_at) VALUES (1, 1, ?)`, []any{now}},
		{`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
			INSERT INTO messages (channel_id, seq, kind, slug, title, body, author_id, status, created_at, updated_at)
			SELECT 1, i, 'ask', 'item-' || i, 'Item ' || i, 'question number ' || i, 1, 'open', ?2, ?2 FROM n`, []any{n, now}},
	}
	for _, s := range stmts {
		if _, err := db.Exec(s.q, s.args...); err != nil {
			t.Fatalf("make v1 database: %v", err)
		}
	}
}
