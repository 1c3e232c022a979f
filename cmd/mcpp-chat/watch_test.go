package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// lineSignal is a writer that closes first when a whole line arrived.
type lineSignal struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
	once  sync.Once
}

func (w *lineSignal) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if bytes.Contains(w.buf.Bytes(), []byte("\n")) {
		w.once.Do(func() { close(w.first) })
	}
	return n, err
}

func (w *lineSignal) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// runWatch starts watch, waits for its first line on stderr, stops it and
// returns what it printed on each stream.
func runWatch(t *testing.T, env map[string]string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	errw := &lineSignal{first: make(chan struct{})}
	done := make(chan int)
	go func() {
		done <- run(ctx, append([]string{"watch"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &out, errw)
	}()
	select {
	case <-errw.first:
	case code := <-done:
		cancel()
		t.Fatalf("watch ended (exit %d) before saying anything: %s", code, errw.String())
	case <-time.After(time.Minute):
		t.Error("watch said nothing on stderr")
	}
	cancel()
	<-done
	return out.String(), errw.String()
}

// watch says what it watches before the first change, on stderr, so that
// a script reading its standard output sees only change lines.
func TestWatchSaysWhatItWatches(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "alpha")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "data", "chat.db")
	env := map[string]string{"HOME": dir, "MCPP_CHAT_DB": db, "MCPP_CHAT_WORKSPACE": repo, "MCPP_CHAT_HOME": filepath.Join(dir, "module")}

	out, errs := runWatch(t, env)
	if out != "" || !strings.Contains(errs, "watching the tick file "+filepath.Join(dir, "data", ".tick")) ||
		!strings.Contains(errs, db) || !strings.Contains(errs, "does not exist yet") {
		t.Errorf("watch: stdout %q, stderr %q", out, errs)
	}

	out, errs = runWatch(t, env, "--mine", "--exec", "true")
	if out != "" || !strings.Contains(errs, "watching "+db+" for what waits on alpha ("+repo) || !strings.Contains(errs, `runs "true"`) {
		t.Errorf("watch --mine: stdout %q, stderr %q", out, errs)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("watch created the database")
	}
}

// A watch line goes to a terminal or a command: the author, channel and
// first words a peer wrote reach it without escapes or direction overrides.
func TestWatchLinesAreCleaned(t *testing.T) {
	a := store.Arrival{Channel: "c\x1b[2J", Seq: 3, Kind: "ask", Author: "evil\x1b]0;PWNED\x07\u202e",
		Title: "innocent \u202egnp.exe\u202c \x1b[31mred", At: "2026-11-30T10:00:00.000000+00:00"}
	for _, mine := range []bool{true, false} {
		line := arrivalLine(a, mine)
		if strings.ContainsAny(line, "\x1b\x07\u202e\u202c") {
			t.Errorf("watch line %q", line)
		}
	}
	if got := arrivalLine(a, true); !strings.HasSuffix(got, "ask: innocent gnp.exe red") {
		t.Errorf("watch --mine line %q", got)
	}
}

// watch only looks: over a database of an older schema (the Python
// edition's, version 1) it changes no byte and creates no file beside it,
// where opening it for writing would bring its schema up to date.
func TestWatchMineLeavesTheDatabaseAsItIs(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "alpha")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "tools", "testdata", "python-edition", "reference-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	db := filepath.Join(data, "chat.db")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, src, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": dir, "MCPP_CHAT_DB": db, "MCPP_CHAT_WORKSPACE": repo, "MCPP_CHAT_HOME": filepath.Join(dir, "module")}
	for _, args := range [][]string{{"--mine"}, {"--mine", "--exec", "true"}} {
		if _, errs := runWatch(t, env, args...); !strings.Contains(errs, "for what waits on alpha") {
			t.Fatalf("watch %v said %q", args, errs)
		}
	}
	after, err := os.ReadFile(db)
	if err != nil || sha256.Sum256(after) != sha256.Sum256(src) {
		t.Fatalf("watch --mine changed the database (%v)", err)
	}
	if files, _ := os.ReadDir(data); len(files) != 1 {
		t.Errorf("watch --mine left files beside the database: %v", files)
	}
	r, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if v, err := r.Version(context.Background()); err != nil || v != 1 {
		t.Errorf("schema version %d (%v) after watch --mine, want 1 as before", v, err)
	}
}
