//go:build unix

package sqlite

import "golang.org/x/sys/unix"

// diskFull reports whether the file system holding dir has no room left
// for an unprivileged writer. SQLite reports a full disk as a plain I/O
// error, so this is how a failed write learns why.
func diskFull(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	return uint64(st.Bavail)*uint64(st.Bsize) < minFreeBytes
}
