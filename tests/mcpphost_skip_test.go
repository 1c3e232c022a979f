package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `make test` runs the mcpp host test with python3; on a machine without
// PyYAML it must skip, saying how to get it, not fail.
func TestMcppHostTestSkipsWithoutPyYAML(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	// A yaml module that fails to import, first on the path, is a Python
	// without PyYAML as far as the test file can tell.
	shadow := t.TempDir()
	if err := os.WriteFile(filepath.Join(shadow, "yaml.py"), []byte("raise ImportError('No module named yaml')\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "unittest", "discover", "-v", "-s", "tests", "-p", "test_mcpp_host.py")
	cmd.Dir = repoRoot()
	cmd.Env = newWorld(t).env
	cmd.Env = append(cmd.Env, "PYTHONPATH="+shadow, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the mcpp host test failed instead of skipping without PyYAML: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "skipped") || !strings.Contains(string(out), "install it") {
		t.Errorf("the skip does not say why and what to do:\n%s", out)
	}
}
