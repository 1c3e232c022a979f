//go:build unix

package main

import "syscall"

// openFileLimit raises the process's soft limit on open files to its
// hard limit, and returns the limit it then has (0 if unknown). Go's
// runtime raises it too when it starts; the hub asks again so that it
// knows how many connections it can hold.
func openFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return lim.Cur
}
