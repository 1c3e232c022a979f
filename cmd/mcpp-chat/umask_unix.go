//go:build unix

package main

import "syscall"

// ownerOnlyFiles narrows the process's umask; main calls it first, so that
// tests running commands in-process keep theirs. SQLite's Go VFS creates the
// -wal and -shm files beside the database with mode 0666 minus the umask,
// and recreates them whenever the last connection on the host closes, so no
// one-time chmod can keep them owner-only; the umask does, for them and for
// every other file the process creates.
func ownerOnlyFiles() { syscall.Umask(0o077) }
