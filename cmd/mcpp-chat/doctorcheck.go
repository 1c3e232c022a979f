package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
)

// versionTimeout bounds each `--version` doctor runs: a client that hangs
// must not hang doctor.
const versionTimeout = 10 * time.Second

// checkVersions prints this binary's version, the hook binary's and those
// of the clients on PATH, and warns when the hook is from another build.
func checkVersions(ctx context.Context, w io.Writer, hook string) bool {
	fmt.Fprintf(w, "version:     mcpp-chat %s\n", version)
	ok := true
	if fileExists(hook) {
		got := versionOf(ctx, hook, "--version")
		switch {
		case got == "":
			fmt.Fprintf(w, "warning:     %s does not say its version — rebuild it: make build in the checkout\n", hook)
			ok = false
		case got != "mcpp-chat-hook "+version:
			fmt.Fprintf(w, "warning:     the hook binary is %q, this is mcpp-chat %s — rebuild both: make build in the checkout (and make install again if you installed copies)\n", got, version)
			ok = false
		default:
			fmt.Fprintf(w, "hook binary: %s (same build)\n", hook)
		}
	} else {
		fmt.Fprintf(w, "hook binary: %s is missing — run make build in the checkout (the hooks need it)\n", hook)
	}
	for _, client := range []string{"claude", "codex"} {
		if path, err := exec.LookPath(client); err == nil {
			if v := versionOf(ctx, path, "--version"); v != "" {
				fmt.Fprintf(w, "client:      %s %s\n", client, v)
			}
		}
	}
	return ok
}

// versionOf runs prog with args and returns its first line, "" on failure.
func versionOf(ctx context.Context, prog string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Stdin = nil
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(bytes.TrimSpace(out)), "\n")
	return strings.TrimSpace(line)
}

// checkPermissions warns about what other users of the host could read or
// change: folders they may write in (the database's, the backups', the
// binaries'), binaries they could replace (the hook runs in every session),
// and copies of the chat they could read.
func checkPermissions(w io.Writer, paths config.Paths, exe, hook string) bool {
	ok := true
	warn := func(format string, args ...any) {
		fmt.Fprintf(w, "warning:     "+format+"\n", args...)
		ok = false
	}
	seen := map[string]bool{}
	for _, dir := range []struct{ path, what string }{
		{filepath.Dir(paths.DB), "the database's folder"},
		{paths.Backups, "the backups folder"},
		{paths.ModuleDir, "the module folder (config.yaml)"},
		{filepath.Dir(exe), "the binaries' folder"},
	} {
		info, err := os.Stat(dir.path)
		if err != nil || seen[dir.path] {
			continue
		}
		seen[dir.path] = true
		if info.Mode().Perm()&0o002 != 0 {
			warn("other users can create and replace files in %s %s (mode %04o) — run: chmod o-w %s, or move it (MCPP_CHAT_DB) to a folder of your own", dir.what, dir.path, info.Mode().Perm(), shellQuote(dir.path))
		}
	}
	for _, bin := range []string{exe, hook} {
		if info, err := os.Stat(bin); err == nil && info.Mode().Perm()&0o022 != 0 {
			warn("other users can replace %s (mode %04o), which runs in every session — run: chmod go-w %s", bin, info.Mode().Perm(), shellQuote(bin))
		}
	}
	if info, err := os.Stat(paths.DB); err == nil && info.Mode().Perm()&0o022 != 0 {
		warn("other users can write the database (mode %04o) — run: chmod 600 %s", info.Mode().Perm(), shellQuote(paths.DB))
	}
	// A team hub on this database keeps its tokens beside it: whoever
	// can write them can add a token of their own.
	for _, tokens := range []string{paths.DB + ".hub", paths.DB + ".hub-wal"} {
		if info, err := os.Stat(tokens); err == nil && info.Mode().Perm()&0o077 != 0 {
			warn("other users can reach the team hub's tokens %s (mode %04o), and one who can write them can give themselves a token — run: chmod 600 %s", tokens, info.Mode().Perm(), shellQuote(tokens))
		}
	}
	backups, _ := os.ReadDir(paths.Backups)
	for _, b := range backups {
		info, err := b.Info()
		if err != nil || info.Mode()&fs.ModeType != 0 {
			continue
		}
		if info.Mode().Perm()&0o066 != 0 {
			path := filepath.Join(paths.Backups, b.Name())
			warn("other users can read the backup %s (mode %04o): it is the whole chat — run: chmod 600 %s", path, info.Mode().Perm(), shellQuote(path))
		}
	}
	return ok
}

// checkCheckout warns when this binary was built in a checkout that is gone
// and nothing else names the chat: it then uses another database than that
// checkout's bin/ did.
func checkCheckout(w io.Writer, paths config.Paths) bool {
	if paths.Moved == "" {
		return true
	}
	fmt.Fprintf(w, "warning:     %s\n", paths.MovedChat())
	return false
}

// invocation is how the person runs this binary from the shell they are
// in, for advice that names a command: mcpp-chat when that name on PATH is
// this binary, else its path — bin/mcpp-chat in the checkout, where a
// fresh clone has no mcpp-chat on PATH.
func invocation(getenv func(string) string) string {
	exe, _ := thisInstall()
	if exe == "" {
		return "mcpp-chat"
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" {
			continue
		}
		found := filepath.Join(dir, "mcpp-chat")
		if real, err := filepath.EvalSymlinks(found); err == nil {
			if real == exe {
				return "mcpp-chat"
			}
			break // the name runs another mcpp-chat
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, exe); err == nil && !strings.HasPrefix(rel, "..") {
			if !strings.Contains(rel, string(filepath.Separator)) {
				rel = "." + string(filepath.Separator) + rel
			}
			return shellQuote(rel)
		}
	}
	return shellQuote(exe)
}

// trackedFile is a file of a member machine or a team hub that must not
// go into a commit, and what it holds.
type trackedFile struct{ path, holds string }

// privateFiles are the files connect and a SQLite team hub keep beside
// the chat, in the checkout when the checkout is the module folder.
func privateFiles(paths config.Paths) []trackedFile {
	return []trackedFile{
		{paths.Hub, "this machine's bearer token for the team hub"},
		{filepath.Join(filepath.Dir(paths.Hub), "hub-cache"), "the hook's cache of message excerpts"},
		{paths.DB + ".hub", "a team hub's tokens"},
		{paths.DB + ".hub-wal", "a team hub's tokens"},
		{paths.DB + ".hub-shm", "a team hub's tokens"},
	}
}

// checkTracked warns of a private file git tracks: a commit would carry a
// token or messages wherever the repository goes. Without git, or outside
// a repository, there is nothing to say.
func checkTracked(ctx context.Context, w io.Writer, paths config.Paths) bool {
	git, err := exec.LookPath("git")
	if err != nil {
		return true
	}
	ok := true
	for _, f := range privateFiles(paths) {
		ctx, cancel := context.WithTimeout(ctx, versionTimeout)
		dir, name := filepath.Dir(f.path), filepath.Base(f.path)
		out, err := exec.CommandContext(ctx, git, "-C", dir, "ls-files", "-z", "--", name).Output()
		cancel()
		if err != nil || len(out) == 0 {
			continue
		}
		fmt.Fprintf(w, "warning:     git tracks %s, %s: a commit carries it wherever the repository goes — run: git -C %s rm -r --cached %s (the file stays; the checkout's .gitignore ignores it)\n",
			f.path, f.holds, shellQuote(dir), shellQuote(name))
		ok = false
	}
	return ok
}
