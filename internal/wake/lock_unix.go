//go:build unix

package wake

import (
	"os"
	"syscall"
)

// lockFolder takes an exclusive flock on the folder dir and returns its
// release. A folder, not a file: the tick file is replaced on every write,
// so a lock on it would be on a file that is no longer there, and a lock
// file of its own would be one more file beside the database. If the lock
// cannot be taken, the tick is written without it (at worst an older line
// lands last, as before).
func lockFolder(dir string) (unlock func()) {
	f, err := os.Open(dir)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() } // closing releases the lock
}
