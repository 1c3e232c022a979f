package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Some goals are set against a floor of this machine measured in the same
// run, not against a fixed number: chat_say against the disk's fsync (a
// stored message is synced before the answer), the hook against its own
// process start (the binary printing --version).

// fsyncLatency times writing 4 KiB and syncing it, n times, in the folder
// the databases live in.
func (w *world) fsyncLatency(n int) (samples, error) {
	f, err := os.CreateTemp(w.dir, "fsync-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 4096)
	var lat samples
	for i := 0; i < n+10; i++ {
		begin := time.Now()
		if _, err := f.WriteAt(block, int64(i%16)*4096); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		if i >= 10 {
			lat = append(lat, time.Since(begin))
		}
	}
	return lat, nil
}

// processFloor times `hook --version`, n times, after 10 that warm up.
func (w *world) processFloor(n int) (samples, error) {
	var lat samples
	for i := 0; i < n+10; i++ {
		cmd := exec.Command(w.hookBin, "--version")
		cmd.Dir = filepath.Dir(w.hookBin)
		begin := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, err
		}
		if i >= 10 {
			lat = append(lat, time.Since(begin))
		}
	}
	return lat, nil
}
