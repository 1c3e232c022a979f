// Package told is the hook's journal of what it told a session: the
// messages its output put there, once that output reached the client
// (printed in full, within the hook's time, before it exits). The hook
// never writes the chat, so it writes this journal instead, a file per
// telling in a folder of the party's on this machine; the party's serve
// folds the files into the store (store.DB.RecordTold, or the hub's
// /v1/told on a member machine) and removes them.
package told

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// Bounds on what the journal holds while no serve folds it in: a hook
// writes nothing more once MaxFiles wait, a file older than Keep is
// dropped unread, and a fold reads at most MaxFiles files of at most
// maxFile bytes.
const (
	MaxFiles = 1000
	Keep     = 7 * 24 * time.Hour
	maxFile  = 64 << 10
)

// Entry is one journal file: what one hook run or wake told.
type Entry struct {
	Tellings []store.Telling `json:"tellings"`
}

// Dir is the journal of the party rooted at root on this machine: in
// <database>.told/ beside the database file (a team store's too: the
// install's own database path), or on a member machine in hub-told/
// beside its hub settings. The hook and serve find it from the same
// paths, whatever their environments hold besides.
func Dir(paths config.Paths, root string) string {
	base := paths.DB + ".told"
	if config.IsHub(paths.Store) {
		base = filepath.Join(filepath.Dir(paths.Hub), "hub-told")
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, hex.EncodeToString(sum[:12]))
}

// Append writes e as a new file of the journal dir, whole or not at all
// (a reader never sees half of it). A journal that holds MaxFiles already
// is left as it is: telling is then not recorded until a serve folds it.
func Append(dir string, e Entry, now time.Time) error {
	if len(e.Tellings) == 0 {
		return nil
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if len(data) > maxFile {
		return fmt.Errorf("a journal entry of %d bytes is over %d", len(data), maxFile)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the told journal: %w", err)
	}
	if names, err := entries(dir); err != nil || len(names) >= MaxFiles {
		return errors.Join(err, fmt.Errorf("the told journal %s holds %d files: no serve folds it in", dir, len(names)))
	}
	tmp, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return fmt.Errorf("write the told journal: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		return fmt.Errorf("write the told journal: %w", errors.Join(werr, cerr))
	}
	name := fmt.Sprintf("%020d-%d.json", now.UnixNano(), os.Getpid())
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

// entries lists the journal's finished files, oldest first.
func entries(dir string) ([]string, error) {
	list, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list {
		if n := e.Name(); e.Type().IsRegular() && strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	slices.Sort(out) // the names start with the time, zero-padded
	return out, nil
}

// Fold hands record the tellings of the journal dir, oldest first, and
// removes the files it recorded; files that cannot be read, or older
// than Keep, are removed unrecorded. When record fails, the files stay
// for the next fold. It reports how many tellings record took.
func Fold(dir string, now time.Time, record func([]store.Telling) error) (int, error) {
	names, err := entries(dir)
	if err != nil || len(names) == 0 {
		return 0, err
	}
	names = names[:min(len(names), MaxFiles)]
	var list []store.Telling
	var done []string
	for _, name := range names {
		path := filepath.Join(dir, name)
		e, ok := read(path, now)
		done = append(done, path)
		if ok {
			list = append(list, e.Tellings...)
		}
	}
	for start := 0; start < len(list); start += store.MaxTellings {
		if err := record(list[start:min(start+store.MaxTellings, len(list))]); err != nil {
			return 0, err
		}
	}
	for _, path := range done {
		os.Remove(path)
	}
	return len(list), nil
}

// read reads one journal file; ok is false for one that is torn, too
// large, or older than Keep (by the time in its name).
func read(path string, now time.Time) (Entry, bool) {
	stamp, _, _ := strings.Cut(filepath.Base(path), "-")
	ns, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil || now.Sub(time.Unix(0, ns)) > Keep {
		return Entry{}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return Entry{}, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	var e Entry
	if err != nil || len(data) > maxFile || json.Unmarshal(data, &e) != nil {
		return Entry{}, false
	}
	return e, true
}
