package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/tests/scripted"
)

// The Codex CLI (0.171.0) against a scripted model: `codex exec` with a
// model provider on loopback in a throwaway HOME's .codex/config.toml.

// codex is one user's Codex install in a world.
type codex struct {
	w   *world
	bin string
	// server is the [mcp_servers.chat] table of config.toml.
	server string
	// env is added to Codex's environment (a bearer token's variable).
	env []string
	// setUp: config.toml is the model provider plus what `mcpp-chat setup
	// codex --write` merges into it (server, feature flag, hooks), not
	// server.
	setUp bool
}

// newCodex installs Codex for the world with our server in a table of
// the tests' own: the calls approved, the database in the table's env
// (Codex passes a server only a few variables). What `setup codex`
// prints is TestCodexSetupSnippetWorksAsPrinted's, so that a broken
// snippet fails that test alone.
func newCodex(t *testing.T, w *world) *codex {
	t.Helper()
	t.Cleanup(func() { killOurs(w) })
	return &codex{w: w, bin: realClient(t, "codex"), server: "[mcp_servers.chat]\n" +
		"command = " + tomlString(chatBin) + "\n" +
		`args = ["serve"]` + "\n" +
		`default_tools_approval_mode = "approve"` + "\n" +
		"env = { MCPP_CHAT_DB = " + tomlString(w.db) + " }\n"}
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// configure writes config.toml: the model provider at url, then the
// server table.
func (c *codex) configure(t *testing.T, url string) {
	t.Helper()
	dir := filepath.Join(c.w.home, ".codex")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The model is pinned: Codex 0.171's default (gpt-6.2-sol) works in
	// "code mode", calling tools from JavaScript through an exec tool;
	// gpt-5.5 calls them directly, after tool_search.
	writeFile(t, filepath.Join(dir, "config.toml"), `model = "gpt-5.5"
model_provider = "scripted"
# Nothing leaves the machine: no update check, no analytics.
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.scripted]
name = "scripted model"
base_url = `+tomlString(url+"/v1")+`
wire_api = "responses"
env_key = "SCRIPTED_MODEL_KEY"
# A failed request is a failed test; retrying only takes longer.
request_max_retries = 0
stream_max_retries = 0

`+c.server)
	if c.setUp {
		if out, errs, code := c.w.run("setup", "codex", "--write"); code != 0 {
			t.Fatalf("mcpp-chat setup codex --write: exit %d\n%s%s", code, out, errs)
		}
	}
}

// run runs `codex exec` in dir against model and waits for it; the JSON
// events it printed are returned.
func (c *codex) run(t *testing.T, dir string, model *scripted.Server, prompt string, extra ...string) []map[string]any {
	t.Helper()
	c.configure(t, model.URL)
	argv := append([]string{c.bin, "exec", "--skip-git-repo-check", "--json"}, extra...)
	p := startCLI(t, dir, cliEnv(c.w, append([]string{"SCRIPTED_MODEL_KEY=dummy"}, c.env...)...), nil, append(argv, prompt)...)
	err := p.wait(t)
	all, _, _ := p.stdout.snapshot()
	events := jsonLines(all)
	if err != nil {
		t.Fatalf("codex exec %q in %s: %v\n%s", prompt, dir, err, tail(strings.Join(all, "\n"), 4000))
	}
	if countType(events, "turn.completed") == 0 {
		t.Fatalf("codex exec %q: the turn did not complete:\n%s", prompt, tail(strings.Join(all, "\n"), 4000))
	}
	return events
}

func (c *codex) session(t *testing.T, dir, prompt string, steps ...scripted.Step) *scripted.Server {
	t.Helper()
	model := startModel(t, steps...)
	c.run(t, dir, model, prompt)
	return model
}

func (c *codex) toldAtStart() bool { return false }

// 1. The server starts, Codex offers it to the model, and a call returns
// both text contents — the display, then the result JSON.
func TestCodexOffersTheServerAndReturnsBothContents(t *testing.T) {
	w := newWorld(t)
	c := newCodex(t, w)
	gw := gitRepo(t, w, "mesh-gw")
	model := c.session(t, gw, "who am I on the chat?",
		scripted.Do(scripted.MCP("chat", "chat_whoami", map[string]any{"about": "the gateway"})),
		scripted.End("done"))

	// Codex lists the deferred namespace with the first paragraph of
	// the server's instructions, then loads its tools by search.
	_, instructions := serverFacts(t, w, gw)
	opening, _, _ := strings.Cut(instructions, "\n")
	if first := firstTurn(t, model); !first.Contains("mcp__chat: " + opening) {
		t.Errorf("the first turn does not offer the chat namespace with the server's instructions %q", opening)
	}
	got := results(model, "chat_whoami")
	if len(got) != 1 {
		t.Fatalf("the model got %d chat_whoami results, want 1", len(got))
	}
	// Codex puts its own "Wall time: … Output:" part first.
	contents := got[0].Contents
	if n := len(contents); got[0].IsError || n < 2 || !strings.HasPrefix(contents[n-2], "**You are mesh-gw**") {
		t.Fatalf("chat_whoami did not reach the model as the display then the JSON: %q", contents)
	}
	var who struct {
		Me    string  `json:"me"`
		About *string `json:"about"`
	}
	if err := json.Unmarshal([]byte(contents[len(contents)-1]), &who); err != nil || who.Me != "mesh-gw" || who.About == nil || *who.About != "the gateway" {
		t.Errorf("the last content is not the result JSON of mesh-gw (%v): %q", err, contents[len(contents)-1])
	}
}

// Codex shows the model no MCP tool until its tool_search finds it (8
// results at most, ranked over names and descriptions): searching the
// words of a tool's name must find that tool.
func TestCodexFindsEachToolByTheWordsOfItsName(t *testing.T) {
	w := newWorld(t)
	c := newCodex(t, w)
	gw := gitRepo(t, w, "mesh-gw")
	tools, _ := serverFacts(t, w, gw)
	var steps []scripted.Step
	queries := make([]string, len(tools))
	for i, tool := range tools {
		queries[i] = strings.ReplaceAll(strings.TrimPrefix(tool, "chat_"), "_", " ")
		steps = append(steps, scripted.Do(scripted.Builtin("tool_search", map[string]any{"query": queries[i]})))
	}
	model := c.session(t, gw, "find the chat tools", append(steps, scripted.End("done"))...)

	var found [][]string // what each search returned, in order
	for _, turn := range turns(model) {
		for _, r := range turn.Results {
			if r.Name == "tool_search" {
				found = append(found, r.Contents)
			}
		}
	}
	if len(found) != len(tools) {
		t.Fatalf("%d searches came back, want %d", len(found), len(tools))
	}
	for i, tool := range tools {
		if !slices.Contains(found[i], scripted.CodexName("chat", tool)) {
			t.Errorf("tool_search %q does not find %s; it finds %q", queries[i], tool, found[i])
		}
	}
}

// 2. The party is the git repository Codex starts in: at its root, in a
// subfolder, and with -C from another repository.
func TestCodexPartyIsTheRepoItStartsIn(t *testing.T) {
	w := newWorld(t)
	c := newCodex(t, w)
	gw, other := gitRepo(t, w, "mesh-gw"), gitRepo(t, w, "elsewhere")
	deep := filepath.Join(gw, "src", "radio")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		args      []string
	}{
		{"root", gw, nil},
		{"subfolder", deep, nil},
		{"-C", other, []string{"-C", deep}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := startModel(t, scripted.Do(scripted.MCP("chat", "chat_whoami", map[string]any{})), scripted.End("done"))
			c.run(t, tc.dir, model, "who am I on the chat?", tc.args...)
			var who struct{ Me, Workspace string }
			mustResult(t, model, "chat_whoami", &who)
			if who.Me != "mesh-gw" || who.Workspace != gw {
				t.Errorf("Codex in %s %v: the party is %s at %s, want mesh-gw at %s", tc.dir, tc.args, who.Me, who.Workspace, gw)
			}
		})
	}
}

// 4. Two sessions in two git repositories converse (without hooks, each
// looks at chat_inbox first).
func TestCodexTwoReposConverse(t *testing.T) {
	w := newWorld(t)
	converse(t, w, newCodex(t, w))
}

// 5. A long backlog reaches the model whole.
func TestCodexReadsALongBacklogWhole(t *testing.T) {
	w := newWorld(t)
	backlogReachesTheModel(t, w, newCodex(t, w))
}

// The snippet `mcpp-chat setup codex` prints, pasted into config.toml as
// printed, with MCPP_CHAT_DB exported in the shell as a user of another
// database does: a call goes through and writes to that database.
func TestCodexSetupSnippetWorksAsPrinted(t *testing.T) {
	w := newWorld(t)
	c := newCodex(t, w)
	out, errs, code := w.run("setup", "codex")
	if code != 0 {
		t.Fatalf("mcpp-chat setup codex: exit %d\n%s%s", code, out, errs)
	}
	c.server = out
	gw := gitRepo(t, w, "mesh-gw")
	model := startModel(t,
		scripted.Do(scripted.MCP("chat", "chat_whoami", map[string]any{"about": "set up as printed"})),
		scripted.End("done"))
	c.run(t, gw, model, "who am I on the chat?")

	got := results(model, "chat_whoami")
	if len(got) != 1 || got[0].IsError || !strings.Contains(got[0].Text, `"me":"mesh-gw"`) {
		t.Fatalf("with the printed snippet, chat_whoami reached the model as %+v, want mesh-gw's answer", got)
	}
	var who struct {
		KnownParties []struct {
			Name  string  `json:"name"`
			About *string `json:"about"`
		} `json:"known_parties"`
	}
	w.mustCall(gw, "chat_whoami", map[string]any{}, &who)
	for _, p := range who.KnownParties {
		if p.Name == "mesh-gw" && p.About != nil && *p.About == "set up as printed" {
			return
		}
	}
	t.Fatalf("the call did not write to MCPP_CHAT_DB (%s): it knows %+v", w.db, who.KnownParties)
}
