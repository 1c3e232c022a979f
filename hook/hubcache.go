package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// HubCache is what waits on a party of a member machine, as its running
// serve last heard from the team hub. The hook reads it instead of asking
// the hub while it is fresh: a file read, not a round trip, on every
// prompt.
type HubCache struct {
	Party string `json:"party"`
	// ETag names the hub's state the summary was read at.
	ETag    string        `json:"etag"`
	Pending store.Pending `json:"pending"`
	// CheckedAt is when serve last heard from the hub that this is
	// still the state.
	CheckedAt time.Time `json:"checked_at"`
	// ServePID is the serve that keeps the cache: once it has ended,
	// nothing follows the hub for the cache any more, however recent
	// CheckedAt is (a serve that `claude mcp list` starts lives a second).
	ServePID int `json:"serve_pid"`
}

// HubCacheFresh is how old a cache may be and still answer while its
// serve runs: serve polls the hub at least every 45 s, so an older cache
// means the hub is out of its reach.
const HubCacheFresh = 90 * time.Second

// HubCachePath is where the party's cache lives: beside the hub settings.
func HubCachePath(paths config.Paths, party string) string {
	return filepath.Join(filepath.Dir(paths.Hub), "hub-cache", party+".json")
}

// ReadHubCache reads the party's cache; ok (fresh) is false when there is
// none, it cannot be read, the serve that keeps it is no longer running,
// or it is older than HubCacheFresh at now.
func ReadHubCache(path string, now time.Time) (c HubCache, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &c) != nil {
		return HubCache{}, false
	}
	age := now.Sub(c.CheckedAt)
	return c, c.ETag != "" && age >= -time.Minute && age < HubCacheFresh && c.ServePID > 0 && lookProcess(c.ServePID).live
}

// DropHubCache removes the party's cache if the serve pid keeps it: that
// serve no longer hears the hub (it ends, the hub refused its token or is
// out of reach), so the cache must not answer. A cache another serve
// keeps is left to that serve.
func DropHubCache(path string, pid int) error {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read the hub cache: %w", err)
	}
	var c HubCache
	if json.Unmarshal(data, &c) != nil || c.ServePID != pid {
		return nil // not ours (an unreadable cache answers nothing anyway)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the hub cache: %w", err)
	}
	return nil
}

// WriteHubCache replaces the cache at once (a reader never sees half).
func WriteHubCache(path string, c HubCache) error {
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode the hub cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create the hub cache folder: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cache-*")
	if err != nil {
		return fmt.Errorf("write the hub cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write the hub cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the hub cache: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}
