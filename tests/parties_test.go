package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run runs the mcpp-chat command line in the world (not a tool call).
func (w *world) run(args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, chatBin, args...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("mcpp-chat %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

type listedParty struct {
	Name         string   `json:"name"`
	Workspace    string   `json:"workspace"`
	LastSeen     string   `json:"last_seen"`
	Owes         []string `json:"owes"`
	FolderExists bool     `json:"folder_exists"`
}

func (w *world) parties() map[string]listedParty {
	w.t.Helper()
	out, errs, code := w.run("parties", "--json")
	if code != 0 {
		w.t.Fatalf("parties --json: exit %d %s", code, errs)
	}
	var list []listedParty
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		w.t.Fatalf("parties --json: %v\n%s", err, out)
	}
	byName := map[string]listedParty{}
	for _, p := range list {
		byName[p.Name] = p
	}
	return byName
}

// A repository moved: its sessions became node-dash~2 and mesh-gw's item
// waited on node-dash forever. The person sees it in `parties`, moves
// node-dash to the new folder, and the session there is asked again.
func TestPartiesMoveAMovedRepository(t *testing.T) {
	w := newWorld(t)
	gw, dash := w.seatedPair()
	w.mustCall(gw, "chat_ask", map[string]any{"title": "Is the enum closed?", "body": "?", "slug": "enum"}, nil)

	moved := filepath.Join(w.dir, "elsewhere", "node-dash")
	if err := os.MkdirAll(filepath.Dir(moved), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dash, moved); err != nil {
		t.Fatal(err)
	}
	var who struct {
		Name string `json:"name"`
	}
	w.mustCall(moved, "chat_whoami", map[string]any{}, &who)
	if who.Name != "node-dash~2" {
		t.Fatalf("the moved repository is %q", who.Name)
	}
	before := w.parties()
	if p := before["node-dash"]; p.FolderExists || len(p.Owes) != 1 {
		t.Errorf("parties shows node-dash as %+v", p)
	}
	if out, _, _ := w.run("parties"); !strings.Contains(out, "no such folder here") || !strings.Contains(out, "#gw--dash [enum]") {
		t.Errorf("parties:\n%s", out)
	}

	for _, bad := range [][]string{
		{"parties", "move", "node-dash", moved},                        // needs --merge
		{"parties", "move", "node-dash", filepath.Join(w.dir, "gone")}, // no such folder
		{"parties", "move", "ghost", moved, "--merge"},
		{"parties", "move", "node-dash"},
		{"parties", "forget", "mesh-gw"}, // wrote messages
		{"parties", "reset-cursor", "node-dash", "gw--dash", "--to", "99"},
		{"parties", "reset-cursor", "node-dash", "gw--dash", "--to", "x"},
		{"parties", "frobnicate"},
	} {
		out, errs, code := w.run(bad...)
		if code == 0 || !strings.Contains(errs, " — ") && !strings.Contains(errs, "give ") && !strings.Contains(errs, "use ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want a refusal that says what to do", bad, code, out, errs)
		}
	}
	if after := w.parties(); !equalParties(before, after) {
		t.Fatalf("refused commands changed the parties:\n%+v\n%+v", before, after)
	}

	out, errs, code := w.run("parties", "move", "node-dash", filepath.Join(moved, "."), "--merge")
	if code != 0 || !strings.Contains(out, "node-dash~2, which lived there, is folded into node-dash") {
		t.Fatalf("move: exit %d\n%s%s", code, out, errs)
	}
	var inbox struct {
		Me          string `json:"me"`
		WaitingOnMe []struct {
			Item string `json:"item"`
		} `json:"waiting_on_me"`
	}
	w.mustCall(moved, "chat_inbox", map[string]any{}, &inbox)
	if inbox.Me != "node-dash" || len(inbox.WaitingOnMe) != 1 || inbox.WaitingOnMe[0].Item != "enum" {
		t.Errorf("after the move the session there sees %+v", inbox)
	}
	if _, ok := w.parties()["node-dash~2"]; ok {
		t.Error("node-dash~2 is still listed")
	}
}

func TestPartiesForgetAndResetCursor(t *testing.T) {
	w := newWorld(t)
	gw, dash, probe := w.repo("mesh-gw"), w.repo("node-dash"), w.repo("probe")
	w.mustCall(dash, "chat_whoami", map[string]any{}, nil)
	w.mustCall(probe, "chat_whoami", map[string]any{}, nil)
	w.mustCall(gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)
	w.mustCall(gw, "chat_say", map[string]any{"text": "one"}, nil)
	w.mustCall(gw, "chat_say", map[string]any{"text": "two"}, nil)
	w.mustCall(dash, "chat_read", map[string]any{}, nil)

	out, errs, code := w.run("parties", "reset-cursor", "node-dash", "gw--dash")
	if code != 0 || !strings.Contains(out, "2 → 0") || !strings.Contains(out, "2 messages unread") {
		t.Fatalf("reset-cursor: exit %d\n%s%s", code, out, errs)
	}
	var inbox struct {
		UnreadTotal int `json:"unread_total"`
	}
	w.mustCall(dash, "chat_inbox", map[string]any{}, &inbox)
	if inbox.UnreadTotal != 2 {
		t.Errorf("after the reset node-dash has %d unread", inbox.UnreadTotal)
	}

	w.mustCall(gw, "chat_ask", map[string]any{"title": "Still there?", "body": "?", "slug": "there"}, nil)
	if _, errs, code := w.run("parties", "forget", "node-dash"); code == 0 || !strings.Contains(errs, "--force") {
		t.Errorf("forget with an item waiting: exit %d %s", code, errs)
	}
	if out, errs, code := w.run("parties", "forget", "probe"); code != 0 || !strings.Contains(out, "forgot probe") {
		t.Errorf("forget probe: exit %d\n%s%s", code, out, errs)
	}
	if out, _, code := w.run("parties", "forget", "--force", "node-dash"); code != 0 || !strings.Contains(out, "no longer owed: an ack on #gw--dash [there]") {
		t.Errorf("forget --force: exit %d\n%s", code, out)
	}
	if left := w.parties(); len(left) != 1 {
		t.Errorf("parties left: %+v", left)
	}
}

// The parties commands never create a database (a mistyped MCPP_CHAT_DB).
func TestPartiesWithoutADatabase(t *testing.T) {
	w := newWorld(t)
	_, errs, code := w.run("parties")
	if code == 0 || !strings.Contains(errs, "no chat database at "+w.db) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(w.db); err == nil {
		t.Error("parties created the database")
	}
}

func equalParties(a, b map[string]listedParty) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
