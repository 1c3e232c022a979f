// Package statefile opens and locks the small files the hooks and the
// Codex doorbell keep in the hook's state folder, outside the chat: each
// must be a regular file — a symlink planted there is refused rather than
// followed (a hook would write its JSON over whatever it points at), and
// so is a FIFO or a device, without waiting on it — and each is changed
// under an exclusive advisory lock.
package statefile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrBusy is a lock another process held for as long as the caller would
// wait.
var ErrBusy = errors.New("another process holds it")

// Open opens the state file at path, what naming it in errors ("the hook
// state").
func Open(path string, flag int, what string) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s %s is not a regular file — remove it", what, path)
	}
	return f, nil
}
