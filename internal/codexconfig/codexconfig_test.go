package codexconfig

import (
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
