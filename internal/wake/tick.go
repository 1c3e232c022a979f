// Package wake tells waiting processes that the chat database may have
// changed. Every committed call rewrites a one-line tick file beside the
// database (WriteTick), and a Watcher sleeps on file-system notifications
// for that folder, with a slow poll as a safety net where notifications do
// not arrive (network file systems, a disabled tick file).
package wake

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// TickLine is the line the tick file holds after change c:
// `<iso8601> <channel> <seq> <author>\n`, the time being the call's.
func TickLine(c store.Change) string {
	at := c.CommittedAt
	if at == "" {
		at = store.Now()
	}
	return fmt.Sprintf("%s %s %d %s\n", at, c.Channel, c.Seq, c.Author)
}

// WriteTick replaces the tick file at path with the line for c. It writes a
// private temporary file in the same folder and renames it over the old one,
// so a reader (tail -F, a polling loop) sees the old line or the new one,
// never half of one, and the file is owner-only whatever the umask.
//
// A tick never goes back: when the file already names a write made after
// c's — another process's, whose tick came first because each process
// delivers its ticks a little after its commits — it is left as it is.
//
// The look and the replacement happen under a lock on the folder, or two
// processes could both look before either replaced: the older tick could
// then land last.
func WriteTick(path string, c store.Change) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	unlock := lockFolder(dir)
	defer unlock()
	if aheadOf(path, c) {
		return nil
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("write tick file %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.WriteString(TickLine(c))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write tick file %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write tick file %s: %w", path, err)
	}
	return nil
}

// maxTickLead bounds how far ahead of a change the current tick may be and
// still keep it out. Ticks of different processes cross by milliseconds; a
// line further ahead means the clock was set back, and holding every tick
// until the clock catches up would blind the watchers.
const maxTickLead = time.Second

// aheadOf reports whether the tick file names a write made shortly after c.
func aheadOf(path string, c store.Change) bool {
	at, err := time.Parse(time.RFC3339Nano, c.CommittedAt)
	if err != nil {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil || len(data) > 4096 {
		return false
	}
	cur, ok := ParseTick(string(data))
	if !ok {
		return false
	}
	curAt, err := time.Parse(time.RFC3339Nano, cur.At)
	if err != nil {
		return false
	}
	lead := curAt.Sub(at)
	return lead > 0 && lead < maxTickLead
}

// Tick is a parsed tick line.
type Tick struct {
	At string
	store.Change
}

// ParseTick reads a tick line; ok is false for anything else (an empty or
// foreign file).
func ParseTick(line string) (t Tick, ok bool) {
	f := strings.Fields(line)
	if len(f) != 4 {
		return Tick{}, false
	}
	seq, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return Tick{}, false
	}
	return Tick{At: f[0], Change: store.Change{Channel: f[1], Seq: seq, Author: f[3]}}, true
}
