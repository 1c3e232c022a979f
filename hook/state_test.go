package hook

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A symlink planted at a session's record is not followed: the hook used
// to write its JSON over whatever the link pointed at.
func TestStateRefusesASymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(target, []byte("precious data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, statePath(dir, "s1", "/srv/repo")); err != nil {
		t.Fatal(err)
	}
	err := UpdateState(context.Background(), dir, "s1", "/srv/repo", func(st *State) { st.Told = []string{"x"} })
	if err == nil {
		t.Error("UpdateState wrote through a symlink without a word")
	}
	if data, _ := os.ReadFile(target); string(data) != "precious data\n" {
		t.Fatalf("the symlink's target was overwritten: %q", data)
	}
	if _, ok := PeekState(dir, "s1", "/srv/repo"); ok {
		t.Error("PeekState read a record through a symlink")
	}
	// A real record still works.
	if err := UpdateState(context.Background(), dir, "s2", "/srv/repo", func(st *State) { st.Told = []string{"x"} }); err != nil {
		t.Fatal(err)
	}
	if st, ok := PeekState(dir, "s2", "/srv/repo"); !ok || len(st.Told) != 1 {
		t.Fatalf("record: %+v %v", st, ok)
	}
}
