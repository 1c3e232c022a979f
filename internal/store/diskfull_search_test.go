package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// smallDisk mounts a small tmpfs at a new folder for the test, or skips
// where mounting is not allowed (it needs root).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small disk here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillDisk writes a file until the disk holding dir is full, and returns it.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			return path
		}
	}
}

// A search on a full disk says the disk is full, as a write does — its
// index beside the database cannot grow — and searches again once there
// is room. It failed "inside the server".
func TestSearchOnAFullDiskSaysSo(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, "4m")
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(disk, "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, id := range []Identity{gw, dash} {
		must(t)(db.Register(ctx, id))
	}
	must(t)(db.ChannelNew(ctx, gw, "gw--dash", "", []string{"node-dash"}))
	must(t)(db.Say(ctx, gw, SayArgs{Text: "armadillo", Channel: "gw--dash"}))
	must(t)(db.Search(ctx, gw, SearchArgs{Query: "armadillo"})) // the index is made
	for i := range 40 {
		must(t)(db.Say(ctx, dash, SayArgs{Text: fmt.Sprintf("pangolin %d %s", i, bigBody(i, 16<<10)), Channel: "gw--dash"}))
	}
	filler := fillDisk(t, disk)
	_, err = db.Search(ctx, gw, SearchArgs{Query: "pangolin"})
	t.Logf("search on a full disk: %v (%T)", err, err)
	var se *StorageError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "the disk holding "+disk+" is full") {
		t.Fatalf("a search on a full disk: %v, want a StorageError saying the disk is full", err)
	}
	os.Remove(filler)
	res, err := db.Search(ctx, gw, SearchArgs{Query: "pangolin"})
	if err != nil || res.Total != 40 {
		t.Fatalf("a search once there is room: %d hits, %v", res.Total, err)
	}
}
