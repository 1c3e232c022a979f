package tests

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The load: loadParties repositories, each making loadCalls calls into one
// shared channel, all at the same time. A quarter are asks with slugs, half
// are says, a quarter are reads.
const (
	loadParties = 8
	loadCalls   = 40
	loadChannel = "load"
	// callsInFlight bounds the `mcpp-chat call` processes one repository
	// runs at once, so 2 CI cores are not swamped by 320 processes.
	callsInFlight = 4
)

// invoke makes one call as party i and returns the result JSON or the tool
// error text; err is a transport or process failure.
type invoke func(i int, tool string, args map[string]any) (result, errText string, err error)

// TestLoadThroughCall runs the load through `mcpp-chat call`: every call is
// its own process opening the database, so every write contends for the
// file lock with the others.
func TestLoadThroughCall(t *testing.T) {
	w := newWorld(t)
	dirs := make([]string, loadParties)
	for i := range dirs {
		dirs[i] = w.repo(fmt.Sprintf("load-%d", i))
	}
	do := func(i int, tool string, args map[string]any) (string, string, error) {
		r, err := w.tryCall(dirs[i], tool, args)
		if err != nil {
			return "", "", err
		}
		if !r.Success {
			return "", r.Error, nil
		}
		return string(r.Result), "", nil
	}
	runLoad(t, w, do, callsInFlight, "mcpp-chat call")
}

// TestLoadThroughServe runs the same load through loadParties `serve`
// processes, each receiving its loadCalls calls at once.
func TestLoadThroughServe(t *testing.T) {
	w := newWorld(t)
	sessions := make([]*mcp.ClientSession, loadParties)
	for i := range sessions {
		sessions[i] = w.serve(w.repo(fmt.Sprintf("load-%d", i)))
	}
	do := func(i int, tool string, args map[string]any) (string, string, error) {
		return tryTool(sessions[i], tool, args)
	}
	runLoad(t, w, do, loadCalls, "serve")
}

func runLoad(t *testing.T, w *world, do invoke, inFlight int, via string) {
	// Every party exists (a party appears at its first call), then one
	// seats them all in the shared channel.
	for i := 0; i < loadParties; i++ {
		if _, e, err := do(i, "chat_whoami", nil); e != "" || err != nil {
			t.Fatalf("whoami %d: %s %v", i, e, err)
		}
	}
	var others []string
	for i := 1; i < loadParties; i++ {
		others = append(others, fmt.Sprintf("load-%d", i))
	}
	if _, e, err := do(0, "chat_channel_new", map[string]any{"name": loadChannel, "parties": others}); e != "" || err != nil {
		t.Fatalf("channel_new: %s %v", e, err)
	}

	db := roDB(t, w.db)
	stopSampler := sampleCursors(t, db)

	var mu sync.Mutex
	var failures []string
	maxCursor := map[int]int64{} // the highest cursor each party's reads reported
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < loadParties; i++ {
		sem := make(chan struct{}, inFlight)
		for j := 0; j < loadCalls; j++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(i, j int) {
				defer wg.Done()
				defer func() { <-sem }()
				tool, args := loadOp(i, j)
				res, errText, err := do(i, tool, args)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					failures = append(failures, fmt.Sprintf("%s by load-%d: %v", tool, i, err))
				case errText != "":
					failures = append(failures, fmt.Sprintf("%s by load-%d: %s", tool, i, errText))
				case tool == "chat_read":
					var r struct {
						Cursor int64 `json:"cursor"`
					}
					if err := json.Unmarshal([]byte(res), &r); err != nil {
						failures = append(failures, fmt.Sprintf("read result %q: %v", res, err))
					}
					maxCursor[i] = max(maxCursor[i], r.Cursor)
				}
			}(i, j)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	backwards := stopSampler()

	calls := loadParties * loadCalls
	t.Logf("load through %s: %d parties × %d calls = %d calls in %v = %.0f calls/s",
		via, loadParties, loadCalls, calls, elapsed.Round(time.Millisecond), float64(calls)/elapsed.Seconds())
	for _, f := range failures {
		t.Errorf("a call failed under load: %s", f)
	}
	for _, b := range backwards {
		t.Errorf("a cursor moved backwards: %s", b)
	}

	checkInvariants(t, db)
	checkStoredOnce(t, db)
	for i, seen := range maxCursor {
		final := dbInt(t, db, `SELECT coalesce((SELECT last_seq FROM cursors cu JOIN parties p ON p.id = cu.party_id
			JOIN channels c ON c.id = cu.channel_id WHERE p.name = ? AND c.name = ?), 0)`, fmt.Sprintf("load-%d", i), loadChannel)
		if final < seen {
			t.Errorf("load-%d's cursor ends at %d, below the %d a read reported", i, final, seen)
		}
	}
}

// loadOp is party i's call number j: an ask with a slug, two says, a read.
func loadOp(i, j int) (string, map[string]any) {
	switch j % 4 {
	case 0:
		return "chat_ask", map[string]any{
			"channel": loadChannel, "slug": fmt.Sprintf("q-%d-%d", i, j),
			"title": fmt.Sprintf("Question %d from load-%d", j, i), "body": "Does this survive the load?",
		}
	case 3:
		return "chat_read", map[string]any{"channel": loadChannel, "limit": 25}
	}
	return "chat_say", map[string]any{"channel": loadChannel, "text": fmt.Sprintf("say-%d-%d", i, j)}
}

// checkStoredOnce: every say and every ask of the load is in the channel
// exactly once, an ask under exactly the slug it was given.
func checkStoredOnce(t *testing.T, db *sql.DB) {
	t.Helper()
	says, asks := map[string]int{}, map[string]int{}
	for _, b := range dbStrings(t, db, `SELECT body FROM messages WHERE kind = 'say'`) {
		says[b]++
	}
	for _, s := range dbStrings(t, db, `SELECT slug FROM messages WHERE kind = 'ask'`) {
		asks[s]++
	}
	for i := 0; i < loadParties; i++ {
		for j := 0; j < loadCalls; j++ {
			tool, args := loadOp(i, j)
			switch tool {
			case "chat_say":
				if n := says[args["text"].(string)]; n != 1 {
					t.Errorf("say %q stored %d times, want once", args["text"], n)
				}
			case "chat_ask":
				if n := asks[args["slug"].(string)]; n != 1 {
					t.Errorf("ask %q stored %d times, want once", args["slug"], n)
				}
			}
		}
	}
	if len(says) != loadParties*loadCalls/2 || len(asks) != loadParties*loadCalls/4 {
		t.Errorf("stored %d says and %d asks, want %d and %d (a retry stored a call twice?)",
			len(says), len(asks), loadParties*loadCalls/2, loadParties*loadCalls/4)
	}
	consumers := dbInt(t, db, `SELECT count(*) FROM item_consumers`)
	if want := int64(loadParties * loadParties * loadCalls / 4); consumers != want {
		t.Errorf("%d consumer rows, want %d (every seated party of every ask)", consumers, want)
	}
}

// sampleCursors watches the cursors table while the load runs; the
// returned stop function lists every cursor it saw move backwards.
func sampleCursors(t *testing.T, db *sql.DB) (stop func() []string) {
	done := make(chan struct{})
	result := make(chan []string, 1)
	go func() {
		last := map[[2]int64]int64{}
		var backwards []string
		samples := 0
		for {
			rows, err := db.Query(`SELECT channel_id, party_id, last_seq FROM cursors`)
			if err == nil {
				for rows.Next() {
					var c, p, seq int64
					if rows.Scan(&c, &p, &seq) == nil {
						if prev, ok := last[[2]int64{c, p}]; ok && seq < prev {
							backwards = append(backwards, fmt.Sprintf("channel %d party %d: %d after %d", c, p, seq, prev))
						}
						last[[2]int64{c, p}] = seq
					}
				}
				rows.Close()
				samples++
			}
			select {
			case <-done:
				t.Logf("cursor sampler: %d samples of %d cursors", samples, len(last))
				result <- backwards
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		close(done)
		return <-result
	}
}
