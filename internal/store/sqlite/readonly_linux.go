package sqlite

import (
	"io/fs"
	"syscall"
	"time"
)

// statDetails adds what a bare FileInfo lacks: the change time (moves on
// every write, even one that restores the modification time) and the inode
// (a file replaced by rename gets a new one).
func statDetails(info fs.FileInfo) (ctime time.Time, ino uint64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, 0
	}
	return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)), uint64(st.Ino)
}
