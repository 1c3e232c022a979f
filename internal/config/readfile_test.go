package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs fn and fails the test if it does not return in time: a
// plain open of a FIFO waits for a writer forever, the hang these tests
// guard against. release unblocks a stuck fn so that the test's goroutine
// ends.
func within(t *testing.T, what string, release func(), fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		release()
		<-done
		t.Fatalf("%s did not return: it waits on the file", what)
		return nil
	}
}

// mkfifo makes a named pipe; release opens its other end, which lets a
// blocked opener go on.
func mkfifo(t *testing.T, path string) (release func()) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	return func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
}

// A config or marker that is not a small regular file is refused with a
// sentence, without reading it: a FIFO, a symlink to /dev/zero, a huge file.
func TestConfigAndMarkerAreSmallRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.fifo")
	release := mkfifo(t, fifo)
	err := within(t, "Load(FIFO)", release, func() error { _, err := Load(fifo); return err })
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "named pipe") || !strings.Contains(err.Error(), "MCPP_CHAT_CONFIG") {
		t.Fatalf("Load(FIFO) = %v", err)
	}
	if _, err := Load("/dev/zero"); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a device") {
		t.Fatalf("Load(/dev/zero) = %v", err)
	}
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, []byte("# "+strings.Repeat("x", MaxConfigBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(huge); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("Load(2 MiB) = %v", err)
	}

	// A repository's marker: the server of every session started in it
	// reads it.
	// The FIFO first: a regression blocks there (and the test stops),
	// where /dev/zero would take all memory.
	for _, c := range []struct {
		name  string
		plant func(path string) func()
	}{
		{"fifo", func(path string) func() { return mkfifo(t, path) }},
		{"dev-zero", func(path string) func() { must(t, os.Symlink("/dev/zero", path)); return func() {} }},
		{"too-large", func(path string) func() {
			must(t, os.WriteFile(path, make([]byte, MaxMarkerBytes+1), 0o600))
			return func() {}
		}},
	} {
		name, plant := c.name, c.plant
		repo := mkdir(t, dir, name)
		mkdir(t, repo, ".git")
		release := plant(filepath.Join(repo, MarkerFile))
		err := within(t, "Identify("+name+")", release, func() error { _, err := Identify(repo, true); return err })
		if err == nil || !strings.Contains(err.Error(), MarkerFile) || !strings.Contains(err.Error(), "remove it") {
			t.Errorf("marker %s: %v", name, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
