package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A party exists from its first tool call. A client that only starts the
// server and shakes hands (claude mcp list, a probe in any folder) must
// not make that folder a party: it would take the name a repository's
// real session asks for later.
func TestServingAndHandshakeMakeNoParty(t *testing.T) {
	w := newWorld(t)
	w.mustCall(w.repo("mesh-gw"), "chat_whoami", nil, nil) // the database and one party
	other := filepath.Join(w.dir, "elsewhere", "mesh-gw")  // another repository of the same name
	if err := os.MkdirAll(filepath.Join(other, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}

	r := w.rawServe(other)
	resp, _ := r.request("initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "probe", "version": "1"},
	})
	res, _ := resp["result"].(map[string]any)
	instructions, _ := res["instructions"].(string)
	// The name it will get at its first call: the name is taken.
	if !strings.Contains(instructions, `"mesh-gw~2"`) || !strings.Contains(instructions, other) {
		t.Fatalf("instructions do not name the party as it will be named:\n%s", instructions)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.request("tools/list", nil)
	r.request("ping", nil)
	db := roDB(t, w.db)
	if names := dbStrings(t, db, `SELECT name FROM parties ORDER BY name`); len(names) != 1 || names[0] != "mesh-gw" {
		t.Fatalf("after a handshake the parties are %v, want only mesh-gw", names)
	}
	r.request("tools/call", map[string]any{"name": "chat_inbox", "arguments": map[string]any{}})
	if names := dbStrings(t, db, `SELECT name FROM parties ORDER BY name`); len(names) != 2 || names[1] != "mesh-gw~2" {
		t.Fatalf("after the first call the parties are %v, want mesh-gw and mesh-gw~2", names)
	}
}
