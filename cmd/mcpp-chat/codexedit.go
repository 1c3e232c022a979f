package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/codexconfig"
	"github.com/mcpp/mcpp-chat/internal/config"
)

// codexMarker ends each line setup codex --write adds to a table that is
// not its own ([features]), and the header of a [features] it adds:
// --remove takes out only what carries it, so the person's own
// `hooks = true` stays.
const codexMarker = "# added by mcpp-chat setup codex"

// codexEdit is one --write or --remove of a Codex config: the file line by
// line, what the TOML parser reads in it, what changed, what was left as
// the person has it (and what that means), and the scope the parser
// judges the edit by: everything outside it must stay as it was.
type codexEdit struct {
	in      installation
	f       *codexconfig.File
	doc     map[string]any
	out     []byte
	changes []codexChange
	notes   []string
	scope   codexconfig.Scope
	// oldChat is the store the server table named chat opened before the
	// edit: hooks that went with it are ours too.
	oldChat string
}

func newCodexEdit(in installation, data []byte) (*codexEdit, error) {
	doc, err := codexconfig.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%v — fix it (Codex cannot read it either) or move it aside, then run setup codex again", err)
	}
	e := &codexEdit{in: in, f: codexconfig.ParseFile(data), doc: doc}
	e.scope.Elem = e.ownsHookElem
	return e, nil
}

func (e *codexEdit) change(what, action, detail string) {
	e.changes = append(e.changes, codexChange{what, action, detail})
}

func (e *codexEdit) note(format string, args ...any) {
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
}

func (e *codexEdit) may(path ...string) { e.scope.Keys = append(e.scope.Keys, path) }

// finish formats the edit and has the parser judge it: the file must
// still be TOML and every key of the person's as it was.
func (e *codexEdit) finish(data []byte) error {
	if len(e.changes) == 0 {
		e.out = data
		return nil
	}
	e.out = e.f.Bytes()
	if err := codexconfig.Check(data, e.out, e.scope); err != nil {
		return fmt.Errorf("setup cannot change it safely: %v — add what `mcpp-chat setup codex` prints by hand", err)
	}
	return nil
}

// inlineRoot matches a root key that holds one of our tables inline,
// which a table header of the same name would contradict.
var inlineRoot = regexp.MustCompile(`^\s*(features|hooks|mcp_servers)\s*[.=]`)

// mergeCodex merges our tables into a Codex config. The server table
// named chat is ours (a server of another program by that name is
// refused) and is updated in place, keeping the person's other keys;
// another server running mcpp-chat is taken out only when it is exactly
// what we would write (its tools would show twice), else left — a hub
// beside a personal chat. A key of the person's in [features] is never
// flipped: the flag is added, marked, only where there is none. Our hook
// groups on this chat (or the one our server table named, or on none
// that runs) are updated in place, one per event; others are left.
// Everything else keeps its bytes, and the parser judges the result.
func mergeCodex(in installation, data []byte) (*codexEdit, error) {
	e, err := newCodexEdit(in, data)
	if err != nil {
		return nil, err
	}
	if err := e.refuseForms(); err != nil {
		return nil, err
	}
	t := codexTablesFor(in)
	if err := e.mergeServer(t); err != nil {
		return nil, err
	}
	e.mergeFeatures()
	for _, h := range t.hooks {
		e.mergeHook(h)
	}
	if in.noClaims {
		e.dropHook(claimsEvent)
	}
	return e, e.finish(data)
}

// refuseForms refuses tables of ours written in a form the line editor
// cannot extend (an appended header would contradict it).
func (e *codexEdit) refuseForms() error {
	for _, line := range e.f.Blocks[0].Lines {
		if inlineRoot.MatchString(line) {
			return fmt.Errorf("its top holds %q, a table written inline — add the tables `mcpp-chat setup codex` prints by hand", strings.TrimSpace(line))
		}
	}
	for _, b := range e.f.Blocks {
		if b.Name() == "hooks" && !b.Array && !b.Empty() {
			return fmt.Errorf("its [hooks] table holds hooks written inline — add the hook groups `mcpp-chat setup codex` prints by hand")
		}
	}
	if e.serverBlock("chat") < 0 && lookup(e.doc, "mcp_servers", "chat") != nil {
		return fmt.Errorf("its [mcp_servers] table holds chat written inline (chat = { … } or chat.command = …) — write it as a [mcp_servers.chat] table, as `mcpp-chat setup codex` prints it, and run setup codex --write again")
	}
	return nil
}

// serverBlock is the index of the [mcp_servers.NAME] table, -1 for none.
func (e *codexEdit) serverBlock(name string) int {
	for i, b := range e.f.Blocks {
		if !b.Array && len(b.Path) == 2 && b.Path[0] == "mcp_servers" && b.Path[1] == name {
			return i
		}
	}
	return -1
}

// lookup is the value at path in a parsed document, nil when absent.
func lookup(doc map[string]any, path ...string) any {
	var v any = doc
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		if v, ok = m[k]; !ok {
			return nil
		}
	}
	return v
}

// ourServer reports a [mcp_servers.NAME] table that runs mcpp-chat serve.
func ourServer(b codexconfig.Block) bool {
	if b.Array || len(b.Path) != 2 || b.Path[0] != "mcp_servers" {
		return false
	}
	raw, _ := b.Value("command")
	cmd, _ := codexconfig.String(raw)
	args, _ := b.Value("args")
	return isOurServer(cmd, codexconfig.Strings(args))
}

// under reports a table inside the server table named name.
func under(b codexconfig.Block, name string) bool {
	return len(b.Path) > 2 && b.Path[0] == "mcp_servers" && b.Path[1] == name
}

// serverStore is the store the parsed server table NAME opens when Codex
// starts it ("" when it cannot be told).
func (e *codexEdit) serverStore(name string) string {
	s, _ := lookup(e.doc, "mcp_servers", name).(map[string]any)
	cmd, _ := s["command"].(string)
	if cmd == "" {
		return ""
	}
	return registration{command: cmd, env: stringMap(s["env"])}.store(e.in.getenv)
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}

// ourServerValue is the server table we would write, as the parser reads
// it.
func ourServerValue(t codexTables) map[string]any {
	f := codexconfig.ParseFile(nil)
	f.Append([]string{"mcp_servers", "chat"}, false, "", serverKeys(t))
	doc, err := codexconfig.Decode(f.Bytes())
	if err != nil {
		return nil
	}
	v, _ := lookup(doc, "mcp_servers", "chat").(map[string]any)
	return v
}

// serverKeys are the server table's lines: its keys, and the env inline.
func serverKeys(t codexTables) [][2]string {
	keys := append([][2]string(nil), t.server...)
	if len(t.env) > 0 {
		keys = append(keys, [2]string{"env", codexconfig.InlineTable(t.env)})
	}
	return keys
}

func (e *codexEdit) mergeServer(t codexTables) error {
	e.mergeOtherServers(t)
	at := e.serverBlock("chat")
	if at < 0 {
		e.f.Append([]string{"mcp_servers", "chat"}, false, "", serverKeys(t))
		e.may("mcp_servers", "chat")
		e.change("server chat", "added", "")
		return nil
	}
	b := &e.f.Blocks[at]
	if !ourServer(*b) {
		raw, _ := b.Value("command")
		return fmt.Errorf("its server table [mcp_servers.chat] runs %s, another program — rename that table, and run setup codex --write again", raw)
	}
	e.oldChat = e.serverStore("chat")
	changed := false
	for _, kv := range t.server {
		key := kv[0]
		if key == "default_tools_approval_mode" {
			// The person may have chosen to approve each call.
			if v, ok := lookup(e.doc, "mcp_servers", "chat", key).(string); ok {
				if v != "approve" {
					e.note("[mcp_servers.chat] %s = %q: Codex asks before each chat call, and codex exec refuses them all (set it to \"approve\" to let them run)", key, v)
				}
				continue
			}
		}
		c, ok := b.Set(key, kv[1])
		if !ok {
			return fmt.Errorf("[mcp_servers.chat] writes %s on several lines — write it on one line, or replace the table with what `mcpp-chat setup codex` prints", key)
		}
		e.may("mcp_servers", "chat", key)
		changed = changed || c
	}
	c, err := e.setServerEnv(t.env)
	if err != nil {
		return err
	}
	if changed || c {
		e.change("server chat", "updated", "")
	}
	return nil
}

// mergeOtherServers takes out another server table of ours that is
// exactly what we would write, and leaves every other one, saying so.
func (e *codexEdit) mergeOtherServers(t codexTables) {
	want := ourServerValue(t)
	var out []codexconfig.Block
	for _, b := range e.f.Blocks {
		name := ""
		if len(b.Path) >= 2 && b.Path[0] == "mcp_servers" {
			name = b.Path[1]
		}
		if name == "" || name == "chat" || !ourServerName(e.f.Blocks, name) {
			out = append(out, b)
			continue
		}
		have, _ := lookup(e.doc, "mcp_servers", name).(map[string]any)
		if want == nil || codexconfig.Difference(have, want) != "" {
			if len(b.Path) == 2 {
				e.note("[mcp_servers.%s] runs mcpp-chat too, on the %s — another chat, or another setup of this one: if it is stale, delete that table yourself", name, storeName(e.serverStore(name)))
			}
			out = append(out, b)
			continue
		}
		if len(b.Path) == 2 {
			e.change("server "+name, "removed", "the same server as chat, a second time (its tools would show twice)")
			e.may("mcp_servers", name)
		}
	}
	e.f.Blocks = out
}

// ourServerName reports a server table NAME that runs mcpp-chat serve.
func ourServerName(blocks []codexconfig.Block, name string) bool {
	for _, b := range blocks {
		if len(b.Path) == 2 && b.Path[0] == "mcp_servers" && b.Path[1] == name && ourServer(b) {
			return true
		}
	}
	return false
}

// setServerEnv gives the server table's env our variables, as an inline
// env or in an [mcp_servers.chat.env] table, keeping the person's others
// and taking out our other variables (they would point elsewhere).
func (e *codexEdit) setServerEnv(env [][2]string) (bool, error) {
	for _, k := range config.OurVariables {
		e.may("mcp_servers", "chat", "env", k)
	}
	for i, b := range e.f.Blocks {
		if under(b, "chat") && len(b.Path) == 3 && b.Path[2] == "env" {
			changed := setEnvTable(&e.f.Blocks[i], env)
			if e.f.Blocks[i].Empty() {
				// Nothing of the person's left in it: the header goes too,
				// its comments and blank lines in front of what follows.
				if i > 0 {
					e.f.Blocks[i-1].Lines = append(e.f.Blocks[i-1].Lines, e.f.Blocks[i].Tail()...)
				}
				e.f.Blocks = append(e.f.Blocks[:i], e.f.Blocks[i+1:]...)
			}
			return changed, nil
		}
	}
	at := e.serverBlock("chat")
	c, ok := setEnv(&e.f.Blocks[at], env)
	if !ok {
		return false, fmt.Errorf("[mcp_servers.chat] writes env on several lines — write it on one line, or replace the table with what `mcpp-chat setup codex` prints")
	}
	return c, nil
}

// setEnv gives the server table's inline env our variables, keeping the
// person's others after them and taking out our other variables; an env
// left empty goes.
func setEnv(b *codexconfig.Block, ours [][2]string) (changed, ok bool) {
	pairs := append([][2]string(nil), ours...)
	old, had := b.Value("env")
	for _, kv := range codexconfig.Pairs(old) {
		if !config.IsOurVariable(kv[0]) {
			pairs = append(pairs, kv)
		}
	}
	if len(pairs) == 0 {
		return had && b.Delete("env"), true
	}
	return b.Set("env", codexconfig.InlineTable(pairs))
}

// setEnvTable sets our variables in an [mcp_servers.NAME.env] table and
// takes out our other ones.
func setEnvTable(b *codexconfig.Block, ours [][2]string) bool {
	changed := false
	want := map[string]bool{}
	for _, kv := range ours {
		want[kv[0]] = true
		c, _ := b.Set(kv[0], kv[1])
		changed = changed || c
	}
	for _, k := range config.OurVariables {
		if !want[k] {
			changed = b.Delete(k) || changed
		}
	}
	return changed
}

// mergeFeatures makes sure nothing of ours turns Codex's hooks off, and
// flips nothing of the person's: a [features] that says anything about
// hooks is left as it is (with what it means when it turns them off), one
// that says nothing gets hooks = true, marked as ours, and a file without
// [features] gets the table, marked.
func (e *codexEdit) mergeFeatures() {
	features, inDoc := e.doc["features"].(map[string]any)
	for _, key := range []string{codexHooksFeature, "codex_hooks"} {
		switch v, ok := features[key]; {
		case ok && v == false:
			e.note("[features] %s = false turns Codex's hooks off, so the hooks written here will not run — set it to true (or remove the line) if you want them", key)
			return
		case ok && key == "codex_hooks":
			e.note("[features] codex_hooks is the older name of hooks, which Codex 0.171 warns of at every start — rename it to hooks yourself")
			return
		case ok:
			return
		}
	}
	for i, b := range e.f.Blocks {
		if b.Name() != "features" || b.Array {
			continue
		}
		e.f.Blocks[i].Set(codexHooksFeature, "true "+codexMarker)
		e.may("features", codexHooksFeature)
		e.change("features."+codexHooksFeature, "set", "true")
		return
	}
	if inDoc {
		return // written as dotted keys: Codex 0.171 runs hooks without the flag
	}
	e.f.Append([]string{"features"}, false, codexMarker, [][2]string{{codexHooksFeature, "true " + codexMarker}})
	e.may("features")
	e.change("features."+codexHooksFeature, "added", "true")
}

// ourHookGroup is the event of a [[hooks.EVENT]] group that holds one
// handler, mcpp-chat's hook (not the Claude Code idle wake, which Codex
// cannot run); "" for any other table.
func ourHookGroup(b codexconfig.Block) string {
	if !b.Array || len(b.Path) != 2 || b.Path[0] != "hooks" {
		return ""
	}
	raw, _ := b.Value("hooks")
	handlers := codexconfig.Tables(raw)
	if len(handlers) != 1 {
		return ""
	}
	cmd, _ := codexconfig.String(handlers[0]["command"])
	h := parseHookLine(cmd)
	if !h.ours() || (h.event() != "" && h.event() != b.Path[1]) {
		return ""
	}
	return b.Path[1]
}

// ownsGroup reports one of our hook groups this edit may change: on this
// install's chat, the chat our server table named, or none that runs.
func (e *codexEdit) ownsGroup(b codexconfig.Block) bool {
	if ourHookGroup(b) == "" {
		return false
	}
	raw, _ := b.Value("hooks")
	cmd, _ := codexconfig.String(codexconfig.Tables(raw)[0]["command"])
	return e.in.ownsHook(parseHookLine(cmd), e.oldChat)
}

// ownsHookElem is ownsGroup as the parser reads the group: the judge's
// view of which [[hooks.EVENT]] elements are ours.
func (e *codexEdit) ownsHookElem(path []string, elem map[string]any) bool {
	if len(path) != 2 || path[0] != "hooks" {
		return false
	}
	handlers, _ := elem["hooks"].([]any)
	_, matcher := elem["matcher"] // the edit hook's (setupclaims.go)
	if len(handlers) != 1 || len(elem) != 1 && (len(elem) != 2 || !matcher) {
		return false
	}
	handler, _ := handlers[0].(map[string]any)
	cmd, _ := handler["command"].(string)
	h := parseHookLine(cmd)
	return h.ours() && (h.event() == "" || h.event() == path[1]) && e.in.ownsHook(h, e.oldChat)
}

func (e *codexEdit) mergeHook(h codexHook) {
	what := h.event + " hook"
	line := "[" + h.hooksLine() + "]"
	at := -1
	var out []codexconfig.Block
	left := false
	for _, b := range e.f.Blocks {
		if ourHookGroup(b) == h.event && !e.ownsGroup(b) {
			left = true
		}
		if ourHookGroup(b) != h.event || !e.ownsGroup(b) {
			out = append(out, b)
			continue
		}
		if at >= 0 {
			e.change(what, "removed", "a second copy (one per event)")
			continue
		}
		at = len(out)
		out = append(out, b)
	}
	e.f.Blocks = out
	if left {
		e.note("a [[hooks.%s]] group runs mcpp-chat's hook on another chat that works — that chat's own; doctor says which", h.event)
	}
	if at < 0 {
		keys := [][2]string{{"hooks", line}}
		if h.matcher != "" {
			keys = append([][2]string{{"matcher", codexconfig.Quote(h.matcher)}}, keys...)
		}
		e.f.Append([]string{"hooks", h.event}, true, "", keys)
		e.change(what, "added", h.command)
		return
	}
	c, _ := e.f.Blocks[at].Set("hooks", line)
	if h.matcher != "" {
		m, _ := e.f.Blocks[at].Set("matcher", codexconfig.Quote(h.matcher))
		c = c || m
	}
	if c {
		e.change(what, "updated", h.command)
	}
}

// dropHook takes out our group for event, if there is one: a hook the
// person chose not to have (--no-claims).
func (e *codexEdit) dropHook(event string) {
	var out []codexconfig.Block
	for _, b := range e.f.Blocks {
		if ourHookGroup(b) == event && e.ownsGroup(b) {
			e.change(event+" hook", "removed", "")
			continue
		}
		out = append(out, b)
	}
	e.f.Blocks = out
}

// unmergeCodex takes our tables out of a Codex config: the server table
// named chat when it runs mcpp-chat (with the tables inside it), another
// server table exactly like it, our hook groups (ownsGroup), and the
// feature flag and [features] header setup added (marked): never a key
// of the person's.
func unmergeCodex(in installation, data []byte) (*codexEdit, error) {
	e, err := newCodexEdit(in, data)
	if err != nil {
		return nil, err
	}
	if at := e.serverBlock("chat"); at >= 0 && ourServer(e.f.Blocks[at]) {
		e.oldChat = e.serverStore("chat")
	}
	want := ourServerValue(codexTablesFor(in))
	var out []codexconfig.Block
	for _, b := range e.f.Blocks {
		name := ""
		if len(b.Path) >= 2 && b.Path[0] == "mcp_servers" && ourServerName(e.f.Blocks, b.Path[1]) {
			name = b.Path[1]
		}
		have, _ := lookup(e.doc, "mcp_servers", name).(map[string]any)
		switch {
		case name == "chat" || name != "" && want != nil && codexconfig.Difference(have, want) == "":
			if len(b.Path) == 2 {
				e.change("server "+name, "removed", "")
				e.may("mcp_servers", name)
			}
			continue
		case name != "" && len(b.Path) == 2:
			e.note("[mcp_servers.%s] runs mcpp-chat on the %s: not this setup's table", name, storeName(e.serverStore(name)))
		case e.ownsGroup(b):
			e.change(b.Path[1]+" hook", "removed", "")
			continue
		case ourHookGroup(b) != "":
			e.note("a [[hooks.%s]] group runs mcpp-chat's hook on another chat that works — that chat's own", b.Path[1])
		case b.Name() == "features" && !b.Array:
			if b, keep := e.unmergeFeatures(b); keep {
				out = append(out, b)
			} else if len(out) > 0 {
				// Its comments and blank lines stay, in front of what follows.
				out[len(out)-1].Lines = append(out[len(out)-1].Lines, b.Tail()...)
			}
			continue
		}
		out = append(out, b)
	}
	if len(e.changes) > 0 {
		// The blank line --write put in front of our tables goes with them.
		last := &out[len(out)-1]
		for n := len(last.Lines); n > 0 && strings.TrimSpace(last.Lines[n-1]) == ""; n-- {
			last.Lines = last.Lines[:n-1]
		}
	}
	e.f.Blocks = out
	return e, e.finish(data)
}

// unmergeFeatures takes out the flag setup added (marked), and the
// [features] header it added when nothing else is left under it; keep is
// false when the table goes.
func (e *codexEdit) unmergeFeatures(b codexconfig.Block) (codexconfig.Block, bool) {
	if strings.HasSuffix(b.Line(codexHooksFeature), codexMarker) && b.Delete(codexHooksFeature) {
		e.may("features", codexHooksFeature)
		e.change("features."+codexHooksFeature, "removed", "")
	}
	if !b.Empty() || !strings.HasSuffix(strings.TrimSpace(b.Lines[0]), codexMarker) {
		return b, true
	}
	e.may("features")
	return b, false
}
