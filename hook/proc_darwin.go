package hook

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// lookProcess asks the kernel for the process's record (kern.proc.pid).
func lookProcess(pid int) process {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return process{}
	}
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return process{live: true}
	}
	if kp.Proc.P_stat == 5 { // SZOMB: exited, not yet reaped
		return process{}
	}
	return process{live: true, ppid: int(kp.Eproc.Ppid)}
}
