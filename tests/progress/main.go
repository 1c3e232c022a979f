// Command progress turns `go test -json ./...` into what `go test ./...`
// prints, but as each package finishes rather than in the order the
// packages were listed: the go command holds every package's line until
// the ones before it are printed, so a cold `make test` said nothing for
// minutes and then everything at once. A passing package is one line; a
// failing one shows the output of its failed tests, as go test does; a
// build error shows as it comes. While packages run and nothing was
// printed for a while, a line says which are still running.
//
// Usage: go test -json ./... | progress [-every 60s]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	every := flag.Duration("every", time.Minute, "how long a quiet spell lasts before a line says what still runs (0: never)")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *every, time.Now); err != nil {
		fmt.Fprintln(os.Stderr, "progress:", err)
		os.Exit(1)
	}
}

// event is one line of go test -json (cmd/test2json's TestEvent, and the
// go command's BuildEvent, which names its package ImportPath).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

// line is one line of a package's output, and the test that printed it.
type line struct {
	test, text string
}

// tally follows the packages of one run.
type tally struct {
	out     io.Writer
	now     func() time.Time
	started map[string]time.Time // running packages, and since when
	lines   map[string][]line    // each running package's output so far
	failed  map[string]map[string]bool
	printed time.Time // when a line was last written
}

// run reads events from in until it ends, writing the report to out.
// Lines that are not JSON (a go command's own message) pass through.
func run(in io.Reader, out io.Writer, every time.Duration, now func() time.Time) error {
	t := &tally{out: out, now: now, started: map[string]time.Time{}, lines: map[string][]line{},
		failed: map[string]map[string]bool{}, printed: now()}
	events := make(chan []byte)
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			events <- slices.Clone(sc.Bytes())
		}
		done <- sc.Err()
		close(events)
	}()
	var tick <-chan time.Time
	if every > 0 {
		ticker := time.NewTicker(every / 4)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		select {
		case raw, ok := <-events:
			if !ok {
				return <-done
			}
			t.take(raw)
		case <-tick:
			if len(t.started) > 0 && t.now().Sub(t.printed) >= every {
				t.still()
			}
		}
	}
}

// take handles one line of input.
func (t *tally) take(raw []byte) {
	var e event
	if json.Unmarshal(raw, &e) != nil || e.Action == "" {
		t.say("%s", raw)
		return
	}
	switch e.Action {
	case "build-output":
		t.say("%s", strings.TrimSuffix(e.Output, "\n"))
	case "start":
		t.started[e.Package] = t.now()
	case "output":
		t.lines[e.Package] = append(t.lines[e.Package], line{e.Test, e.Output})
	case "fail":
		if e.Test != "" {
			if t.failed[e.Package] == nil {
				t.failed[e.Package] = map[string]bool{}
			}
			t.failed[e.Package][e.Test] = true
			return
		}
		t.finish(e, "FAIL")
	case "pass":
		if e.Test == "" {
			t.finish(e, "ok  ")
		}
	case "skip":
		if e.Test == "" {
			t.finish(e, "?   ")
		}
	}
}

// finish prints a package's line, after the output of its failed tests
// when it failed.
func (t *tally) finish(e event, verdict string) {
	lines, failed := t.lines[e.Package], t.failed[e.Package]
	delete(t.lines, e.Package)
	delete(t.failed, e.Package)
	delete(t.started, e.Package)
	switch {
	case verdict == "?   ":
		t.say("?   \t%s\t[no test files]", e.Package)
		return
	case e.FailedBuild != "":
		t.say("FAIL\t%s [build failed]", e.Package)
		return
	}
	if verdict == "FAIL" {
		var b strings.Builder
		for _, l := range lines {
			if shown(l, failed) {
				b.WriteString(l.text)
			}
		}
		if b.Len() > 0 {
			t.say("%s", strings.TrimSuffix(b.String(), "\n"))
		}
	}
	t.say("%s\t%s\t%.3fs", verdict, e.Package, e.Elapsed)
}

// shown reports whether go test, without -v, would print a line of a
// failed package: the package's own output and that of its failed tests,
// without the lines that only say a test started, paused or went on.
func shown(l line, failed map[string]bool) bool {
	if l.test != "" && !failed[l.test] {
		return false
	}
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(l.text, p) {
			return false
		}
	}
	return true
}

// still says which packages are still running, the longest first.
func (t *tally) still() {
	names := make([]string, 0, len(t.started))
	for p := range t.started {
		names = append(names, p)
	}
	slices.SortFunc(names, func(a, b string) int { return t.started[a].Compare(t.started[b]) })
	parts := make([]string, len(names))
	for i, p := range names {
		parts[i] = fmt.Sprintf("%s (%s)", p, t.now().Sub(t.started[p]).Round(time.Second))
	}
	t.say("... still running: %s", strings.Join(parts, ", "))
}

func (t *tally) say(format string, args ...any) {
	fmt.Fprintf(t.out, format+"\n", args...)
	t.printed = t.now()
}
