package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/tests/sandbox"
)

// recordFlag is how `make build` records the checkout in the binaries.
const recordFlag = "github.com/mcpp/mcpp-chat/internal/config.BuildCheckout"

// `make install PREFIX=...` copies binaries that use the checkout's
// database, like the checkout's bin/: a copy that found its own would be
// a second, silent chat that no session in the checkout ever reads.
func TestInstalledCopyUsesTheCheckoutsDatabase(t *testing.T) {
	skipShort(t)
	makefile, err := os.ReadFile(filepath.Join(repoRoot(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), recordFlag+"=$(CURDIR)") {
		t.Fatalf("the Makefile's LDFLAGS do not record the checkout (-X %s=$(CURDIR))", recordFlag)
	}

	dir := t.TempDir()
	checkout := filepath.Join(dir, "checkout")
	for _, f := range []string{"module.yaml", "tool.yaml", "mcpptool.py"} {
		writeTestFile(t, filepath.Join(checkout, f), "")
	}
	prefix := filepath.Join(dir, "prefix", "bin", "mcpp-chat")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X "+recordFlag+"="+checkout, "-o", prefix, "./cmd/mcpp-chat")
	build.Dir = repoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	home := filepath.Join(dir, "home")
	env := sandbox.Env("HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"))
	info := exec.CommandContext(ctx, prefix, "info", "--workspace", dir)
	info.Env = env
	out, err := info.Output()
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	if !json.Valid(out) || !strings.Contains(string(out), filepath.Join(checkout, "chat.db")) {
		t.Errorf("the installed copy does not use %s:\n%s", filepath.Join(checkout, "chat.db"), out)
	}

	setup := exec.CommandContext(ctx, prefix, "setup", "mcpp")
	setup.Env = env
	if out, _ := setup.Output(); !strings.Contains(string(out), "path: "+checkout) {
		t.Errorf("setup mcpp from the installed copy does not name the checkout:\n%s", out)
	}
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
