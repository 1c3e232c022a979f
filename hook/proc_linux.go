package hook

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
)

// lookProcess reads /proc/<pid>/stat: "pid (comm) state ppid ...". The
// command name may hold spaces and parentheses, so the fields are counted
// from the last ')'.
func lookProcess(pid int) process {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return process{}
	}
	i := bytes.LastIndexByte(data, ')')
	if err != nil || i < 0 {
		return process{live: true} // cannot tell: assume it lives
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 2 {
		return process{live: true}
	}
	if state := f[0]; bytes.Equal(state, []byte("Z")) || bytes.Equal(state, []byte("X")) {
		return process{}
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	return process{live: true, ppid: ppid}
}
