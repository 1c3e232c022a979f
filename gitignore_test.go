package mcppchat

import (
	"os/exec"
	"testing"
)

// A checkout's own database (make install's default) leaves these files
// beside module.yaml, and so does connect on a member machine (its token,
// the hook's cache of message excerpts) and a SQLite team hub (its
// tokens); none may show up as a change to commit.
func TestGitignoreCoversWhatARunLeaves(t *testing.T) {
	if err := exec.Command("git", "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		t.Skipf("not in a git work tree: %v", err)
	}
	for _, f := range []string{"chat.db", "chat.db-wal", "chat.db-shm", "chat.db.lock", "chat.db.search", "chat.db.search-wal", "chat.db.search-shm", ".tick", ".backups/chat.db.20261130", "bin/mcpp-chat",
		"hub.json", ".hub-123.json", "hub-cache/mesh-gw.json", "chat.db.hub", "chat.db.hub-wal", "chat.db.hub-shm"} {
		if err := exec.Command("git", "check-ignore", "-q", "--no-index", f).Run(); err != nil {
			t.Errorf("%s is not ignored by .gitignore", f)
		}
	}
}
