package codexwake

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
	"slices"
	"strconv"
	"time"

	"github.com/mcpp/mcpp-chat/internal/statefile"
)

// Record is what the doorbell knows of one party's Codex threads under
// one client: the threads the hook recorded and the servers of ours that
// run there (one per loaded thread). Hooks and servers share it under a
// lock.
type Record struct {
	Client  Client    `json:"client"`
	Party   string    `json:"party"`
	Threads []Thread  `json:"threads"`
	Serves  []Process `json:"serves"`
	// Last is what the last look decided, and when: doctor shows it, and
	// a test waits for it.
	Last   string    `json:"last,omitempty"`
	LastAt time.Time `json:"last_at,omitzero"`
}

// Thread is one Codex thread of the party, as its SessionStart hook saw
// it, and its doorbell.
type Thread struct {
	ID        string `json:"id"`
	CodexHome string `json:"codex_home"`
	Version   string `json:"version"`
	// Exe is the Codex binary that runs the thread: `codex queue` goes
	// through it.
	Exe    string `json:"exe"`
	Cwd    string `json:"cwd,omitempty"`
	Source string `json:"source,omitempty"`
	// Started is its latest SessionStart: when a terminal last began to
	// show it.
	Started time.Time `json:"started"`
	Ended   bool      `json:"ended,omitempty"`
	Bell    Bell      `json:"bell"`
}

// Bell is one thread's doorbell.
type Bell struct {
	// Rung are the keys (what waits) the last ring, or the last refusal
	// given up on, was for.
	Rung []string `json:"rung,omitempty"`
	// Outstanding: a ring went out and the party has not read since.
	Outstanding bool      `json:"outstanding,omitempty"`
	At          time.Time `json:"at,omitzero"`
	Rings       int       `json:"rings,omitempty"`
	// Attempts counts the refusals in a row; Retry is when to try again.
	Attempts int       `json:"attempts,omitempty"`
	Retry    time.Time `json:"retry,omitzero"`
	Refused  string    `json:"refused,omitempty"`
	// Said names what was reported about this thread already ("refused",
	// "older", "version"), so that each is reported once.
	Said []string `json:"said,omitempty"`
}

// maxThreads bounds a record: the newest threads are kept.
const maxThreads = 16

// maxRecord bounds what is read of a record file.
const maxRecord = 1 << 20

// recordPrefix starts a record file's name in the hook's state folder.
const recordPrefix = "codex-"

// RecordPath is the record of party (a root) under client, in dir.
func RecordPath(dir string, client Process, party string) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(client.PID) + " " + strconv.FormatUint(client.Start, 10) + "\x00" + party))
	return filepath.Join(dir, recordPrefix+hex.EncodeToString(sum[:12])+".json")
}

// lockWait bounds how long a hook or server waits for the record's lock.
const lockWait = 200 * time.Millisecond

// Update runs fn on the record of party under client, in dir, with the
// file locked, and saves what fn left. A record of another client or
// party (a hash collision, a planted file) is started afresh.
func Update(ctx context.Context, dir string, client Client, party string, fn func(*Record)) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the hook state folder: %w", err)
	}
	f, err := openRecord(RecordPath(dir, client.Process, party), os.O_RDWR|os.O_CREATE)
	if err != nil {
		return err
	}
	defer f.Close()
	lockCtx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	if err := statefile.Lock(lockCtx, f); err != nil {
		return fmt.Errorf("lock the Codex record: %w", err)
	}
	defer statefile.Unlock(f)
	before, _ := io.ReadAll(io.LimitReader(f, maxRecord))
	var r Record
	if json.Unmarshal(before, &r) != nil || r.Client.Process != client.Process || r.Party != party {
		r = Record{}
	}
	r.Client, r.Party = client, party
	fn(&r)
	if len(r.Threads) > maxThreads {
		slices.SortStableFunc(r.Threads, func(a, b Thread) int { return b.Started.Compare(a.Started) })
		r.Threads = r.Threads[:maxThreads]
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if bytes.Equal(data, before) {
		return nil
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("save the Codex record: %w", err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("save the Codex record: %w", err)
	}
	return nil
}

// Read reads a record file without locking it (doctor, tests).
func Read(path string) (Record, error) {
	f, err := openRecord(path, os.O_RDONLY)
	if err != nil {
		return Record{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecord))
	if err != nil {
		return Record{}, fmt.Errorf("read the Codex record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("the Codex record %s is not JSON: %w", path, err)
	}
	return r, nil
}

// Records lists the record files in dir.
func Records(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, recordPrefix+"*.json"))
	return paths
}

// openRecord opens a record, a regular file (statefile.Open).
func openRecord(path string, flag int) (*os.File, error) {
	return statefile.Open(path, flag, "the Codex record")
}

// thread is the record's thread id, or nil.
func (r *Record) thread(id string) *Thread {
	for i := range r.Threads {
		if r.Threads[i].ID == id {
			return &r.Threads[i]
		}
	}
	return nil
}

// StartThread records that a terminal began to show thread t (Codex's
// SessionStart): a new thread, or one resumed, which is no longer ended.
// Its doorbell's state is kept.
func (r *Record) StartThread(t Thread) {
	if have := r.thread(t.ID); have != nil {
		t.Bell = have.Bell
		*have = t
		return
	}
	r.Threads = append(r.Threads, t)
}

// EndThread records that Codex let thread id go (SessionEnd): it is not
// rung until a terminal shows it again.
func (r *Record) EndThread(id string) {
	if t := r.thread(id); t != nil {
		t.Ended = true
		t.Bell.Outstanding = false
	}
}

// VersionOf is the version recorded for exe, "" for none.
func (r *Record) VersionOf(exe string) string {
	for _, t := range r.Threads {
		if t.Exe == exe && t.Version != "" {
			return t.Version
		}
	}
	return ""
}
