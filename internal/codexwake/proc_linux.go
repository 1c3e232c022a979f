package codexwake

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Supported reports that this system lets the doorbell see which Codex
// processes run, and where (/proc).
const Supported = true

// stat reads /proc/<pid>/stat: "pid (comm) state ppid … starttime …".
// The command name may hold spaces and parentheses, so the fields are
// counted from the last ')'; starttime is the 22nd field.
func stat(pid int) (ppid int, p Process, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(data, ')')
	if err != nil || i < 0 {
		return 0, Process{}, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 20 || bytes.Equal(f[0], []byte("Z")) || bytes.Equal(f[0], []byte("X")) {
		return 0, Process{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, Process{}, false
	}
	return ppid, Process{PID: pid, Start: start}, true
}

// Self is this process.
func Self() (Process, bool) {
	_, p, ok := stat(os.Getpid())
	return p, ok
}

// Alive reports that p still runs: the same id with the same start.
func Alive(p Process) bool {
	_, now, ok := stat(p.PID)
	return ok && now.Start == p.Start
}

// arguments reads a process's command line, program first.
func arguments(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

// FindClient walks up from pid's parent to the nearest Codex process: the
// client whose threads a hook or server started by it serves. Codex runs
// a hook under a shell, and a person may start our server through a
// script, so the client need not be the direct parent. Claude Code on the
// way up ends the walk: what runs under it is its own.
func FindClient(pid int) (Client, bool) {
	ppid, _, ok := stat(pid)
	for range maxAncestors {
		if !ok || ppid <= 1 {
			return Client{}, false
		}
		next, p, alive := stat(ppid)
		if !alive {
			return Client{}, false
		}
		exe, err := os.Readlink("/proc/" + strconv.Itoa(ppid) + "/exe")
		switch {
		case err != nil:
		case isCodexExe(exe):
			return client(p, exe), true
		case isClaudeExe(exe):
			return Client{}, false
		}
		ppid = next
	}
	return Client{}, false
}

// client reads what the doorbell needs of a Codex process.
func client(p Process, exe string) Client {
	args := arguments(p.PID)
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/environ")
	env := parseEnviron(environ)
	kind := KindOther
	if len(args) > 0 {
		kind = kindOf(args[1:])
	}
	return Client{Process: p, Exe: strings.TrimSuffix(exe, " (deleted)"), Kind: kind, CodexHome: codexHomeOf(env), Env: env}
}

// Interfaces counts the interactive Codex processes that could show a
// thread of party (a party root) from c: c itself when it is one, else,
// for the shared background server, every interactive `codex` of the same
// Codex folder whose working folder partyOf maps to party.
func Interfaces(c Client, party string, partyOf func(dir string) string) int {
	switch c.Kind {
	case KindInterface:
		if Alive(c.Process) {
			return 1
		}
		return 0
	case KindServer:
	default:
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == c.PID {
			continue
		}
		exe, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err != nil || !isCodexExe(exe) {
			continue
		}
		args := arguments(pid)
		if len(args) == 0 || kindOf(args[1:]) != KindInterface {
			continue
		}
		environ, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if codexHomeOf(parseEnviron(environ)) != c.CodexHome {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil {
			continue
		}
		if cd := parseCommandLine(args[1:]).cd; cd != "" {
			if !filepath.IsAbs(cd) {
				cd = filepath.Join(cwd, cd)
			}
			cwd = cd
		}
		if partyOf(cwd) == party {
			n++
		}
	}
	return n
}
