package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Hub is a member machine's team hub, as `mcpp-chat connect` saved it.
type Hub struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// IsHub reports a store URL that is a team hub's address.
func IsHub(url string) bool {
	return strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://")
}

// HubFile is where connect saves the hub: MCPP_CHAT_HUB_FILE, else
// hub.json in the module folder.
func HubFile(env Env, moduleDir string) string {
	if f := env("MCPP_CHAT_HUB_FILE"); f != "" {
		return absClean(f)
	}
	return filepath.Join(moduleDir, "hub.json")
}

// LoadHub reads the saved hub; ok is false when there is none.
func LoadHub(path string) (h Hub, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Hub{}, false, nil
	}
	if err != nil {
		return Hub{}, false, fmt.Errorf("cannot read the hub settings %s: %w — check its permissions, or connect again (mcpp-chat connect)", path, err)
	}
	if err := json.Unmarshal(data, &h); err != nil || !IsHub(h.URL) {
		return Hub{}, false, fmt.Errorf("the hub settings %s are damaged — connect again (mcpp-chat connect URL --token TOKEN)", path)
	}
	return h, true, nil
}

// SaveHub writes the hub settings, readable by their owner only (they hold
// a token), replacing any earlier ones at once.
func SaveHub(path string, h Hub) error {
	data, _ := json.MarshalIndent(h, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("cannot create the folder for the hub settings: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hub-*.json")
	if err != nil {
		return fmt.Errorf("cannot write the hub settings beside %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot make the hub settings private: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot write the hub settings: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cannot write the hub settings: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot save the hub settings at %s: %w", path, err)
	}
	return nil
}

// HubToken is the token a member sends: MCPP_CHAT_TOKEN, else the saved
// one.
func HubToken(env Env, saved Hub) string {
	if t := strings.TrimSpace(env("MCPP_CHAT_TOKEN")); t != "" {
		return t
	}
	return saved.Token
}
