//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

// noFollow makes an open fail on a symlink instead of following it.
const noFollow = syscall.O_NOFOLLOW

// errLocked reports that another process holds the lock.
var errLocked = errors.New("locked")

func tryLock(f *os.File) error {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

func lock(f *os.File) error { return flock(f, syscall.LOCK_EX) }

func unlock(f *os.File) { flock(f, syscall.LOCK_UN) }

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
