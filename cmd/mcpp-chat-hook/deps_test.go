package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The hook runs on every prompt of every session: it must not pay for
// what only a team store or a hub needs. A team store's and a hub
// member's events that the cache cannot answer go to `mcpp-chat hook`.
func TestHookLinksNoDriverNorHTTP(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case pkg == "net/http", strings.HasPrefix(pkg, "github.com/jackc/"), strings.HasPrefix(pkg, "github.com/modelcontextprotocol/"):
			t.Errorf("the hook binary links %s", pkg)
		}
	}
}
