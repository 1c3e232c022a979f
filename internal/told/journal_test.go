package told

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

func entry(seq int64) Entry {
	return Entry{Tellings: []store.Telling{{Channel: "c", Seq: seq, At: store.Now(), Via: store.ViaWake}}}
}

// A fold hands every telling to record once, oldest first, and removes
// the files; a record that fails leaves them for the next fold; a torn
// file or one older than Keep is dropped unrecorded.
func TestFoldRecordsAndRemoves(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	now := time.Now()
	for i := range 3 {
		if err := Append(dir, entry(int64(i+1)), now.Add(time.Duration(i))); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "00000000000000000001-1.json"), []byte(`{"tellings":[{"channel":"c","seq":99}]}`), 0o600) // 1970: too old
	os.WriteFile(filepath.Join(dir, "99999999999999999999-1.json"), []byte(`{"tell`), 0o600)                                  // torn
	boom := errors.New("store away")
	if _, err := Fold(dir, now, func([]store.Telling) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	var got []int64
	n, err := Fold(dir, now, func(list []store.Telling) error {
		for _, tl := range list {
			got = append(got, tl.Seq)
		}
		return nil
	})
	if err != nil || n != 3 || len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("folded %d %v (%v), want 1 2 3", n, got, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d files left after the fold", len(left))
	}
}

// While no serve folds it, the journal holds at most MaxFiles files.
func TestJournalIsBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range MaxFiles {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d-1.json", i)), nil, 0o600)
	}
	if err := Append(dir, entry(1), time.Now()); err == nil {
		t.Fatal("a full journal took another file")
	}
	if names, _ := entries(dir); len(names) != MaxFiles {
		t.Fatalf("%d files, want %d", len(names), MaxFiles)
	}
}

// Each party has its own journal, beside the database or, on a member
// machine, beside the hub settings.
func TestDirIsThePartys(t *testing.T) {
	local := config.Paths{DB: "/data/chat.db", Store: "sqlite:/data/chat.db", Hub: "/mod/hub.json"}
	if a, b := Dir(local, "/src/a"), Dir(local, "/src/b"); a == b || filepath.Dir(a) != "/data/chat.db.told" {
		t.Fatalf("journals %s and %s", a, b)
	}
	member := config.Paths{DB: "/mod/chat.db", Store: "https://hub.example", Hub: "/mod/hub.json"}
	if d := Dir(member, "/src/a"); filepath.Dir(d) != "/mod/hub-told" {
		t.Fatalf("a member's journal is %s", d)
	}
}

// Follow folds what arrives while it runs, without waiting for its tick.
func TestFollowFoldsWhatArrives(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	ctx, cancel := context.WithCancel(context.Background())
	folded := make(chan int, 10)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		Follow(ctx, dir, func() {
			n, _ := Fold(dir, time.Now(), func([]store.Telling) error { return nil })
			folded <- n
		})
	}()
	if n := <-folded; n != 0 { // the fold at the start
		t.Fatalf("the first fold found %d", n)
	}
	if err := Append(dir, entry(1), time.Now()); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(time.Minute)
	for got := 0; got == 0; {
		select {
		case got = <-folded:
		case <-deadline:
			t.Fatal("what arrived was not folded")
		}
	}
	cancel()
	<-stopped
}
