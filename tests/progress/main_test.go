package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// stream is go test -json's output for a run in which slow started
// first but finished last, fast passed, broken failed one of two tests
// (with a subtest), and nofiles has none.
func stream(t *testing.T) string {
	t.Helper()
	evs := []event{
		{Action: "start", Package: "m/slow"},
		{Action: "start", Package: "m/fast"},
		{Action: "run", Package: "m/fast", Test: "TestA"},
		{Action: "output", Package: "m/fast", Test: "TestA", Output: "=== RUN   TestA\n"},
		{Action: "output", Package: "m/fast", Test: "TestA", Output: "    a_test.go:3: a passing test's log\n"},
		{Action: "pass", Package: "m/fast", Test: "TestA", Elapsed: 0.01},
		{Action: "output", Package: "m/fast", Output: "PASS\n"},
		{Action: "pass", Package: "m/fast", Elapsed: 0.25},
		{Action: "start", Package: "m/broken"},
		{Action: "output", Package: "m/broken", Test: "TestGood", Output: "=== RUN   TestGood\n"},
		{Action: "output", Package: "m/broken", Test: "TestGood", Output: "--- PASS: TestGood (0.00s)\n"},
		{Action: "pass", Package: "m/broken", Test: "TestGood"},
		{Action: "output", Package: "m/broken", Test: "TestBad", Output: "=== RUN   TestBad\n"},
		{Action: "output", Package: "m/broken", Test: "TestBad/sub", Output: "=== RUN   TestBad/sub\n"},
		{Action: "output", Package: "m/broken", Test: "TestBad/sub", Output: "    bad_test.go:9: want 2, got 3\n"},
		{Action: "output", Package: "m/broken", Test: "TestBad/sub", Output: "    --- FAIL: TestBad/sub (0.00s)\n"},
		{Action: "fail", Package: "m/broken", Test: "TestBad/sub"},
		{Action: "output", Package: "m/broken", Test: "TestBad", Output: "--- FAIL: TestBad (0.00s)\n"},
		{Action: "fail", Package: "m/broken", Test: "TestBad"},
		{Action: "output", Package: "m/broken", Output: "FAIL\n"},
		{Action: "fail", Package: "m/broken", Elapsed: 1.5},
		{Action: "skip", Package: "m/nofiles"},
		{Action: "pass", Package: "m/slow", Elapsed: 300},
	}
	var b strings.Builder
	for _, e := range evs {
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestEachPackageAsItFinishes(t *testing.T) {
	var out bytes.Buffer
	if err := run(strings.NewReader(stream(t)), &out, 0, time.Now); err != nil {
		t.Fatal(err)
	}
	// A failed package shows its failed tests' lines in the order they
	// were printed (a parent's verdict after its subtest's), never a
	// passing test's log nor the lines that say a test started.
	want := "ok  \tm/fast\t0.250s\n" +
		"    bad_test.go:9: want 2, got 3\n" +
		"    --- FAIL: TestBad/sub (0.00s)\n" +
		"--- FAIL: TestBad (0.00s)\n" +
		"FAIL\n" +
		"FAIL\tm/broken\t1.500s\n" +
		"?   \tm/nofiles\t[no test files]\n" +
		"ok  \tm/slow\t300.000s\n"
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestBuildErrorsAndPlainLinesPassThrough(t *testing.T) {
	in := `{"ImportPath":"m/x [m/x.test]","Action":"build-output","Output":"x.go:3:2: undefined: y\n"}
{"ImportPath":"m/x [m/x.test]","Action":"build-fail"}
{"Action":"start","Package":"m/x"}
{"Action":"fail","Package":"m/x","Elapsed":0,"FailedBuild":"m/x [m/x.test]"}
go: warning: a message of the go command itself
`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out, 0, time.Now); err != nil {
		t.Fatal(err)
	}
	want := "x.go:3:2: undefined: y\nFAIL\tm/x [build failed]\ngo: warning: a message of the go command itself\n"
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestStillRunningNamesTheLongestFirst(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	tl := &tally{out: &out, now: func() time.Time { return now }, started: map[string]time.Time{
		"m/store": now.Add(-90 * time.Second),
		"m/tests": now.Add(-252 * time.Second),
	}}
	tl.still()
	if got, want := out.String(), "... still running: m/tests (4m12s), m/store (1m30s)\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A quiet spell longer than -every while a package runs brings the line;
// it comes from the run loop itself, not only from a test's call.
func TestQuietSpellSaysWhatStillRuns(t *testing.T) {
	r, w := ioPipe()
	var out lockedBuffer
	done := make(chan error, 1)
	go func() { done <- run(r, &out, 40*time.Millisecond, time.Now) }()
	w.Write([]byte(`{"Action":"start","Package":"m/slow"}` + "\n"))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "still running: m/slow") {
		if time.Now().After(deadline) {
			t.Fatalf("no line about the running package in 10 s; got %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func ioPipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }

// lockedBuffer is a buffer the run loop writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
