package hook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"

	"github.com/mcpp/mcpp-chat/internal/statefile"
)

// State is what the hook already told one session about one party, so that
// an unchanged state is not injected again on every prompt. It lives in a
// tiny file under the user's state folder, never in the chat database.
type State struct {
	SessionID string `json:"session_id"`
	Workspace string `json:"workspace"`
	// Told holds the keys of the context lines already injected.
	Told []string `json:"told"`
	// Blocked holds the keys of what a Stop block or a wake already
	// reported.
	Blocked []string `json:"blocked"`
	// PromptQuiet and StopQuiet are the database's fingerprint
	// (store.Fingerprint) when UserPromptSubmit, or Stop, last had nothing
	// left to say: while it is unchanged they stay silent without opening
	// the database, which is most of a hook run.
	PromptQuiet string `json:"prompt_quiet,omitempty"`
	StopQuiet   string `json:"stop_quiet,omitempty"`
	// WakeQuiet is the database's commit mark (store.CommitMark) at which
	// a wake told the session everything UserPromptSubmit would: Claude
	// Code runs UserPromptSubmit for the wake and sends the model nothing
	// until it is done, so that run stays silent without opening the
	// database while no commit followed. A fingerprint cannot serve: the
	// waiter reports moments after the commit, before the files' times can
	// be trusted. Any later answer that reads the database clears it.
	WakeQuiet string `json:"wake_quiet,omitempty"`
	// ClaimsUntil is when the first claim the party saw at the last
	// prompt's (or SessionStart's) read runs out: then the prompt's quiet
	// state no longer holds, since a claim ends by its time without a
	// write (claims.go). Stop tells no claims, and so keeps it as it is.
	ClaimsUntil string `json:"claims_until,omitempty"`
	// QuietUntil is when an item waiting on the session's ack becomes
	// overdue (the soonest such due time when the quiet marks above were
	// set): from then on the database says something new although nothing
	// was written, and they no longer hold.
	QuietUntil string `json:"quiet_until,omitempty"`
}

// quietExpired reports a record whose quiet marks a due time has overtaken.
func (st State) quietExpired() bool {
	if st.QuietUntil == "" {
		return false
	}
	at, err := time.Parse(time.RFC3339Nano, st.QuietUntil)
	return err != nil || !now().Before(at)
}

// quietAt is the fingerprint at which event has nothing new to say, or "".
func (st State) quietAt(event string) string {
	if st.quietExpired() {
		return ""
	}
	switch event {
	case UserPromptSubmit:
		if claimsDue(st) {
			return "" // a claim ran out: news no write announced (claims.go)
		}
		return st.PromptQuiet
	case Stop:
		return st.StopQuiet
	}
	return ""
}

// seen is what Respond needs of the record.
func (st State) seen() Seen {
	return Seen{Told: st.Told, Blocked: st.Blocked, Recorded: true}
}

// StateDir is where the hook keeps its per-session files:
// $XDG_STATE_HOME/mcpp-chat/hook, by default ~/.local/state/mcpp-chat/hook.
func StateDir(env config.Env) string {
	base := env("XDG_STATE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home := env("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		if home == "" {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "mcpp-chat", "hook")
}

// sessionKey names a session's files: one per session and party, hashed so
// that any session id makes a safe file name.
func sessionKey(session, workspace string) string {
	sum := sha256.Sum256([]byte(session + "\x00" + workspace))
	return hex.EncodeToString(sum[:12])
}

func statePath(dir, session, workspace string) string {
	return filepath.Join(dir, "session-"+sessionKey(session, workspace)+".json")
}

// stateLockWait bounds how long a hook waits for another hook process of
// the same session to finish with the state file.
const stateLockWait = 200 * time.Millisecond

// UpdateState runs fn on the session's state with the file locked, then
// saves what fn left. Without a session id or a state folder, fn gets an
// empty state that is not kept.
func UpdateState(ctx context.Context, dir, session, workspace string, fn func(*State)) error {
	if session == "" || dir == "" {
		fn(&State{})
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the hook state folder: %w", err)
	}
	f, err := openState(statePath(dir, session, workspace), os.O_RDWR|os.O_CREATE)
	if err != nil {
		return err
	}
	defer f.Close()
	lockCtx, cancel := context.WithTimeout(ctx, stateLockWait)
	defer cancel()
	if err := statefile.Lock(lockCtx, f); err != nil {
		return fmt.Errorf("lock the hook state: %w", err)
	}
	defer statefile.Unlock(f)
	before, _ := io.ReadAll(io.LimitReader(f, maxState))
	st, _ := parseState(before, session, workspace) // none, torn or foreign: start afresh
	st.SessionID, st.Workspace = session, workspace
	fn(&st)
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if bytes.Equal(data, before) {
		return nil // unchanged: most prompts; spare the file system a rewrite
	}
	// Past the deadline the answer will not be printed: a record of
	// having told it would be false.
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("save the hook state: %w", err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("save the hook state: %w", err)
	}
	return nil
}

// PeekState reads the session's record without locking or changing it;
// ok is false when there is none (or it is torn, or another's). Enough to
// see that nothing changed; a change goes through UpdateState.
func PeekState(dir, session, workspace string) (st State, ok bool) {
	if dir == "" || session == "" {
		return State{}, false
	}
	f, err := openState(statePath(dir, session, workspace), os.O_RDONLY)
	if err != nil {
		return State{}, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxState))
	if err != nil {
		return State{}, false
	}
	return parseState(data, session, workspace)
}

// maxState bounds what the hook reads of a session's record (a few hundred
// bytes in practice).
const maxState = 1 << 20

// openState opens a session's record (or a party's wake log), a regular
// file (statefile.Open).
func openState(path string, flag int) (*os.File, error) {
	return statefile.Open(path, flag, "the hook state")
}

// parseState decodes a record; ok is false for an empty, torn or foreign one.
func parseState(data []byte, session, workspace string) (st State, ok bool) {
	if json.Unmarshal(data, &st) != nil || st.SessionID != session || st.Workspace != workspace {
		return State{}, false
	}
	return st, true
}

// staleAfter is when a session's files count as abandoned.
const staleAfter = 30 * 24 * time.Hour

// SweepState removes session files nobody touched for a month, so the
// folder does not grow with every session ever started.
func SweepState(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "session-") && !strings.HasPrefix(e.Name(), "wait-") && !strings.HasPrefix(e.Name(), "codex-") && !attentionFile(e.Name()) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAfter {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// set is a small string set for state keys.
type set map[string]bool

func newSet(keys []string) set {
	s := make(set, len(keys))
	for _, k := range keys {
		s[k] = true
	}
	return s
}

// missing lists the keys of s that other lacks, in s's order of keys.
func missing(keys []string, other set) []string {
	var out []string
	for _, k := range keys {
		if !other[k] {
			out = append(out, k)
		}
	}
	return out
}
