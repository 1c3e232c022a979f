// Package turns keeps, per client process and party, the chain of the
// turn a session is in (store.Chain), so that the posts of the session's
// server carry it. The session's hooks write it — a typed prompt starts a
// new chain, a wake or a Stop block continues the chain of the posts that
// began the turn — and the server, which runs under the same client
// process (Claude Code, Codex) as the hooks, reads it at each post. The
// hooks see how a turn began; the server does not, and it is no child of
// the hooks: what they share is the client that started both.
package turns

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Client is a client process: its pid and, against a pid used again after
// it ended, when it started (0 where that cannot be read).
type Client struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// How a turn began.
const (
	Prompt = "prompt" // a person typed a prompt
	Wake   = "wake"   // the idle wake woke the session
	Stop   = "stop"   // a Stop block kept the turn going
	Ring   = "ring"   // the Codex doorbell queued the turn's prompt
)

// Turn is the turn a session of a party is in.
type Turn struct {
	Chain string    `json:"chain"`
	Hop   int       `json:"hop"`
	Cause string    `json:"cause"`
	At    time.Time `json:"at"`
	// Session is the hook payload's session id, for a person reading
	// the file.
	Session string `json:"session,omitempty"`
}

// NewChain is a fresh chain id.
func NewChain() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Path is where the turn of party root's session under client c lives,
// in the hook's state folder dir.
func Path(dir string, c Client, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dir, fmt.Sprintf("turn-%d-%d-%s.json", c.PID, c.Start, hex.EncodeToString(sum[:8])))
}

// Write replaces the turn record atomically: a reader sees the old one
// or the new one.
func Write(dir string, c Client, root string, t Turn) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".turn-*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write the turn record: %v %v", werr, cerr)
	}
	if err := os.Rename(tmp.Name(), Path(dir, c, root)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// maxRecord bounds what a reader takes of a record (about 150 bytes).
const maxRecord = 4 << 10

// Read is the turn of party root's session under client c; ok is false
// when there is none or it cannot be read.
func Read(dir string, c Client, root string) (t Turn, ok bool) {
	f, err := os.Open(Path(dir, c, root))
	if err != nil {
		return Turn{}, false
	}
	defer f.Close()
	data := make([]byte, maxRecord)
	n, _ := f.Read(data)
	if json.Unmarshal(data[:n], &t) != nil || t.Chain == "" {
		return Turn{}, false
	}
	return t, true
}
