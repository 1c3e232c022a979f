package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// claimed is chat_claim's answer as these tests read it.
type claimed struct {
	Granted  bool   `json:"granted"`
	Resource string `json:"resource"`
	Until    string `json:"until"`
	HeldBy   string `json:"held_by"`
	Reason   string `json:"reason"`
}

// Eight processes, each a party in its own repository, claim one thing at
// the same moment: exactly one is granted, and each of the seven others
// is told who holds it and why — on a database file and on a team store.
func TestEightProcessesClaimOneThing(t *testing.T) {
	for _, c := range []struct {
		name  string
		world func(t *testing.T) *world
	}{
		{"sqlite", newWorld},
		{"postgres", func(t *testing.T) *world { w, _, _ := teamWorld(t); return w }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := c.world(t)
			var repos, names []string
			for i := range 8 {
				name := fmt.Sprintf("svc-%d", i)
				repos, names = append(repos, w.repo(name)), append(names, name)
			}
			w.mustCall(repos[0], "chat_channel_new", map[string]any{"name": "deploys", "parties": repos[1:]}, nil)
			results := make([]claimed, len(repos))
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, dir := range repos {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					r, err := w.tryCall(dir, "chat_claim", map[string]any{"resource": "env:staging", "reason": "deploying " + names[i]})
					if err == nil && !r.Success {
						err = fmt.Errorf("%s: %s", names[i], r.Error)
					}
					if err == nil {
						err = json.Unmarshal(r.Result, &results[i])
					}
					if err != nil {
						t.Error(err)
					}
				}()
			}
			close(start)
			wg.Wait()
			holder := ""
			for i, r := range results {
				if r.Granted {
					if holder != "" {
						t.Errorf("granted to %s and to %s", holder, names[i])
					}
					holder = names[i]
				}
			}
			if holder == "" {
				t.Fatalf("granted to none: %+v", results)
			}
			for i, r := range results {
				if !r.Granted && (r.HeldBy != holder || r.Reason != "deploying "+holder || r.Until == "") {
					t.Errorf("%s was told %+v, want held by %s", names[i], r, holder)
				}
			}
		})
	}
}

// A running serve keeps its party's claim past its time to live; once
// the session has ended the claim runs out, and the holder's next prompt
// and the prompt of the party that was refused it each say so once.
func TestClaimLivesWithItsSessionAndItsEndIsToldOnce(t *testing.T) {
	w := newWorld(t)
	gw, dash := w.seatedPair()
	s := w.serve(gw)
	var got claimed
	if _, errText := toolCall(t, s, "chat_claim", map[string]any{"resource": "env:staging", "ttl": "10s", "reason": "migrating the schema"}, &got); errText != "" || !got.Granted {
		t.Fatalf("claim: %s %+v", errText, got)
	}
	var refused claimed
	w.mustCall(dash, "chat_claim", map[string]any{"resource": "env:staging"}, &refused)
	if refused.Granted || refused.HeldBy != "mesh-gw" {
		t.Fatalf("node-dash's claim: %+v", refused)
	}
	// The serve renews it while nothing else happens: past its first
	// time to live it is still held, until later.
	first, _ := time.Parse(time.RFC3339Nano, got.Until)
	var until string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		until = holdsStaging(t, w, dash)
		if until > got.Until && time.Now().After(first.Add(time.Second)) {
			break
		}
		if until == "" || time.Now().After(deadline) {
			t.Fatalf("the claim was not renewed by its serve: until %q, first %s", until, got.Until)
		}
	}
	s.Close() // the session ends; nothing renews the claim now
	end, _ := time.Parse(time.RFC3339Nano, until)
	for holdsStaging(t, w, dash) != "" {
		if time.Now().After(end.Add(time.Minute)) {
			t.Fatal("the claim outlived its session")
		}
		time.Sleep(200 * time.Millisecond)
	}
	told := contextOf(t, w.event(gw, "s-gw", "UserPromptSubmit"), "UserPromptSubmit")
	if !strings.Contains(told, "your claim on env:staging expired at") {
		t.Errorf("mesh-gw's prompt does not say its claim expired:\n%s", told)
	}
	mustSilent(t, "mesh-gw's next prompt", w.event(gw, "s-gw", "UserPromptSubmit"))
	told = contextOf(t, w.event(dash, "s-dash", "UserPromptSubmit"), "UserPromptSubmit")
	if !strings.Contains(told, "mesh-gw's claim on env:staging, which you were refused, expired at") {
		t.Errorf("node-dash's prompt does not say the claim it waited for ended:\n%s", told)
	}
	mustSilent(t, "node-dash's next prompt", w.event(dash, "s-dash", "UserPromptSubmit"))
}

// holdsStaging is until when env:staging is held, as the party in dir
// sees it ("" when it is not): a call of dir's own, which renews only
// dir's claims.
func holdsStaging(t *testing.T, w *world, dir string) string {
	t.Helper()
	var l store.ClaimList
	w.mustCall(dir, "chat_claims", nil, &l)
	for _, c := range l.Claims {
		if c.Resource == "env:staging" {
			return c.Until
		}
	}
	return ""
}

// claimProto has mesh-gw claim node-dash's proto folder, and makes a file
// there; it returns the file.
func claimProto(t *testing.T, w *world, gw, dash string) string {
	t.Helper()
	var got claimed
	w.mustCall(gw, "chat_claim", map[string]any{"resource": "path:node-dash/proto/**", "reason": "regenerating the frame enum"}, &got)
	if !got.Granted {
		t.Fatalf("claim: %+v", got)
	}
	file := filepath.Join(dash, "proto", "frame.proto")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, "enum Frame { A = 1; }\n")
	writeFile(t, filepath.Join(dash, "README.md"), "node-dash\n")
	return file
}

// In a real Claude Code (`claude -p`, the hooks setup hooks --write
// writes), an Edit of a file another party claimed is stopped: the file
// stays as it was, and the model reads who holds it, why and until when;
// an Edit of an unclaimed file in the same turn goes through.
func TestClaudeEditOfAClaimedFileIsStopped(t *testing.T) {
	w := newWorld(t)
	c := newClaude(t, w)
	gw, dash := seatPair(t, w)
	file := claimProto(t, w, gw, dash)
	readme := filepath.Join(dash, "README.md")
	model := startModel(t,
		scripted.Do(scripted.Builtin("Edit", map[string]any{"file_path": file, "old_string": "A = 1", "new_string": "A = 1; AUX = 2"})),
		scripted.Do(scripted.Builtin("Edit", map[string]any{"file_path": readme, "old_string": "node-dash", "new_string": "node-dash, the dashboard"})),
		scripted.End("done"))
	p := startCLI(t, dash, c.env(model.URL), nil, c.args("--permission-mode", "acceptEdits", "--", "add FRAME_AUX")...)
	if err := p.wait(t); err != nil {
		t.Fatalf("claude -p: %v", err)
	}
	if data, _ := os.ReadFile(file); string(data) != "enum Frame { A = 1; }\n" {
		t.Errorf("the claimed file was changed:\n%s", data)
	}
	if data, _ := os.ReadFile(readme); string(data) != "node-dash, the dashboard\n" {
		t.Errorf("the unclaimed file was not changed (the edit hook stopped it?):\n%s", data)
	}
	all := turns(model)
	if len(all) < 2 {
		t.Fatalf("%d turns", len(all))
	}
	r := all[1].Last()
	t.Logf("the model read: %s", r.Text)
	for _, want := range []string{"is claimed by mesh-gw", `"regenerating the frame enum"`, "path:node-dash/proto/**", " UTC", "chat_ask"} {
		if r.Name != "Edit" || !r.IsError || !strings.Contains(r.Text, want) {
			t.Errorf("the Edit's result the model got does not say %q: %+v", want, r)
		}
	}
}

// In a real Codex (`codex exec`, the hooks setup codex --write writes,
// a sandbox that lets it write), an apply_patch of a claimed file is
// stopped, and the model reads why.
func TestCodexPatchOfAClaimedFileIsStopped(t *testing.T) {
	w := newWorld(t)
	c := withHooks(t, w)
	gw, dash := seatPair(t, w)
	file := claimProto(t, w, gw, dash)
	patch := "*** Begin Patch\n*** Update File: proto/frame.proto\n@@\n-enum Frame { A = 1; }\n+enum Frame { A = 1; AUX = 2; }\n*** End Patch\n"
	model := startModel(t, scripted.Do(scripted.Builtin("apply_patch", scripted.Freeform(patch))), scripted.End("done"))
	c.run(t, dash, model, "add FRAME_AUX", trustTheHooks, "--sandbox", "workspace-write")
	if data, _ := os.ReadFile(file); string(data) != "enum Frame { A = 1; }\n" {
		t.Errorf("the claimed file was changed:\n%s", data)
	}
	all := turns(model)
	if len(all) < 2 {
		t.Fatalf("%d turns", len(all))
	}
	r := all[1].Last()
	t.Logf("the model read: %s", r.Text)
	for _, want := range []string{"blocked by PreToolUse hook", "is claimed by mesh-gw", `"regenerating the frame enum"`} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("the patch's result the model got does not say %q: %+v", want, r)
		}
	}
}
