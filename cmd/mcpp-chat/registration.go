package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/codexconfig"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/redact"
)

// registration is one MCP server entry that runs mcpp-chat, found in a
// client's configuration.
type registration struct {
	where   string // e.g. "Claude Code, user scope (~/.claude.json)"
	name    string // the server's name in that file
	command string
	args    []string
	env     map[string]string
	// onlyItsEnv: the client passes the server its table's env and a few
	// basics, not the user's shell (Codex).
	onlyItsEnv bool
	// scope is the Claude Code scope it is registered in: user, local
	// (folder names the project) or project (in folder's .mcp.json).
	scope, folder string
}

// mcpServer is a server entry as Claude Code's files write it.
type mcpServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

func isOurServer(command string, args []string) bool {
	return filepath.Base(command) == "mcpp-chat" && len(args) > 0 && args[0] == "serve"
}

// claudeRegistrations finds mcpp-chat in Claude Code's user file
// (~/.claude.json: user scope, and local scope under projects[<folder>])
// and in the party's committed .mcp.json.
func claudeRegistrations(getenv func(string) string, root string) (found []registration, looked []string) {
	file := claudeUserFile(getenv)
	if file != "" {
		looked = append(looked, file)
		var doc struct {
			MCPServers map[string]mcpServer `json:"mcpServers"`
			Projects   map[string]struct {
				MCPServers map[string]mcpServer `json:"mcpServers"`
			} `json:"projects"`
		}
		if data, err := os.ReadFile(file); err == nil && json.Unmarshal(data, &doc) == nil {
			found = append(found, ours(doc.MCPServers, "Claude Code, user scope ("+file+")", "user", "")...)
			for dir := root; ; dir = filepath.Dir(dir) {
				if p, ok := doc.Projects[dir]; ok {
					found = append(found, ours(p.MCPServers, "Claude Code, local scope for "+dir+" ("+file+")", "local", dir)...)
				}
				if dir == filepath.Dir(dir) {
					break
				}
			}
		}
	}
	project := filepath.Join(root, ".mcp.json")
	looked = append(looked, project)
	var doc struct {
		MCPServers map[string]mcpServer `json:"mcpServers"`
	}
	if data, err := os.ReadFile(project); err == nil && json.Unmarshal(data, &doc) == nil {
		found = append(found, ours(doc.MCPServers, "Claude Code, project scope ("+project+")", "project", root)...)
	}
	return found, looked
}

// claudeUserFile is Claude Code's own file: $CLAUDE_CONFIG_DIR/.claude.json
// or ~/.claude.json.
func claudeUserFile(getenv func(string) string) string {
	if dir := getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		return filepath.Join(dir, ".claude.json")
	}
	if home := homeDir(getenv); home != "" {
		return filepath.Join(home, ".claude.json")
	}
	return ""
}

func homeDir(getenv func(string) string) string {
	if home := getenv("HOME"); home != "" {
		return home
	}
	home, _ := os.UserHomeDir()
	return home
}

func ours(servers map[string]mcpServer, where, scope, folder string) []registration {
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []registration
	for _, name := range names {
		s := servers[name]
		if isOurServer(s.Command, s.Args) {
			out = append(out, registration{where: where, name: name, command: s.Command, args: s.Args, env: s.Env, scope: scope, folder: folder})
		}
	}
	return out
}

// codexRegistrations finds mcpp-chat in Codex's config.toml
// ($CODEX_HOME/config.toml or ~/.codex/config.toml), read by the TOML
// parser Codex's edits are judged by; problem says why the file cannot be
// read (Codex would refuse it too).
func codexRegistrations(getenv func(string) string) (found []registration, looked, problem string) {
	file := codexConfigFile(getenv)
	if file == "" {
		return nil, "", ""
	}
	data, err := config.ReadSmallFile(file, maxSettingsBytes)
	if err != nil {
		return nil, file, ""
	}
	servers, err := codexServers(data)
	if err != nil {
		return nil, file, fmt.Sprintf("%s is %v: Codex does not start with it — fix it", file, err)
	}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := servers[name]
		if isOurServer(s.Command, s.Args) {
			found = append(found, registration{where: "Codex (" + file + ")", name: name, command: s.Command, args: s.Args, env: s.Env, onlyItsEnv: true})
		}
	}
	return found, file, ""
}

// codexServers are the [mcp_servers.NAME] tables of a Codex config, in
// whatever form TOML allows: their command, args and env.
func codexServers(data []byte) (map[string]*mcpServer, error) {
	doc, err := codexconfig.Decode(data)
	if err != nil {
		return nil, err
	}
	all, _ := doc["mcp_servers"].(map[string]any)
	out := map[string]*mcpServer{}
	for name, v := range all {
		t, _ := v.(map[string]any)
		s := &mcpServer{Env: stringMap(t["env"])}
		s.Command, _ = t["command"].(string)
		args, _ := t["args"].([]any)
		for _, a := range args {
			if a, ok := a.(string); ok {
				s.Args = append(s.Args, a)
			}
		}
		out[name] = s
	}
	return out, nil
}

// checkRegistrations says where mcpp-chat is registered and warns about an
// entry that would not run, or would run another binary or open another
// database than this install. It returns false when something is wrong.
func checkRegistrations(w io.Writer, in install, exe string, getenv func(string) string, b *builds) bool {
	found, looked := claudeRegistrations(getenv, in.party.Root)
	codex, codexFile, problem := codexRegistrations(getenv)
	found = append(found, codex...)
	if codexFile != "" {
		looked = append(looked, codexFile)
	}
	if problem != "" {
		fmt.Fprintf(w, "warning:     %s\n", problem)
	}
	if len(found) == 0 {
		me := invocation(getenv)
		fmt.Fprintf(w, "registered:  nowhere (looked in %s) — to connect Claude Code run the line `%s setup claude` prints; for Codex, `%s setup codex`\n", strings.Join(looked, ", "), me, me)
		return problem == ""
	}
	ok := problem == ""
	for _, r := range found {
		fmt.Fprintf(w, "registered:  %q in %s: %s %s\n", r.name, r.where, r.command, strings.Join(r.args, " "))
		for _, p := range r.problems(in, exe, getenv, b) {
			fmt.Fprintf(w, "warning:     %s\n", p)
			ok = false
		}
	}
	return ok
}

// problems lists what is wrong with a registration, each with its fix.
// Another binary than this one is fine when it is this install all the
// same — the checkout's bin/ beside a copy make install PREFIX=… made:
// the same build, on the same chat.
func (r registration) problems(in install, exe string, getenv func(string) string, b *builds) []string {
	var out []string
	fix := r.fix(invocation(getenv))
	if problem := runnable(r.command, invocation(getenv)); problem != "" {
		return append(out, fmt.Sprintf("%s: the server %s — %s", r.where, problem, fix))
	}
	if !sameFile(r.command, exe) {
		if other := b.other(r.command, "mcpp-chat"); other != "" {
			out = append(out, fmt.Sprintf("%s runs %s, not this install's %s (%s) — %s", r.where, r.command, exe, other, fix))
		}
	}
	if store := r.store(getenv); store != "" && store != in.paths.Store {
		out = append(out, fmt.Sprintf("%s: its server opens the %s, not this install's %s: those sessions would not see these — %s", r.where, storeName(store), storeName(in.paths.Store), fix))
	}
	return out
}

// fix is how to replace the entry with this install's, as a command that
// works: `claude mcp add` refuses a name that is taken, so the entry goes
// first.
func (r registration) fix(me string) string {
	switch {
	case r.onlyItsEnv && r.name == "chat":
		return "run: " + me + " setup codex --write (it updates that table)"
	case r.onlyItsEnv:
		return "delete the [mcp_servers." + r.name + "] table, then run: " + me + " setup codex --write"
	case r.scope == "project":
		return "set its command (and env) in " + filepath.Join(r.folder, ".mcp.json") + " to what `" + me + " setup claude` prints"
	case r.scope == "local":
		return "in " + r.folder + " run: claude mcp remove --scope local " + shellQuote(r.name) + ", then the line `" + me + " setup claude` prints"
	}
	return "run: claude mcp remove --scope user " + shellQuote(r.name) + ", then the line `" + me + " setup claude` prints"
}

// builds remembers, for one doctor run, what each program of ours at
// another path says it is (its --version).
type builds struct {
	ctx  context.Context
	seen map[string]string
}

func newBuilds(ctx context.Context) *builds { return &builds{ctx: ctx, seen: map[string]string{}} }

// other says how the program at prog (mcpp-chat or mcpp-chat-hook, by
// name) differs from this build, "" when it is this build.
func (b *builds) other(prog, name string) string {
	if b == nil {
		b = newBuilds(context.Background())
	}
	says, ok := b.seen[prog]
	if !ok {
		says = versionOf(b.ctx, prog, "--version")
		b.seen[prog] = says
	}
	switch says {
	case name + " " + version:
		return ""
	case "":
		return "it does not say its version"
	}
	return fmt.Sprintf("another build: %q, this is %s", says, version)
}

// store is the store the registered server would open when its client
// starts it: with its env's variables, HOME and PATH, and nothing else of
// the user's — Codex passes a server no other variable of theirs, and
// Claude Code only what launched it ("" when it cannot be told).
func (r registration) store(getenv func(string) string) string {
	prog := r.command
	if !strings.Contains(prog, "/") {
		found, err := exec.LookPath(prog)
		if err != nil {
			return ""
		}
		prog = found
	}
	return effectiveStore(prog, r.env, getenv)
}

// effectiveStore is the store a program of ours opens when a client
// starts it with the variables vars: sqlite:<file>, a team store's or a
// hub's URL ("" when it cannot be told).
func effectiveStore(prog string, vars map[string]string, env func(string) string) string {
	paths, _, err := config.Resolve(config.ClientSees(config.Env(env), vars), prog)
	if err != nil {
		return ""
	}
	return paths.Store
}

// storeName names a store for a message: "database <file>", or "team
// store <URL>" (a hub's too) without its password.
func storeName(store string) string {
	if path, ok := strings.CutPrefix(store, "sqlite:"); ok {
		return "database " + path
	}
	return "team store " + redact.URL(store)
}

// sameFile reports two paths naming one file (symlinks resolved).
func sameFile(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}
