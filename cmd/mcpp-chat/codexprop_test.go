package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/codexconfig"
)

// genConfig makes random Codex configs: the person's tables, keys,
// comments, strings of every kind (multi-line ones holding lines that
// look like headers and comments), arrays and inline tables over several
// lines, dates, odd numbers; another chat's server and hooks; tables of
// ours in the forms setup wrote before (another checkout, another
// database, the env as a table, a copy twice) or none; a byte order mark
// and CRLF line ends or not.
type genConfig struct {
	r    *rand.Rand
	ours struct{ exe, hook string }
	hub  struct{ exe, hook string }
	n    int // names made so far, each unique
}

// part is one table of a generated file, the person's or ours.
type part struct {
	text string
	ours bool
}

func (g *genConfig) name() string {
	g.n++
	switch g.r.IntN(4) {
	case 0:
		return fmt.Sprintf("%q", fmt.Sprintf("key %d", g.n))
	case 1:
		return fmt.Sprintf("'lit.%d'", g.n)
	}
	return fmt.Sprintf("k%d_%c", g.n, 'a'+rune(g.r.IntN(26)))
}

func (g *genConfig) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *genConfig) value(depth int) string {
	switch k := g.r.IntN(13); {
	case k == 0:
		return g.pick("42", "-17", "1_000", "0x1F", "0o17", "0b101", "+3")
	case k == 1:
		return g.pick("3.14", "-0.0", "1e10", "6.02e+23", "inf", "-inf", "nan")
	case k == 2:
		return g.pick("true", "false")
	case k == 3:
		return g.pick(`"plain"`, `"quote \" and \\ and \t tab"`, `"unicode \u00e9 é"`, `"hash # inside"`, `"[not.a.table]"`, `""`)
	case k == 4:
		return g.pick(`'C:\path\to'`, `'it is'`, `'# not a comment'`, `''`)
	case k == 5:
		return g.pick("\"\"\"\n[not.a.table]\n# not a comment\nend\"\"\"", "\"\"\"\\\n  folded \\\"\"\" \"\"\"", "\"\"\"\n\n\"\"\"")
	case k == 6:
		return g.pick("'''\n[[not.an.array]]\n'''", "'''one line'''", "'''\n# c\n'''")
	case k == 7:
		return g.pick("1979-05-27T07:32:00Z", "1979-05-27T00:32:00.999999-07:00", "1979-05-27", "07:32:00", "1979-05-27T07:32:00")
	case k == 8 && depth < 2:
		return "[" + g.value(depth+1) + ", " + g.value(depth+1) + "]"
	case k == 9 && depth < 2:
		return "[\n  " + g.value(depth+1) + ", # a comment [x]\n  " + g.value(depth+1) + ",\n]"
	case k == 10 && depth < 2:
		return "{ " + g.name() + " = " + g.value(depth+1) + ", " + g.name() + " = " + g.value(depth+1) + " }"
	case k == 11 && depth < 2:
		return "{\n  " + g.name() + " = " + g.value(depth+1) + ",\n}" // TOML 1.1, as Codex reads it
	case k == 12 && depth < 2:
		return "[{ a = 1 }, { b = " + g.value(depth+1) + " }]"
	}
	return `"x"`
}

// keys are a table's key lines, with comments and blank lines between.
func (g *genConfig) keys(n int) string {
	var b strings.Builder
	for range n {
		switch g.r.IntN(6) {
		case 0:
			b.WriteString("# " + g.pick("a comment", "[looks.like.a.table]", "hooks = true", "") + "\n")
		case 1:
			b.WriteString("\n")
		}
		sep := g.pick(" = ", "=", "  =  ")
		indent := g.pick("", "", "  ", "\t")
		key := g.name()
		if g.r.IntN(5) == 0 {
			key += "." + g.name() // a dotted key: a table of its own
		}
		line := indent + key + sep + g.value(0)
		if g.r.IntN(3) == 0 {
			line += g.pick(" # trailing", "  # [x] = 1", " #")
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func (g *genConfig) table(header string, n int) string {
	return header + g.pick("", " # a header comment") + "\n" + g.keys(n)
}

// file makes one config: its parts in order.
func (g *genConfig) file() []part {
	var parts []part
	person := func(s string) { parts = append(parts, part{text: s}) }
	ours := func(s string) { parts = append(parts, part{text: s, ours: true}) }
	person(g.keys(g.r.IntN(4)))
	hooks := func(prefix, hook, ev string) string {
		return "[[hooks." + ev + "]]\nhooks = [{ type = \"command\", command = " + codexconfig.Quote(prefix+shellQuote(hook)+" --event "+ev) + ", timeout = 10 }]\n"
	}
	features := g.r.IntN(4)
	once := map[int]bool{}
	for range 2 + g.r.IntN(8) {
		k := g.r.IntN(10)
		if (k == 1 || k == 3) && once[k] {
			k = 4
		}
		once[k] = true
		switch k {
		case 0:
			person(g.table("[mcp_servers."+g.name()+"]", 0) + "command = \"docs-server\"\nargs = [\"--stdio\"]\nenv = { TOKEN_FILE = \"/x\" }\n")
		case 1:
			person("[mcp_servers.hub]\ncommand = " + codexconfig.Quote(g.hub.exe) + "\nargs = [\"serve\"]\n")
			person(hooks("", g.hub.hook, g.pick("Stop", "SessionStart")))
		case 2:
			person("[[hooks.Stop]]\nhooks = [{ type = \"command\", command = \"notify-send done\" }]\n")
		case 3:
			person("[hooks.state.\"/home/you/.codex/config.toml:stop:0:0\"]\ntrusted_hash = \"sha256:00\"\n")
		case 4:
			person(g.table("[[agents]]", 1+g.r.IntN(3)))
		case 5:
			person(g.table("[profiles."+g.name()+"]", g.r.IntN(4)))
		default:
			person(g.table("["+g.name()+"]", g.r.IntN(5)))
		}
	}
	if features > 0 {
		t := g.table("[features]", g.r.IntN(3))
		switch features {
		case 2:
			t += g.pick("hooks = true\n", "hooks = false # off on purpose\n", "codex_hooks = true\n", "codex_hooks = false\n", "hooks=true\n")
		case 3:
			if g.r.IntN(2) == 0 {
				// what --write added before: ours, inside the person's table
				parts = append(parts, part{text: t})
				ours("hooks = true " + codexMarker + "\n")
				t = ""
			}
		}
		if t != "" {
			person(t)
		}
	} else if g.r.IntN(3) == 0 {
		ours("[features] " + codexMarker + "\nhooks = true " + codexMarker + "\n")
	}
	// Tables of ours in the forms setup wrote, or none.
	exe, hook, prefix := g.ours.exe, g.ours.hook, ""
	if g.r.IntN(2) == 0 {
		exe, hook, prefix = "/old/bin/mcpp-chat", "/old/bin/mcpp-chat-hook", g.pick("", "MCPP_CHAT_DB=/old/chat.db ")
	}
	switch g.r.IntN(4) {
	case 1:
		ours("[mcp_servers.chat]\ncommand = " + codexconfig.Quote(exe) + "\nargs = [\"serve\"]\ndefault_tools_approval_mode = \"approve\"\n")
	case 2:
		ours("[mcp_servers.chat]\ncommand = " + codexconfig.Quote(exe) + "\nargs = [\"serve\"]\n\n[mcp_servers.chat.env]\nMCPP_CHAT_DB = \"/old/chat.db\"\n")
	}
	if g.r.IntN(2) == 0 {
		for _, ev := range hookEvents {
			ours(hooks(prefix, hook, ev))
			if g.r.IntN(4) == 0 {
				ours(hooks(prefix, hook, ev)) // twice
			}
		}
	}
	// The tables in a random order: arrays of tables stay arrays.
	g.r.Shuffle(len(parts)-1, func(i, j int) { parts[i+1], parts[j+1] = parts[j+1], parts[i+1] })
	return keepFeaturesLine(parts)
}

// keepFeaturesLine puts a line of ours meant for [features] back after
// that table, where it belongs, after the shuffle.
func keepFeaturesLine(parts []part) []part {
	for i, p := range parts {
		if !p.ours || !strings.HasPrefix(p.text, "hooks = true ") {
			continue
		}
		line := parts[i]
		rest := append(append([]part(nil), parts[:i]...), parts[i+1:]...)
		for j, q := range rest {
			if !q.ours && strings.HasPrefix(q.text, "[features]") {
				return append(rest[:j+1], append([]part{line}, rest[j+1:]...)...)
			}
		}
	}
	return parts
}

// render writes parts as a file; only the person's when personOnly.
func render(parts []part, bom, crlf, personOnly bool) []byte {
	var b strings.Builder
	for _, p := range parts {
		if p.ours && personOnly {
			continue
		}
		text := p.text
		if strings.HasPrefix(text, "[") && b.Len() > 0 && !strings.HasSuffix(b.String(), "\n\n") {
			b.WriteString("\n")
		}
		b.WriteString(text)
	}
	s := b.String()
	if crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	if bom {
		s = "\ufeff" + s
	}
	return []byte(s)
}

// subsequence reports every line of want in got, in order, and the
// byte order mark of the file in both or neither.
func subsequence(want, got []byte) bool {
	bom := "\ufeff"
	if strings.HasPrefix(string(want), bom) != strings.HasPrefix(string(got), bom) {
		return false
	}
	g := strings.Split(strings.TrimPrefix(string(got), bom), "\n")
	i := 0
	for _, line := range strings.Split(strings.TrimPrefix(string(want), bom), "\n") {
		for i < len(g) && g[i] != line {
			i++
		}
		if i == len(g) {
			return false
		}
		i++
	}
	return true
}

// Over many generated configs: --write leaves a file Codex can read with
// every key of the person's as it was and every line of theirs byte for
// byte; a second --write changes nothing; --remove after it gives back
// exactly the person's keys, their lines byte for byte.
func TestSetupCodexEditsKeepEveryKeyOfThePersons(t *testing.T) {
	dir := fakeInstall(t, true)
	in, err := findInstallation(func(k string) string { return map[string]string{"HOME": t.TempDir()}[k] })
	if err != nil {
		t.Fatal(err)
	}
	hubExe, hubHook := otherChat(t)
	runs := 600
	if testing.Short() {
		runs = 100
	}
	for seed := range runs {
		g := &genConfig{r: rand.New(rand.NewPCG(uint64(seed), 31))}
		g.ours.exe, g.ours.hook = filepath.Join(dir, "bin", "mcpp-chat"), filepath.Join(dir, "bin", "mcpp-chat-hook")
		g.hub.exe, g.hub.hook = hubExe, hubHook
		parts := g.file()
		bom, crlf := g.r.IntN(5) == 0, g.r.IntN(4) == 0
		file, mine := render(parts, bom, crlf, false), render(parts, bom, crlf, true)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d: "+format+"\n--- the file:\n%s\n--- the person's part:\n%s", append(append([]any{seed}, args...), file, mine)...)
		}
		person, err := codexconfig.Decode(mine)
		if err != nil {
			fail("the generator made a file that is not TOML: %v", err)
		}
		if _, err := codexconfig.Decode(file); err != nil {
			fail("the generator made a file that is not TOML: %v", err)
		}

		w, err := mergeCodex(in, file)
		if err != nil {
			fail("--write refused: %v", err)
		}
		written, err := codexconfig.Decode(w.out)
		if err != nil {
			fail("--write left a file that is not TOML: %v\n%s", err, w.out)
		}
		if d := codexconfig.Difference(withoutOurs(written, person, g.ours.hook), person); d != "" {
			fail("--write changed the person's %s:\n%s", d, w.out)
		}
		if !subsequence(mine, w.out) {
			fail("--write changed a line of the person's:\n%s", w.out)
		}
		again, err := mergeCodex(in, w.out)
		if err != nil || string(again.out) != string(w.out) || len(again.changes) > 0 {
			fail("a second --write changed %v (%v):\n%s", again.changes, err, again.out)
		}
		r, err := unmergeCodex(in, w.out)
		if err != nil {
			fail("--remove refused: %v", err)
		}
		removed, err := codexconfig.Decode(r.out)
		if err != nil {
			fail("--remove left a file that is not TOML: %v\n%s", err, r.out)
		}
		if d := codexconfig.Difference(removed, person); d != "" {
			fail("--write then --remove did not give back the person's keys (%s):\n%s", d, r.out)
		}
		if !subsequence(mine, r.out) {
			fail("--remove changed a line of the person's:\n%s", r.out)
		}
	}
}

// withoutOurs is a parsed config without what --write adds: the server
// table named chat, hook groups running this install's hook, and the
// feature flag (and [features]) where the person had none.
func withoutOurs(doc, person map[string]any, hook string) map[string]any {
	keys := [][]string{{"mcp_servers", "chat"}}
	if lookup(person, "features", "hooks") == nil {
		keys = append(keys, []string{"features", "hooks"})
	}
	if person["features"] == nil {
		keys = append(keys, []string{"features"})
	}
	s := codexconfig.Scope{Keys: keys, Elem: func(path []string, elem map[string]any) bool {
		if len(path) != 2 || path[0] != "hooks" {
			return false
		}
		handlers, _ := elem["hooks"].([]any)
		if len(handlers) != 1 {
			return false
		}
		h, _ := handlers[0].(map[string]any)
		cmd, _ := h["command"].(string)
		return strings.Contains(cmd, hook)
	}}
	return s.Prune(doc)
}
