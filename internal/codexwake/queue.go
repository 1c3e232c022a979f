package codexwake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// queueWait bounds one `codex queue`, which answers in a fraction of a
// second; a busy machine or a background server still starting may take
// several.
const queueWait = 15 * time.Second

// queued is what `codex queue` prints when the message is queued.
var queued = regexp.MustCompile(`(?m)^Queued message \S+ for thread \S+\.\s*$`)

// Queue rings thread t: `codex queue --thread <id> --message <text>`, with
// the thread's Codex binary and CODEX_HOME and otherwise env (NAME=value
// entries). It passes no -c, --enable or --disable (with one of them
// `codex queue` refuses to run while Codex's shared background server
// runs) and no --resume (which would run the turn in the background when
// no terminal shows the thread). The queued text reaches the model as a
// prompt of its own; the terminal showing the thread runs it as soon as
// that thread is idle.
func Queue(ctx context.Context, t Thread, text string, env []string) error {
	exe := t.Exe
	if !executable(exe) {
		path, err := lookPath("codex", env)
		if err != nil {
			return fmt.Errorf("the thread's Codex (%s) is gone and there is no codex on PATH", t.Exe)
		}
		exe = path
	}
	ctx, cancel := context.WithTimeout(ctx, queueWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "queue", "--thread", t.ID, "--message", text)
	cmd.Env = withCodexHome(env, t.CodexHome)
	cmd.Dir = os.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err == nil && queued.Match(out.Bytes()) {
		return nil
	}
	why := lastLine(out.String())
	switch {
	case ctx.Err() != nil:
		why = fmt.Sprintf("no answer in %s", queueWait)
	case why == "" && err != nil:
		why = err.Error()
	case why == "":
		why = "it did not say the message was queued"
	}
	return fmt.Errorf("codex queue: %s", why)
}

// withCodexHome is env with CODEX_HOME set to dir.
func withCodexHome(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CODEX_HOME=") {
			out = append(out, kv)
		}
	}
	return append(out, "CODEX_HOME="+dir)
}

// lastLine is the last line of out that says something, cut short.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return line
}

func executable(path string) bool {
	info, err := os.Stat(path)
	return path != "" && err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}

// lookPath finds name on the PATH env names.
func lookPath(name string, env []string) (string, error) {
	for _, kv := range env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range strings.Split(path, string(os.PathListSeparator)) {
				if p := dir + string(os.PathSeparator) + name; dir != "" && executable(p) {
					return p, nil
				}
			}
		}
	}
	return "", errors.New("not found")
}
