//go:build unix

package sqlite

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe reports a file of the user this process runs as.
func ownedByMe(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}
