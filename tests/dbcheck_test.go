package tests

// Helpers shared by the reliability tests: a read-only look at the
// database the binaries wrote, the invariants no call may break, a digest
// that proves a failed call wrote nothing, and serve processes the test
// can kill.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/ncruces/go-sqlite3/driver"
)

// roDB opens a database read-only, as an observer beside the binaries.
func roDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// rwDB opens a database for writing, as another process would.
func rwDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func dbInt(t *testing.T, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func dbStrings(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s.String)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkIntegrity runs SQLite's own checks: page structure and foreign keys.
func checkIntegrity(t *testing.T, db *sql.DB) {
	t.Helper()
	if got := dbStrings(t, db, `PRAGMA integrity_check`); len(got) != 1 || got[0] != "ok" {
		t.Fatalf("integrity_check: %v", got)
	}
	rows, err := db.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Fatal("foreign_key_check reports a dangling reference")
	}
}

// checkInvariants asserts what no crash or race may leave behind: seq is
// 1..max in every channel; every item has its consumers with the author
// acked; a consumer's reply to an item stamped its ack; every ack event has
// its ack; nothing is archived without done + unanimous prune-ok, and an
// archived item has its archive event and its whole thread archived.
func checkInvariants(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, onPostgres := db.Driver().(*stdlib.Driver); !onPostgres {
		checkIntegrity(t, db) // SQLite's own checks of the file
	}
	checks := []struct{ what, query string }{
		{"channels whose seqs are not exactly 1..max", `
			SELECT count(*) FROM (SELECT channel_id FROM messages GROUP BY channel_id
			HAVING min(seq) <> 1 OR max(seq) <> count(*) OR count(DISTINCT seq) <> count(*)) AS gaps`},
		{"items with fewer than two consumers", `
			SELECT count(*) FROM messages m WHERE m.kind = 'ask'
			AND (SELECT count(*) FROM item_consumers ic WHERE ic.message_id = m.id) < 2`},
		{"items whose author is not an acked consumer", `
			SELECT count(*) FROM messages m WHERE m.kind = 'ask' AND NOT EXISTS (
				SELECT 1 FROM item_consumers ic WHERE ic.message_id = m.id AND ic.party_id = m.author_id AND ic.acked_at IS NOT NULL)`},
		{"consumer replies to an item without the consumer's ack", `
			SELECT count(*) FROM messages r JOIN messages a ON a.id = r.parent_id
			JOIN item_consumers ic ON ic.message_id = a.id AND ic.party_id = r.author_id
			WHERE r.kind = 'reply' AND a.kind = 'ask' AND a.status <> 'done' AND ic.acked_at IS NULL`},
		{"items still open after a consumer's reply", `
			SELECT count(*) FROM messages r JOIN messages a ON a.id = r.parent_id
			JOIN item_consumers ic ON ic.message_id = a.id AND ic.party_id = r.author_id
			WHERE r.kind = 'reply' AND a.kind = 'ask' AND a.author_id <> r.author_id AND a.status = 'open'`},
		{"ack events without the ack", `
			SELECT count(*) FROM messages e JOIN messages a ON a.channel_id = e.channel_id AND a.kind = 'ask'
			JOIN parties p ON e.body = '[' || a.slug || '] acked by ' || p.name
			LEFT JOIN item_consumers ic ON ic.message_id = a.id AND ic.party_id = p.id
			WHERE e.kind = 'event' AND (ic.acked_at IS NULL OR e.author_id <> p.id)`},
		{"archived items not done", `
			SELECT count(*) FROM messages WHERE kind = 'ask' AND is_archived = 1 AND status <> 'done'`},
		{"archived items without every prune-ok", `
			SELECT count(*) FROM messages m WHERE m.kind = 'ask' AND m.is_archived = 1 AND EXISTS (
				SELECT 1 FROM item_consumers ic WHERE ic.message_id = m.id AND ic.prune_ok_at IS NULL)`},
		{"archived items without exactly one archive event", `
			SELECT count(*) FROM messages m WHERE m.kind = 'ask' AND m.is_archived = 1 AND (
				SELECT count(*) FROM messages e WHERE e.channel_id = m.channel_id AND e.kind = 'event'
				AND e.body = '[' || m.slug || '] archived (done + unanimous prune-ok)') <> 1`},
		{"archive events of live items", `
			SELECT count(*) FROM messages m WHERE m.kind = 'ask' AND m.is_archived = 0 AND EXISTS (
				SELECT 1 FROM messages e WHERE e.channel_id = m.channel_id AND e.kind = 'event'
				AND e.body = '[' || m.slug || '] archived (done + unanimous prune-ok)')`},
		{"replies whose archived flag differs from their parent's", `
			SELECT count(*) FROM messages r JOIN messages p ON p.id = r.parent_id
			WHERE r.is_archived <> p.is_archived`},
		{"cursors beyond their channel's last seq", `
			SELECT count(*) FROM cursors cu WHERE cu.last_seq > (SELECT coalesce(max(seq), 0) FROM messages WHERE channel_id = cu.channel_id)`},
	}
	for _, c := range checks {
		if n := dbInt(t, db, c.query); n != 0 {
			t.Errorf("%d %s", n, c.what)
		}
	}
}

// digest hashes every row of every table except parties.last_seen (a
// read-only call may bump it): equal digests mean nothing was written.
func tableDigest(t *testing.T, db *sql.DB) string {
	t.Helper()
	h := sha256.New()
	tables := dbStrings(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	for _, table := range tables {
		cols := dbStrings(t, db, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
		var keep []string
		for _, c := range cols {
			if table == "parties" && c == "last_seen" {
				continue
			}
			keep = append(keep, `quote("`+c+`")`)
		}
		rows, err := db.Query(`SELECT ` + strings.Join(keep, ` || '|' || `) + ` FROM "` + table + `" ORDER BY rowid`)
		if err != nil {
			t.Fatalf("digest %s: %v", table, err)
		}
		fmt.Fprintf(h, "table %s\n", table)
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(h, line)
		}
		rows.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fileState is what "the file was never rewritten" compares.
type fileState struct {
	hash  string
	mtime time.Time
	size  int64
}

// backdate sets path's times an hour back, so that a write from now on
// shows in its mtime: one within the file system's clock tick of the
// file's making would not.
func backdate(t *testing.T, path string) {
	t.Helper()
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
}

func fileStateOf(t *testing.T, path string) fileState {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the file %s is gone or unreadable: %v", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return fileState{hash: hex.EncodeToString(sum[:]), mtime: info.ModTime(), size: info.Size()}
}

// killable is a `mcpp-chat serve` process whose MCP session and process
// the test holds, so it can SIGKILL it.
type killable struct {
	cmd     *exec.Cmd
	session *mcp.ClientSession
}

// serveKillable starts `mcpp-chat serve` in dir and connects to it.
func (w *world) serveKillable(dir string) *killable {
	w.t.Helper()
	cmd := exec.Command(chatBin, "serve")
	cmd.Dir = dir
	cmd.Env = w.env
	client := mcp.NewClient(&mcp.Implementation{Name: "tests", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		w.t.Fatalf("connect to serve in %s: %v", dir, err)
	}
	k := &killable{cmd: cmd, session: session}
	w.t.Cleanup(k.kill)
	return k
}

// kill sends SIGKILL: no deferred function, no rollback, no close runs.
func (k *killable) kill() {
	if k.cmd.Process != nil {
		k.cmd.Process.Kill()
	}
	k.session.Close()
}

// tryTool is toolCall without failing the test on a transport error (a
// killed server breaks its pipe); it reports the error text of a failed
// call or transport.
func tryTool(s *mcp.ClientSession, tool string, args map[string]any) (result string, errText string, transportErr error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", "", err
	}
	if res.IsError {
		return "", contentText(res, 0), nil
	}
	return contentText(res, 1), "", nil
}
