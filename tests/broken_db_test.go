package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/tests/sandbox"
)

// TestWriteLockHeldByAnotherProcess: another process holds the write lock.
// Writes (and a read that must move its cursor) wait the busy timeout
// (storage.busy_timeout_ms, short here), then fail with an error that
// names it and says to retry; reads that write nothing go on; the servers
// stay up and write again once the lock is gone.
func TestWriteLockHeldByAnotherProcess(t *testing.T) {
	w := newWorld(t)
	w.configure("storage:\n  busy_timeout_ms: 200\n") // busyTimeout below
	gw, dash := w.serve(w.repo("mesh-gw")), w.serve(w.repo("node-dash"))
	mustTool(t, dash, "chat_whoami", nil) // a party exists from its first call
	mustTool(t, gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}})
	mustTool(t, gw, "chat_say", map[string]any{"text": "before the lock"})

	ctx := context.Background()
	holder := rwDB(t, w.db)
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}

	// A read that writes nothing does not wait for the writer.
	if _, e := toolCall(t, dash, "chat_read", map[string]any{"peek": true}, nil); e != "" {
		t.Fatalf("peek read during the lock: %s", e)
	}
	const busyTimeout = 200 * time.Millisecond
	type outcome struct {
		errText string
		took    time.Duration
	}
	try := func(s *mcp.ClientSession, tool string, args map[string]any, out chan<- outcome) {
		start := time.Now()
		_, e, err := tryTool(s, tool, args)
		if err != nil {
			e = "transport: " + err.Error()
		}
		out <- outcome{e, time.Since(start)}
	}
	say, read := make(chan outcome, 1), make(chan outcome, 1)
	go try(gw, "chat_say", map[string]any{"text": "during the lock"}, say)
	go try(dash, "chat_read", nil, read) // moves the cursor: a write
	for name, ch := range map[string]chan outcome{"say": say, "cursor-moving read": read} {
		switch o := <-ch; {
		case o.errText == "":
			t.Errorf("%s succeeded while another process held the write lock", name)
		case !strings.Contains(o.errText, fmt.Sprintf("busy: another process has held its write lock for %v", busyTimeout)) || !strings.Contains(o.errText, "retry"):
			t.Errorf("%s: error %q does not say the database was busy for the configured %v and to retry", name, o.errText, busyTimeout)
		case o.took < busyTimeout:
			// It gave up while the lock was still held; this says it
			// waited for the lock first instead of failing at once.
			t.Errorf("%s gave up after %v, before its busy timeout of %v", name, o.took, busyTimeout)
		}
	}
	// Still up while locked.
	if _, e := toolCall(t, gw, "chat_inbox", nil, nil); e != "" {
		t.Fatalf("inbox during the lock: %s", e)
	}
	conn.ExecContext(ctx, `ROLLBACK`)
	conn.Close()
	mustTool(t, gw, "chat_say", map[string]any{"text": "after the lock"})
	mustTool(t, dash, "chat_read", nil)
	db := roDB(t, w.db)
	if n := dbInt(t, db, `SELECT count(*) FROM messages WHERE body = 'during the lock'`); n != 0 {
		t.Fatal("the refused say was stored")
	}
	checkInvariants(t, db)
}

// brokenCase is a database file mcpp-chat must refuse without touching.
type brokenCase struct {
	name string
	make func(t *testing.T, w *world, path string)
	want []string // in the error, besides the file's path
}

// TestBrokenDatabaseFiles: a file that is not a database, an SQLite file
// that is not a chat database, a chat database from a newer mcpp-chat.
// `call` and `serve` both refuse with an error naming the file and what to
// do, and the file is never rewritten or deleted.
func TestBrokenDatabaseFiles(t *testing.T) {
	cases := []brokenCase{
		{"not a database", func(t *testing.T, w *world, path string) {
			writeFile(t, path, strings.Repeat("this is my shopping list, not a database\n", 200))
		}, []string{"not", "MCPP_CHAT_DB"}},
		{"an SQLite header and garbage", func(t *testing.T, w *world, path string) {
			writeFile(t, path, "SQLite format 3\x00"+strings.Repeat("\xff", 8192))
		}, []string{"not", "MCPP_CHAT_DB"}},
		{"another program's SQLite database", func(t *testing.T, w *world, path string) {
			db := rwDB(t, path)
			if _, err := db.Exec(`CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('soup')`); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}, []string{"not a chat database", "MCPP_CHAT_DB"}},
		{"a newer schema version", func(t *testing.T, w *world, path string) {
			w.mustCall(w.repo("maker"), "chat_whoami", nil, nil)
			db := rwDB(t, path)
			if _, err := db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}, []string{"99", "upgrade mcpp-chat"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			dir := w.repo("mesh-gw")
			if err := os.MkdirAll(filepath.Dir(w.db), 0o700); err != nil {
				t.Fatal(err)
			}
			c.make(t, w, w.db)
			backdate(t, w.db)
			before := fileStateOf(t, w.db)

			r := w.call(dir, "chat_whoami", nil)
			if r.Success || r.Exit != 1 {
				t.Fatalf("call succeeded (exit %d) on %s", r.Exit, c.name)
			}
			checkRefusal(t, "call", r.Error, w.db, c.want)

			cmd := exec.Command(chatBin, "serve")
			cmd.Dir = dir
			cmd.Env = w.env
			cmd.Stdin = strings.NewReader("")
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
				t.Fatalf("serve started on %s: %v %s", c.name, err, out)
			}
			checkRefusal(t, "serve", string(out), w.db, c.want)

			if after := fileStateOf(t, w.db); after != before {
				t.Fatalf("the refused file was changed: before %+v after %+v", before, after)
			}
		})
	}
}

func checkRefusal(t *testing.T, via, msg, path string, want []string) {
	t.Helper()
	for _, s := range append([]string{path}, want...) {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: error %q does not mention %q", via, msg, s)
		}
	}
	if strings.Contains(msg, "panic") {
		t.Errorf("%s panicked: %s", via, msg)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// nobody is the user a root test runs the binary as, so that file modes
// bind it as they bind any user.
const nobody = 65534

// TestReadOnlyDatabaseFile: a chat database the user may not write (mode
// 0400). Calls fail with an error naming the file and what to do; the
// file is not changed. Tests usually run as root, whom file modes do not
// stop, so there the binary runs as the unprivileged user nobody.
func TestReadOnlyDatabaseFile(t *testing.T) {
	w := newWorld(t)
	base := t.TempDir()
	asNobody := os.Geteuid() == 0
	// Everything the binary touches must be reachable by the user it runs as.
	for d := base; d != "/" && d != filepath.Dir(d); d = filepath.Dir(d) {
		if d == os.TempDir() {
			break
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(base, "bin", "mcpp-chat")
	data, err := os.ReadFile(chatBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(base, "data")
	dbPath := filepath.Join(dataDir, "chat.db")
	repo := filepath.Join(base, "repos", "mesh-gw")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := sandbox.Env("MCPP_CHAT_DB="+dbPath, "MCPP_CHAT_HOME="+filepath.Join(dataDir, "module"),
		"HOME="+filepath.Join(dataDir, "home"), "XDG_DATA_HOME="+filepath.Join(dataDir, "share"))
	w.env = env
	// A real chat database, made by the binary, with a party in it.
	w.mustCall(w.repo("maker"), "chat_whoami", nil, nil)

	if err := os.Chmod(dbPath, 0o400); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Dir = repo
		cmd.Env = env
		if asNobody {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		}
		return cmd
	}
	if asNobody {
		for _, p := range []string{dataDir, dbPath} {
			if err := os.Chown(p, nobody, nobody); err != nil {
				t.Skipf("cannot hand the database to an unprivileged user (%v): as root, file modes do not stop writes", err)
			}
		}
	}
	probe := exec.Command("/bin/sh", "-c", `test -w "$0"`, dbPath)
	probe.SysProcAttr = run().SysProcAttr
	if probe.Run() == nil {
		t.Skipf("%s is still writable for the test's user: cannot make a read-only database here", dbPath)
	}
	backdate(t, dbPath)
	before := fileStateOf(t, dbPath)

	cmd := run("call", "chat_whoami")
	out, err := cmd.Output()
	msg := string(out)
	t.Logf("as uid %d: %s", map[bool]int{true: nobody, false: os.Geteuid()}[asNobody], strings.TrimSpace(msg))
	for _, s := range []string{dbPath, "write access", "MCPP_CHAT_DB"} {
		if !strings.Contains(msg, s) {
			t.Errorf("call on a read-only database: %q does not mention %q", msg, s)
		}
	}
	if strings.Contains(msg, `"success":true`) || err == nil {
		t.Errorf("call succeeded on a read-only database (%v): %s", err, msg)
	}
	serve := run("serve")
	serve.Stdin = strings.NewReader("")
	out, err = serve.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Errorf("serve started on a read-only database: %v %s", err, out)
	}
	checkRefusal(t, "serve", string(out), dbPath, []string{"write access", "MCPP_CHAT_DB"})
	if after := fileStateOf(t, dbPath); after != before {
		t.Fatalf("the read-only database was changed: before %+v after %+v", before, after)
	}
}

// A database emptied (truncated to 0 bytes) while a session still has it
// open is no busy database — "busy" would send the user to wait for
// nothing. It says what happened and what to do.
func TestEmptiedUnderARunningSession(t *testing.T) {
	w := newWorld(t)
	w.configure("storage:\n  busy_timeout_ms: 200\n") // how long the call looks before it says so
	gw := w.serve(w.repo("mesh-gw"))
	mustTool(t, gw, "chat_whoami", nil) // the session holds the database open
	if err := os.Truncate(w.db, 0); err != nil {
		t.Fatal(err)
	}
	r := w.call(w.repo("node-dash"), "chat_say", map[string]any{"text": "x"})
	if r.Success || !strings.Contains(r.Error, "is empty (0 bytes) while another process has it open") || !strings.Contains(r.Error, ".backups/") {
		t.Fatalf("call on an emptied database: %+v", r)
	}
}

// The database deleted under a running server: writes that went on to the
// deleted file would be confirmed, then lost when the server exits. It
// refuses them with a sentence, and doctor names the process.
func TestDeletedUnderARunningServer(t *testing.T) {
	w := newWorld(t)
	gw := w.serve(w.repo("mesh-gw"))
	mustTool(t, gw, "chat_channel_new", map[string]any{"name": "solo"})
	for _, f := range []string{"", "-wal", "-shm"} {
		os.Remove(w.db + f)
	}
	_, e := toolCall(t, gw, "chat_say", map[string]any{"text": "lost?"}, nil)
	if !strings.Contains(e, "was deleted or replaced while this session had it open — nothing was written") {
		t.Fatalf("a write to a deleted database: %q", e)
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return // doctor can only see other processes' files through /proc
	}
	v, _ := servers.Load(gw)
	pid := v.(*served).cmd.Process.Pid
	cmd := exec.Command(chatBin, "doctor")
	cmd.Dir = w.repo("node-dash")
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("process %d (mcpp-chat) still has the database open although the file was deleted or replaced", pid)) {
		t.Fatalf("doctor (%v) does not name the server that holds the deleted database:\n%s", err, out)
	}
}
