package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// A folder missing here is "moved?" on this machine's own chat only: on a
// team store it is most likely another machine's, and a hub's party
// (team:NAME) has no folder at all.
func TestPartiesCallsOnlyALocalPartyMoved(t *testing.T) {
	now := time.Now()
	at := now.UTC().Format(time.RFC3339Nano)
	for _, c := range []struct {
		workspace string
		team      bool
		want      string
	}{
		{"/srv/gone/mesh-gw", false, "(no such folder here: moved? mcpp-chat parties move)"},
		{"/srv/elsewhere/mesh-gw", true, "(not a folder on this machine)"},
		{store.TeamWorkspace("mesh-gw"), true, ""},
		{store.TeamWorkspace("mesh-gw"), false, ""},
	} {
		var b strings.Builder
		printParty(&b, partyFolder{PartyRecord: store.PartyRecord{Name: "mesh-gw", Workspace: c.workspace, LastSeen: at}}, c.team, now)
		line := strings.SplitN(b.String(), "\n", 2)[0]
		flagged := strings.Contains(line, "moved?") || strings.Contains(line, "not a folder")
		if c.want == "" && flagged || c.want != "" && !strings.HasSuffix(line, c.want) {
			t.Errorf("%s (team store %v): %q, want it to end %q", c.workspace, c.team, line, c.want)
		}
	}
}

// parties speaks to the person, who calls no tool: what a party owes, not
// "your ack (chat_ack)".
func TestPartiesSaysWhatAPartyOwes(t *testing.T) {
	var b strings.Builder
	p := store.PartyRecord{Name: "node-dash", Workspace: "/srv/node-dash", LastSeen: time.Now().UTC().Format(time.RFC3339Nano),
		Owes: []string{"an ack on #gw--dash [enum]", "a prune-ok on #gw--dash [old]"}}
	printParty(&b, partyFolder{PartyRecord: p, FolderExists: true}, false, time.Now())
	if !strings.Contains(b.String(), "owes an ack on #gw--dash [enum]; a prune-ok on #gw--dash [old]") || strings.Contains(b.String(), "chat_") {
		t.Errorf("parties says:\n%s", b.String())
	}
}

// The parties commands take a party's name by the same rule as every
// other way a name comes in: "..", "." and "~" are no party's.
func TestPartiesCommandsRefuseWhatNoPartyIsNamed(t *testing.T) {
	env := isolatedEnv(t)
	if code, out, errs := cli(t, env, "call", "chat_whoami"); code != exitOK {
		t.Fatalf("whoami: %s%s", out, errs)
	}
	folder := t.TempDir()
	for _, args := range [][]string{
		{"parties", "forget", ".."},
		{"parties", "move", "~", folder},
		{"parties", "reset-cursor", ".", "general"},
	} {
		code, out, errs := cli(t, env, args...)
		if code != exitUsage || !strings.Contains(errs, "a letter or a digit") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
}
