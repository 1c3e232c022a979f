package store

import (
	"context"
	"strings"
	"testing"
)

// A member of a team hub sees its peers by name: chat_whoami's
// known_parties name each party's workspace as a hub does (team:NAME),
// never a folder of another machine, with the same keys. A session on
// one host sees the folders, as before.
func TestTeamMembersSeePartiesByName(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		ctx := context.Background()
		db := world(t) // parties made on one host: /srv/mesh-gw, /srv/node-dash, /srv/fw-core
		member := Identity{Name: "node-dash", Workspace: TeamWorkspace("node-dash"), Team: true}
		got, err := db.Whoami(ctx, member, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.KnownParties) != 3 {
			t.Fatalf("%d known parties, want 3", len(got.KnownParties))
		}
		for _, p := range got.KnownParties {
			if p.Workspace != TeamWorkspace(p.Name) || strings.Contains(p.Workspace, "/srv/") {
				t.Errorf("a member sees %s at %q, want %q", p.Name, p.Workspace, TeamWorkspace(p.Name))
			}
			if p.LastSeen == "" {
				t.Errorf("a member sees %s without its last activity", p.Name)
			}
		}
		here, err := db.Whoami(ctx, dash, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range here.KnownParties {
			if p.Workspace != "/srv/"+map[string]string{"mesh-gw": "mesh-gw", "node-dash": "node-dash", "fw-core": "fw-core"}[p.Name] {
				t.Errorf("a session on the host sees %s at %q, want its folder", p.Name, p.Workspace)
			}
		}
	})
}
