//go:build unix

package statefile

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// noFollow makes an open fail on a symlink instead of following it.
const noFollow = syscall.O_NOFOLLOW

// Lock takes an exclusive advisory lock on f, trying again until ctx ends
// (then ErrBusy).
func Lock(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		select {
		case <-ctx.Done():
			return ErrBusy
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Unlock lets f's lock go.
func Unlock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
