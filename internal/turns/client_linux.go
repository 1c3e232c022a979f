package turns

import (
	"bytes"
	"os"
	"strconv"
)

// passThrough are the processes between a client and what it runs: the
// shell a hook command runs under, env, and our own binaries (the hook
// binary hands some events to mcpp-chat hook).
var passThrough = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "fish": true, "env": true,
	"mcpp-chat": true, "mcpp-chat-hook": true}

// maxDepth bounds the walk up the process tree.
const maxDepth = 6

// ClientOf finds the client process that runs pid: its nearest ancestor
// that is not a shell, env or one of our binaries.
func ClientOf(pid int) (Client, bool) {
	p, ok := look(pid)
	for range maxDepth {
		if !ok || p.ppid <= 1 {
			return Client{}, false
		}
		parent, found := look(p.ppid)
		if !found {
			return Client{}, false
		}
		if !passThrough[parent.comm] {
			return Client{PID: p.ppid, Start: parent.start}, true
		}
		p = parent
	}
	return Client{}, false
}

// Lookup names the process pid as a client; ok is false when it cannot
// be read.
func Lookup(pid int) (Client, bool) {
	p, ok := look(pid)
	return Client{PID: pid, Start: p.start}, ok
}

type proc struct {
	comm  string
	ppid  int
	start uint64
}

// look reads /proc/<pid>/stat: "pid (comm) state ppid ... starttime" —
// starttime is the 22nd field; comm may hold spaces and parentheses, so
// the fields are counted from the last ')'.
func look(pid int) (proc, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return proc{}, false
	}
	f := bytes.Fields(data[end+1:])
	if len(f) < 20 {
		return proc{}, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return proc{}, false
	}
	start, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return proc{comm: string(data[open+1 : end]), ppid: ppid, start: start}, true
}
