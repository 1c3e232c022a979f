// Package golden compares what a test produces with a file in the test's
// testdata/ folder: output a reviewer reads as a whole (the tools' display
// text, the hook's answers) rather than checks piece by piece. Run the
// test with -update to rewrite the files, then review the diff.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with what the tests produce")

// Check compares got with testdata/name, or writes got there with -update.
func Check(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v — run go test -run '^%s$' -update in this package to write it", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test -run '^%s$' -update in this package and review the diff):\n%s", path, t.Name(), got)
	}
}
