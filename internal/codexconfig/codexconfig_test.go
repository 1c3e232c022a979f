package codexconfig

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

const sample = `model = "gpt-5.5" # the default
notes = """
[not a table]
"""
matrix = [
  [1, 2],
  ["[x]", 3],
]

[mcp_servers."chat"]
command = '/abs/bin/mcpp-chat'
args = ["serve", "--workspace", "a,b"]
env = { MCPP_CHAT_DB = "/abs/chat.db", X = "1" }

[mcp_servers.chat.env]
Y = "2"

[[hooks.Stop]]
hooks = [{ type = "command", command = "/abs/bin/mcpp-chat-hook --event Stop", timeout = 10 }]

[hooks.state."/home/you/.codex/config.toml:stop:0:0"]
trusted_hash = "sha256:00"
`

func TestParseFindsTablesAndKeepsEveryByte(t *testing.T) {
	blocks := Parse([]byte(sample))
	var names []string
	for _, b := range blocks {
		names = append(names, b.Name())
	}
	want := []string{"", "mcp_servers.chat", "mcp_servers.chat.env", "hooks.Stop", "hooks.state./home/you/.codex/config.toml:stop:0:0"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tables %q, want %q", names, want)
	}
	if !blocks[3].Array || blocks[1].Array {
		t.Error("[[hooks.Stop]] is an array of tables, [mcp_servers.chat] is not")
	}
	if got := string(Format(blocks)); got != sample {
		t.Errorf("Format(Parse) changed the file:\n%s", got)
	}
}

func TestValues(t *testing.T) {
	blocks := Parse([]byte(sample))
	if v, _ := blocks[0].Value("model"); v != `"gpt-5.5"` {
		t.Errorf("model = %q (the comment left out)", v)
	}
	if _, ok := blocks[0].Value("not"); ok {
		t.Error("a line inside a multi-line string was read as a key")
	}
	server := blocks[1]
	cmd, _ := server.Value("command")
	if s, ok := String(cmd); !ok || s != "/abs/bin/mcpp-chat" {
		t.Errorf("command = %q", s)
	}
	args, _ := server.Value("args")
	if got := Strings(args); !reflect.DeepEqual(got, []string{"serve", "--workspace", "a,b"}) {
		t.Errorf("args = %q", got)
	}
	env, _ := server.Value("env")
	if got := Inline(env); got["MCPP_CHAT_DB"] != `"/abs/chat.db"` || got["X"] != `"1"` {
		t.Errorf("env = %v", got)
	}
	hooks, _ := blocks[3].Value("hooks")
	tables := Tables(hooks)
	if len(tables) != 1 || tables[0]["timeout"] != "10" {
		t.Fatalf("hooks = %v", tables)
	}
	if s, _ := String(tables[0]["command"]); s != "/abs/bin/mcpp-chat-hook --event Stop" {
		t.Errorf("command = %q", s)
	}
}

func TestQuoteIsReadBack(t *testing.T) {
	for _, s := range []string{`/a b/c`, `it's "quoted" \ here`, "tab\tand\x01"} {
		q := Quote(s)
		if strings.ContainsAny(q, "\t\x01") {
			t.Errorf("Quote(%q) = %q holds a control character", s, q)
		}
		if got, ok := String(q); !ok || got != s {
			t.Errorf("String(Quote(%q)) = %q, %v", s, got, ok)
		}
	}
}

func TestSetAndDelete(t *testing.T) {
	blocks := Parse([]byte("[features]\nweb_search = true\n\n# about the next one\n[other]\nx = 1\n"))
	f := &blocks[1]
	if changed, ok := f.Set("hooks", "true"); !changed || !ok {
		t.Fatal("Set did not add the key")
	}
	if changed, _ := f.Set("hooks", "true"); changed {
		t.Error("Set of the same value changed the block")
	}
	f.Set("web_search", "false")
	want := "[features]\nweb_search = false\nhooks = true\n\n# about the next one\n[other]\nx = 1\n"
	if got := string(Format(blocks)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !f.Delete("web_search") || !f.Delete("hooks") || f.Delete("hooks") {
		t.Error("Delete")
	}
	if !f.Empty() || len(f.Tail()) != 2 {
		t.Errorf("a block left with its header and a comment: Empty %v, Tail %q", f.Empty(), f.Tail())
	}
	if got := Header([]string{"mcp_servers", "my chat"}, false); got != `[mcp_servers."my chat"]` {
		t.Errorf("Header = %s", got)
	}
	if got := InlineTable([][2]string{{"MCPP_CHAT_DB", Quote("/a b")}, {"X-Y", "1"}}); got != `{ MCPP_CHAT_DB = "/a b", X-Y = 1 }` {
		t.Errorf("InlineTable = %s", got)
	}
	if got := Pairs(`{ B = "2", A = "1" }`); len(got) != 2 || got[0][0] != "B" {
		t.Errorf("Pairs = %v", got)
	}
}

// A key added to a table goes after its last value, also when that value
// is a multi-line string whose last line starts like a comment.
func TestSetAddsAfterAMultiLineValue(t *testing.T) {
	f := ParseFile([]byte("[features]\nx = \"\"\"\n# c\"\"\"\n\n# about [next]\n[next]\n"))
	f.Blocks[1].Set("hooks", "true")
	want := "[features]\nx = \"\"\"\n# c\"\"\"\nhooks = true\n\n# about [next]\n[next]\n"
	if got := string(f.Bytes()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// ParseFile and Bytes give back every byte: a byte order mark, CRLF line
// ends, a last line without one; lines added take the file's line end.
func TestFileKeepsEveryByte(t *testing.T) {
	for _, data := range []string{"", "\n", "\ufeff", "\ufeffa = 1\r\n[t]\r\nb = 2", "a = 1\n\n[t] # c\nb = 2\n", "x = 1\r\ny = 2\n"} {
		if got := string(ParseFile([]byte(data)).Bytes()); got != data {
			t.Errorf("%q came back as %q", data, got)
		}
	}
	f := ParseFile([]byte("\ufeffa = 1\r\n[t]\r\nb = 2"))
	f.Blocks[1].Set("c", "3")
	f.Append([]string{"u"}, false, "# new", [][2]string{{"d", "4"}})
	want := "\ufeffa = 1\r\n[t]\r\nb = 2\r\nc = 3\r\n\r\n[u] # new\r\nd = 4\r\n"
	if got := string(f.Bytes()); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// The judge: a file that is not TOML is refused, and so is an edit that
// changes anything outside its scope — a value, a key's presence, an
// element of an array of tables — while what the scope covers may change.
func TestCheck(t *testing.T) {
	before := "[features]\nhooks = false # mine\n\n[[hooks.Stop]]\nhooks = [{ command = \"notify\" }]\n"
	ours := Scope{Keys: [][]string{{"mcp_servers", "chat"}}, Elem: func(path []string, e map[string]any) bool {
		h, _ := e["hooks"].([]any)
		if len(h) != 1 {
			return false
		}
		m, _ := h[0].(map[string]any)
		return m["command"] == "ours"
	}}
	for after, want := range map[string]string{
		before + "\n[mcp_servers.chat]\ncommand = \"x\"\n\n[[hooks.Stop]]\nhooks = [{ command = \"ours\" }]\n": "",
		"[features]\nhooks = true\n\n[[hooks.Stop]]\nhooks = [{ command = \"notify\" }]\n":                     "features.hooks",
		"[features]\nhooks = false\n":                         "hooks",
		before + "[features]\n":                               "not valid TOML",
		before + "\n[mcp_servers.chat]\n[mcp_servers.chat]\n": "not valid TOML",
	} {
		err := Check([]byte(before), []byte(after), ours)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("after\n%s\nCheck = %v, want %q", after, err, want)
		}
	}
	if err := Check([]byte("a = \n"), []byte("a = 1\n"), ours); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a file that is not TOML: %v", err)
	}
	if d := Difference(map[string]any{"x": math.NaN()}, map[string]any{"x": math.NaN()}); d != "" {
		t.Errorf("nan differs from nan at %s", d)
	}
}
