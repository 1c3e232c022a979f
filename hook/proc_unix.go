//go:build unix && !linux && !darwin

package hook

import (
	"errors"
	"syscall"
)

// lookProcess can only tell whether the process exists here; the parent
// check in gone still works, the shell's re-parenting is not seen.
func lookProcess(pid int) process {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return process{}
	}
	return process{live: true}
}
