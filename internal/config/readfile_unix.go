//go:build unix

package config

import "syscall"

// openNonBlocking keeps opening a FIFO from waiting for a writer.
const openNonBlocking = syscall.O_NONBLOCK
