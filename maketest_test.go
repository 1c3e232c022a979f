package mcppchat

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `make test` (tests/make-test.sh) with every suite failing or noisy: a
// failure logged in a loop shows once with its count, the suites after a
// failed one still run, the skip notes come after all of them, and the run
// exits non-zero.
func TestMakeTestRunsEverySuiteAndCollapsesRepeats(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on PATH")
	}
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("no awk on PATH")
	}
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	dir := t.TempDir()
	fakeGo := writeScript(t, dir, "go", `case "$1" in
vet) echo "vet: store.go:3: unreachable code"; exit 1 ;;
build) exec "`+realGo+`" "$@" ;;
test) printf '%s\n' '{"Action":"start","Package":"m/busy"}'
      printf '%s\n' '{"Action":"output","Package":"m/busy","Test":"TestBusy","Output":"=== RUN   TestBusy\n"}'
      for i in $(seq 400); do printf '%s\n' '{"Action":"output","Package":"m/busy","Test":"TestBusy","Output":"    busy_test.go:12: database is locked\n"}'; done
      printf '%s\n' '{"Action":"output","Package":"m/busy","Test":"TestBusy","Output":"--- FAIL: TestBusy (0.00s)\n"}'
      printf '%s\n' '{"Action":"fail","Package":"m/busy","Test":"TestBusy"}'
      printf '%s\n' '{"Action":"fail","Package":"m/busy","Elapsed":0.5}'
      exit 1 ;;
esac`)
	fakePython := writeScript(t, dir, "python3", `case "$*" in
*unittest*) echo "Ran 29 tests"; echo "OK" ;;
*yaml*) exit 1 ;;
esac`)
	cmd := exec.Command(bash, "tests/make-test.sh")
	cmd.Env = append(os.Environ(), "GO="+fakeGo, "PYTHON="+fakePython)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("make test passed (or did not run: %v) with two failing suites:\n%s", err, out)
	}
	text := string(out)
	if n := strings.Count(text, "database is locked"); n != 1 {
		t.Errorf("the repeated line shows %d times, want once:\n%s", n, text)
	}
	if !strings.Contains(text, "FAIL\tm/busy\t0.500s") {
		t.Errorf("no line for the failed package:\n%s", text)
	}
	if !strings.Contains(text, "[the line above repeated 399 more times]") {
		t.Errorf("no count of the repeats:\n%s", text)
	}
	ran, note := strings.Index(text, "Ran 29 tests"), strings.Index(text, "has no PyYAML")
	if ran < 0 || note < ran {
		t.Errorf("the mcpp host test did not run after the failed Go suites, or the skip note came before it:\n%s", text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if last := lines[len(lines)-1]; last != "make test: FAILED: go vet ./..., go test ./..." {
		t.Errorf("the last line is %q, want the failed suites named", last)
	}
}

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// make install says in a few lines what it installed and what to run next
// (the line that registers the server, as setup claude prints it), not
// every client's snippet.
func TestMakeInstallSaysWhatItDidAndWhatIsNext(t *testing.T) {
	makeProg, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make on PATH")
	}
	dir := t.TempDir()
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), makefile, 0o644); err != nil {
		t.Fatal(err)
	}
	// A stand-in for the built binaries: setup claude's two lines; setup
	// alone prints every client's snippet, about 100 lines.
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(dir, "bin"), "mcpp-chat", `if [ "$*" = "setup claude" ]; then echo "# Claude Code: register the server"; echo "claude mcp add --scope user chat -- $0 serve"; else seq 100; fi`)
	writeScript(t, filepath.Join(dir, "bin"), "mcpp-chat-hook", `true`)
	prefix := filepath.Join(dir, "prefix")
	cmd := exec.Command(makeProg, "install", "PREFIX="+prefix, "GO=true")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	text := string(out)
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) > 10 { // the build's three, then a few
		t.Errorf("make install printed %d lines, want a few:\n%s", len(lines), text)
	}
	for _, want := range []string{"installed: bin/mcpp-chat and bin/mcpp-chat-hook, copied to " + prefix + "/bin",
		"  claude mcp add --scope user chat -- " + prefix + "/bin/mcpp-chat serve", "  " + prefix + "/bin/mcpp-chat setup hooks --write", "setup codex --write", "doctor"} {
		if !strings.Contains(text, want) {
			t.Errorf("make install does not say %q:\n%s", want, text)
		}
	}
}
