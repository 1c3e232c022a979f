package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The worked example's first step names a peer that has made no call yet:
// by name it is refused, by its repository's path it works, and the peer's
// session is that party at its first call.
func TestChannelNewSeatsARepositoryByPath(t *testing.T) {
	w := newWorld(t)
	gw, dash := w.repo("mesh-gw"), w.repo("node-dash")
	sub := filepath.Join(dash, "src", "ui")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}

	r := w.call(gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}})
	if r.Success || !strings.Contains(r.Error, "no party named 'node-dash'") || !strings.Contains(r.Error, "absolute path") {
		t.Fatalf("by name before the peer's first call: %+v", r)
	}
	for _, bad := range []struct{ path, want string }{
		{"src/node-dash", "absolute path"},
		{filepath.Join(w.dir, "repos", "no-such-repo"), "no such folder on this host"},
	} {
		if r := w.call(gw, "chat_channel_new", map[string]any{"name": "gw--x", "parties": []string{bad.path}}); r.Success || !strings.Contains(r.Error, bad.want) {
			t.Errorf("%s: %+v", bad.path, r)
		}
	}

	var info struct {
		Parties []string `json:"parties"`
	}
	w.mustCall(gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{sub}}, &info)
	if strings.Join(info.Parties, ",") != "mesh-gw,node-dash" {
		t.Fatalf("seated %q", info.Parties)
	}
	var who struct {
		Name     string `json:"name"`
		Channels []struct {
			Channel string `json:"channel"`
		} `json:"channels"`
	}
	w.mustCall(dash, "chat_whoami", map[string]any{}, &who)
	if who.Name != "node-dash" || len(who.Channels) != 1 || who.Channels[0].Channel != "gw--dash" {
		t.Errorf("the peer's first call: %+v", who)
	}
	// Its party is known now: by path again, it is the same one.
	w.mustCall(gw, "chat_channel_new", map[string]any{"name": "gw--dash-2", "parties": []string{dash}}, &info)
	if strings.Join(info.Parties, ",") != "mesh-gw,node-dash" {
		t.Errorf("second channel seated %q", info.Parties)
	}
	if _, ok := w.parties()["no-such-repo"]; ok {
		t.Error("a mistyped path made a party")
	}
}
