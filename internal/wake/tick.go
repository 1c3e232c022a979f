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
func WriteTick(path string, c store.Change) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
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
