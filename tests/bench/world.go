package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/tests/sandbox"
)

// world is the driver's scratch folder: the built binaries, the party
// repositories, the seeded template databases and one folder per run.
type world struct {
	dir     string
	chatBin string
	hookBin string // "" when the checkout has no hook command yet
	home    string
	runs    int
	hubs    int
	// hubFlags are added to every `mcpp-chat hub serve` (-hub-flags).
	hubFlags []string
}

func newWorld(dir string) (*world, error) {
	w := &world{dir: dir, home: filepath.Join(dir, "home")}
	if err := os.MkdirAll(w.home, 0o700); err != nil {
		return nil, err
	}
	return w, nil
}

// build compiles the commands the way `make build` does.
func (w *world) build(root string) error {
	w.chatBin = filepath.Join(w.dir, "bin", "mcpp-chat")
	if err := goBuild(root, "./cmd/mcpp-chat", w.chatBin); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "mcpp-chat-hook")); err == nil {
		w.hookBin = filepath.Join(w.dir, "bin", "mcpp-chat-hook")
		if err := goBuild(root, "./cmd/mcpp-chat-hook", w.hookBin); err != nil {
			return err
		}
	}
	return nil
}

func goBuild(root, pkg, out string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as `make build` does
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
	}
	return nil
}

// repos makes n git repositories named prefix-00, prefix-01, ... and
// returns their identities as the server will resolve them.
func (w *world) repos(prefix string, n int) ([]store.Identity, error) {
	out := make([]store.Identity, n)
	for i := range out {
		path := filepath.Join(w.dir, "repos", fmt.Sprintf("%s-%02d", prefix, i))
		if err := os.MkdirAll(filepath.Join(path, ".git"), 0o755); err != nil {
			return nil, err
		}
		p, err := config.Identify(path, true)
		if err != nil {
			return nil, err
		}
		out[i] = store.Identity{Name: p.Name, Workspace: p.Root}
	}
	return out, nil
}

// seed writes a template database for spec, checkpointed into one file.
func (w *world) seed(name string, spec store.SeedSpec) (string, store.SeedReport, error) {
	path := filepath.Join(w.dir, "templates", name+".db")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", store.SeedReport{}, err
	}
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		return "", store.SeedReport{}, err
	}
	report, err := db.Seed(ctx, spec)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return path, report, err
}

// run is one isolated install: a fresh copy of a template database and the
// environment that points every path into the run's folder.
type run struct {
	dir string
	db  string
	env []string
}

func (w *world) newRun(template string) (*run, error) {
	w.runs++
	dir := filepath.Join(w.dir, "runs", fmt.Sprintf("%03d", w.runs))
	r := &run{dir: dir, db: filepath.Join(dir, "data", "chat.db")}
	if err := os.MkdirAll(filepath.Dir(r.db), 0o700); err != nil {
		return nil, err
	}
	if template != "" {
		if err := copyFile(template, r.db); err != nil {
			return nil, err
		}
	}
	// The daily backup is off: every run is a fresh copy, so each would
	// make the day's backup (a VACUUM INTO of the whole file) in the
	// background while the figures are taken; a user pays it once a day.
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte("storage:\n  daily_backup: false\n"), 0o600); err != nil {
		return nil, err
	}
	r.env = sandbox.Env(
		"MCPP_CHAT_CONFIG="+config,
		"MCPP_CHAT_DB="+r.db,
		"MCPP_CHAT_HOME="+filepath.Join(dir, "module"),
		"HOME="+w.home,
		"XDG_DATA_HOME="+filepath.Join(w.home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"), // the hook's per-session notes
		"XDG_CACHE_HOME="+filepath.Join(w.home, ".cache"),
	)
	return r, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
