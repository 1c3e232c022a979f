package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// staleHolders lists the processes that hold the database at path open
// although that file was deleted or replaced since: what they write goes
// to a file nobody else sees. Linux shows such a file in /proc as
// "<path> (deleted)". Processes of other users are not visible.
func staleHolders(path string) []holder {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return nil
	}
	gone := filepath.Join(dir, filepath.Base(path)) + " (deleted)"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []holder
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if holds(pid, gone) {
			comm, _ := os.ReadFile("/proc/" + p.Name() + "/comm")
			out = append(out, holder{pid: pid, name: strings.TrimSpace(string(comm))})
		}
	}
	return out
}

func holds(pid int, target string) bool {
	fds := "/proc/" + strconv.Itoa(pid) + "/fd"
	entries, err := os.ReadDir(fds)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if link, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && link == target {
			return true
		}
	}
	return false
}
