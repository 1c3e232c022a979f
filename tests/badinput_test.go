package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// badCase is one call that must be refused with a sentence naming what is
// wrong (want: every string must appear) and what to do.
type badCase struct {
	as   string // the party calling: "gw" (default), "dash" or "core"
	tool string
	args map[string]any
	want []string
}

// TestBadInputEveryTool sends every kind of wrong argument to every tool
// of a real server. Each is refused with an isError result that names the
// argument or the thing and the fix; the database is unchanged; the server
// answers the next request.
func TestBadInputEveryTool(t *testing.T) {
	w := newWorld(t)
	sessions := map[string]*mcp.ClientSession{
		"gw":   w.serve(w.repo("mesh-gw")),
		"dash": w.serve(w.repo("node-dash")),
		"core": w.serve(w.repo("fw-core")),
	}
	mustTool(t, sessions["dash"], "chat_whoami", nil) // a party exists from its first call
	mustTool(t, sessions["gw"], "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}})
	mustTool(t, sessions["core"], "chat_channel_new", map[string]any{"name": "solo"})
	mustTool(t, sessions["gw"], "chat_ask", map[string]any{"title": "Is the chunk enum closed?", "body": "I need FRAME_AUX.", "slug": "chunk-api"})
	var said struct {
		Seq int64 `json:"seq"`
	}
	mustTool(t, sessions["gw"], "chat_say", map[string]any{"text": "hello"}, &said)
	sayAddr := fmt.Sprintf("gw--dash:%d", said.Seq)

	const limit = 65536 // chat.max_body_bytes
	big := strings.Repeat("x", limit+1)
	sqlish := "x'); DROP TABLE messages; --"
	cases := []badCase{
		// chat_whoami
		{tool: "chat_whoami", args: map[string]any{"about": 5}, want: []string{"`about`", "string"}},
		{tool: "chat_whoami", args: map[string]any{"about": []string{"x"}}, want: []string{"`about`", "string"}},
		{tool: "chat_whoami", args: map[string]any{"about": map[string]any{"a": 1}}, want: []string{"`about`", "string"}},
		{tool: "chat_whoami", args: map[string]any{"abuot": "x"}, want: []string{"`abuot`", "about"}},
		{tool: "chat_whoami", args: map[string]any{"about": big}, want: []string{"`about`", "65536"}},
		// chat_channel_new
		{tool: "chat_channel_new", args: map[string]any{}, want: []string{"`name`"}},
		{tool: "chat_channel_new", args: map[string]any{"name": 5}, want: []string{"`name`", "string"}},
		{tool: "chat_channel_new", args: map[string]any{"name": "gw dash"}, want: []string{`"gw dash"`, "lowercase"}},
		{tool: "chat_channel_new", args: map[string]any{"name": "ÄBC"}, want: []string{`"ÄBC"`, "lowercase"}},
		{tool: "chat_channel_new", args: map[string]any{"name": strings.Repeat("a", 65)}, want: []string{"aaaa", "64"}},
		{tool: "chat_channel_new", args: map[string]any{"name": "../etc"}, want: []string{`"../etc"`, "lowercase"}},
		{tool: "chat_channel_new", args: map[string]any{"name": sqlish}, want: []string{"DROP TABLE", "lowercase"}},
		{tool: "chat_channel_new", args: map[string]any{"name": "GW--DASH"}, want: []string{"'gw--dash' already exists", "chat_channel_join"}},
		{tool: "chat_channel_new", args: map[string]any{"name": "new-one", "parties": "node-dash"}, want: []string{"`parties`", "list"}},
		{tool: "chat_channel_new", args: map[string]any{"name": "new-one", "parties": []string{"ghost"}}, want: []string{"'ghost'", "chat_whoami"}},
		{tool: "chat_channel_new", args: map[string]any{"name": "new-one", "parties": []any{5}}, want: []string{"`parties`", "party names"}},
		{tool: "chat_channel_new", args: map[string]any{"name": "new-one", "parties": []string{"x' OR '1'='1"}}, want: []string{"x' OR '1'='1", "chat_whoami"}},
		{tool: "chat_channel_new", args: map[string]any{"name": "new-one", "about": big}, want: []string{"`about`", "65536"}},
		// chat_channel_list
		{tool: "chat_channel_list", args: map[string]any{"all": "yes"}, want: []string{"`all`", "true or false"}},
		{tool: "chat_channel_list", args: map[string]any{"all": 1}, want: []string{"`all`", "true or false"}},
		// chat_channel_join
		{tool: "chat_channel_join", args: map[string]any{}, want: []string{"`name`"}},
		{tool: "chat_channel_join", args: map[string]any{"name": "no-such-channel"}, want: []string{"'no-such-channel'", "chat_channel_new"}},
		{tool: "chat_channel_join", args: map[string]any{"name": []string{"gw--dash"}}, want: []string{"`name`", "string"}},
		{tool: "chat_channel_join", args: map[string]any{"name": sqlish}, want: []string{"DROP TABLE", "lowercase"}},
		// chat_channel_leave
		{tool: "chat_channel_leave", args: map[string]any{"name": "solo"}, want: []string{"'solo'", "chat_channel_list"}},
		{tool: "chat_channel_leave", args: map[string]any{"name": "nope"}, want: []string{"'nope'", "chat_channel_new"}},
		{tool: "chat_channel_leave", args: map[string]any{"name": "A B"}, want: []string{`"A B"`, "lowercase"}},
		// chat_say
		{tool: "chat_say", args: map[string]any{}, want: []string{"`text`"}},
		{tool: "chat_say", args: map[string]any{"text": ""}, want: []string{"`text`", "empty"}},
		{tool: "chat_say", args: map[string]any{"text": " \n\t "}, want: []string{"`text`", "empty"}},
		{tool: "chat_say", args: map[string]any{"text": 5}, want: []string{"`text`", "string"}},
		{tool: "chat_say", args: map[string]any{"text": []string{"a"}}, want: []string{"`text`", "string"}},
		{tool: "chat_say", args: map[string]any{"text": map[string]any{"a": 1}}, want: []string{"`text`", "string"}},
		{tool: "chat_say", args: map[string]any{"text": big}, want: []string{"`text`", "65536", "split"}},
		{tool: "chat_say", args: map[string]any{"text": "hi", "channel": "Bad Name"}, want: []string{`"Bad Name"`, "lowercase"}},
		{tool: "chat_say", args: map[string]any{"text": "hi", "channel": "nope"}, want: []string{"'nope'", "chat_channel_new"}},
		{tool: "chat_say", args: map[string]any{"text": "hi", "channel": "solo"}, want: []string{"'solo'", "chat_channel_join"}},
		{tool: "chat_say", args: map[string]any{"text": "hi", "reply_to": "999"}, want: []string{`"999"`, "chat_read"}},
		{tool: "chat_say", args: map[string]any{"text": "hi", "reply_to": sqlish}, want: []string{"DROP TABLE", "chat_inbox"}},
		{tool: "chat_say", args: map[string]any{"text": "hi", "txt": "x"}, want: []string{"`txt`", "text"}},
		// chat_ask
		{tool: "chat_ask", args: map[string]any{"body": "b"}, want: []string{"`title`"}},
		{tool: "chat_ask", args: map[string]any{"title": "t"}, want: []string{"`body`"}},
		{tool: "chat_ask", args: map[string]any{"title": "  ", "body": "b"}, want: []string{"`title`", "empty"}},
		{tool: "chat_ask", args: map[string]any{"title": "t", "body": ""}, want: []string{"`body`", "empty"}},
		{tool: "chat_ask", args: map[string]any{"title": big, "body": "b"}, want: []string{"`title`", "65536"}},
		{tool: "chat_ask", args: map[string]any{"title": "t", "body": "b", "consumers": "node-dash"}, want: []string{"`consumers`", "list"}},
		{tool: "chat_ask", args: map[string]any{"title": "t", "body": "b", "consumers": []string{"ghost"}}, want: []string{"'ghost'", "gw--dash"}},
		{tool: "chat_ask", args: map[string]any{"title": "t", "body": "b", "consumers": []string{"fw-core"}}, want: []string{"'fw-core'", "gw--dash"}},
		{tool: "chat_ask", args: map[string]any{"title": "t", "body": "b", "announce": "true"}, want: []string{"`announce`", "true or false"}},
		{tool: "chat_ask", args: map[string]any{"title": "t", "body": "b", "slug": 5}, want: []string{"`slug`", "string"}},
		{tool: "chat_ask", args: map[string]any{"title": "t", "body": "b", "channel": "ÄBC"}, want: []string{`"ÄBC"`, "lowercase"}},
		{tool: "chat_ask", args: map[string]any{"title": "t", "body": "b", "channel": "solo"}, want: []string{"'solo'", "chat_channel_join"}},
		// chat_reply
		{tool: "chat_reply", args: map[string]any{"text": "x"}, want: []string{"`item`"}},
		{tool: "chat_reply", args: map[string]any{"item": "chunk-api"}, want: []string{"`text`"}},
		{tool: "chat_reply", args: map[string]any{"item": "999", "text": "x"}, want: []string{`"999"`, "chat_read"}},
		{tool: "chat_reply", args: map[string]any{"item": "gw--dash:999", "text": "x"}, want: []string{`"gw--dash:999"`, "chat_read"}},
		{tool: "chat_reply", args: map[string]any{"item": "#0", "text": "x"}, want: []string{`"#0"`, "slug"}},
		{tool: "chat_reply", args: map[string]any{"item": "ghost-slug", "text": "x"}, want: []string{`"ghost-slug"`, "chat_inbox"}},
		{tool: "chat_reply", args: map[string]any{"item": "chunk-api", "text": "   "}, want: []string{"`text`", "empty"}},
		{tool: "chat_reply", args: map[string]any{"item": "  ", "text": "x"}, want: []string{"`item`", "empty"}},
		// chat_ack
		{tool: "chat_ack", args: map[string]any{}, want: []string{"`item`"}},
		{tool: "chat_ack", args: map[string]any{"item": "nope"}, want: []string{`"nope"`, "chat_inbox"}},
		{tool: "chat_ack", args: map[string]any{"item": 5}, want: []string{"`item`", "string"}},
		{tool: "chat_ack", args: map[string]any{"item": "chunk-api", "note": big}, want: []string{"`note`", "65536"}},
		{tool: "chat_ack", args: map[string]any{"item": sayAddr}, want: []string{"a say, not an item", "chat_ask"}},
		{as: "core", tool: "chat_ack", args: map[string]any{"item": "gw--dash:chunk-api"}, want: []string{"you are not in 'gw--dash'", "not a consumer of", "chat_channel_join"}},
		// chat_resolve
		{tool: "chat_resolve", args: map[string]any{"item": "chunk-api", "answered": "yes"}, want: []string{"`answered`", "true or false"}},
		{tool: "chat_resolve", args: map[string]any{"item": "gw--dash:999"}, want: []string{`"gw--dash:999"`, "chat_read"}},
		{as: "dash", tool: "chat_resolve", args: map[string]any{"item": "chunk-api"}, want: []string{"[chunk-api]", "chat_ack"}},
		// chat_prune_ok
		{tool: "chat_prune_ok", args: map[string]any{}, want: []string{"`item`"}},
		{tool: "chat_prune_ok", args: map[string]any{"item": []string{"a"}}, want: []string{"`item`", "string"}},
		{tool: "chat_prune_ok", args: map[string]any{"item": "nope"}, want: []string{`"nope"`, "chat_inbox"}},
		{as: "core", tool: "chat_prune_ok", args: map[string]any{"item": "gw--dash:chunk-api"}, want: []string{"you are not in 'gw--dash'", "not a consumer of", "chat_channel_join"}},
		// chat_read
		{tool: "chat_read", args: map[string]any{"limit": 0}, want: []string{"`limit`", "1 to 500"}},
		{tool: "chat_read", args: map[string]any{"limit": 501}, want: []string{"`limit`", "1 to 500"}},
		{tool: "chat_read", args: map[string]any{"limit": 1.5}, want: []string{"`limit`", "1 to 500"}},
		{tool: "chat_read", args: map[string]any{"limit": "10"}, want: []string{"`limit`", "1 to 500"}},
		{tool: "chat_read", args: map[string]any{"since": -1}, want: []string{"`since`", "at least 0"}},
		{tool: "chat_read", args: map[string]any{"since": "x"}, want: []string{"`since`", "whole number"}},
		{tool: "chat_read", args: map[string]any{"peek": "no"}, want: []string{"`peek`", "true or false"}},
		{tool: "chat_read", args: map[string]any{"channel": "nope"}, want: []string{"'nope'", "chat_channel_new"}},
		{tool: "chat_read", args: map[string]any{"channel": "../x"}, want: []string{`"../x"`, "lowercase"}},
		{tool: "chat_read", args: map[string]any{"channel": "solo"}, want: []string{"'solo'", "chat_channel_join"}},
		// chat_inbox
		{tool: "chat_inbox", args: map[string]any{"x": 1}, want: []string{"`x`", "no argument"}},
		// chat_wait
		{tool: "chat_wait", args: map[string]any{"seconds": 0}, want: []string{"`seconds`", "1 to 20"}},
		{tool: "chat_wait", args: map[string]any{"seconds": 99}, want: []string{"`seconds`", "1 to 20"}},
		{tool: "chat_wait", args: map[string]any{"seconds": 1.5}, want: []string{"`seconds`", "1 to 20"}},
		{tool: "chat_wait", args: map[string]any{"seconds": "5"}, want: []string{"`seconds`", "1 to 20"}},
		{tool: "chat_wait", args: map[string]any{"seconds": 1, "channel": "nope"}, want: []string{"'nope'", "chat_channel_join"}},
		{tool: "chat_wait", args: map[string]any{"seconds": 1, "channel": "ÄBC"}, want: []string{`"ÄBC"`, "lowercase"}},
		// chat_search
		{tool: "chat_search", args: map[string]any{}, want: []string{"`query`"}},
		{tool: "chat_search", args: map[string]any{"query": " - * "}, want: []string{"no word to look for"}},
		{tool: "chat_search", args: map[string]any{"query": "x", "limit": 0}, want: []string{"`limit`", "1 to 50"}},
		{tool: "chat_search", args: map[string]any{"query": "x", "archived": "yes"}, want: []string{"`archived`", "true or false"}},
		{tool: "chat_search", args: map[string]any{"query": "x", "channel": "solo"}, want: []string{"'solo'", "chat_channel_join"}},
		// claims
		{tool: "chat_claim", args: map[string]any{}, want: []string{"`resource`"}},
		{tool: "chat_claim", args: map[string]any{"resource": "staging"}, want: []string{`"staging"`, "kind:what"}},
		{tool: "chat_claim", args: map[string]any{"resource": "path:../x"}, want: []string{`"path:../x"`, "names separated by /"}},
		{tool: "chat_claim", args: map[string]any{"resource": "path:/etc/hosts"}, want: []string{"absolute path", "relative"}},
		{tool: "chat_claim", args: map[string]any{"resource": "port:99999"}, want: []string{`"port:99999"`, "1 to 65535"}},
		{tool: "chat_claim", args: map[string]any{"resource": "env:x", "ttl": "soon"}, want: []string{`"soon"`, "30m"}},
		{tool: "chat_claim", args: map[string]any{"resource": "env:x", "ttl": "1s"}, want: []string{`"1s"`, "10s or more"}},
		{tool: "chat_claim", args: map[string]any{"resource": "env:x", "exclusive": "yes"}, want: []string{"`exclusive`", "true or false"}},
		{tool: "chat_claim", args: map[string]any{"resource": "env:x", "item": "nope"}, want: []string{`"nope"`, "chat_inbox"}},
		{tool: "chat_release", args: map[string]any{"resource": "env:never"}, want: []string{"env:never", "chat_claims"}},
		{tool: "chat_release", args: map[string]any{}, want: []string{"`resource`"}},
		{tool: "chat_claims", args: map[string]any{"x": 1}, want: []string{"`x`", "no argument"}},
		{tool: "chat_reply", args: map[string]any{"item": "chunk-api", "text": "x", "hand_over": "env:never"}, want: []string{"a message of your own", "hand_over"}},
		{as: "dash", tool: "chat_reply", args: map[string]any{"item": "chunk-api", "text": "x", "hand_over": "env:never"}, want: []string{"env:never", "hand_over"}},
	}

	db := roDB(t, w.db)
	covered := map[string]bool{}
	for i, c := range cases {
		covered[c.tool] = true
		as := c.as
		if as == "" {
			as = "gw"
		}
		s := sessions[as]
		before := tableDigest(t, db)
		_, errText, err := tryTool(s, c.tool, c.args)
		name := fmt.Sprintf("case %d %s %s", i, c.tool, preview(c.args))
		switch {
		case err != nil:
			t.Fatalf("%s: JSON-RPC error or crash: %v", name, err)
		case errText == "":
			t.Errorf("%s: accepted, want an isError result", name)
		default:
			for _, want := range c.want {
				if !strings.Contains(errText, want) {
					t.Errorf("%s: error %q does not mention %q", name, errText, want)
				}
			}
			if !strings.Contains(errText, " — ") || strings.Count(errText, "\n") > 0 {
				t.Errorf("%s: error %q is not one sentence of the form \"what is wrong — what to do\"", name, errText)
			}
		}
		if after := tableDigest(t, db); after != before {
			t.Errorf("%s: the refused call changed the database", name)
		}
		if _, e, err := tryTool(s, "chat_inbox", nil); err != nil || e != "" {
			t.Fatalf("%s: the server does not answer the next request: %v %s", name, err, e)
		}
	}
	for _, tool := range []string{"chat_whoami", "chat_channel_new", "chat_channel_list", "chat_channel_join", "chat_channel_leave",
		"chat_say", "chat_ask", "chat_reply", "chat_ack", "chat_resolve", "chat_prune_ok", "chat_read", "chat_search", "chat_inbox", "chat_wait",
		"chat_claim", "chat_release", "chat_claims"} {
		if !covered[tool] {
			t.Errorf("no bad-input case for %s", tool)
		}
	}

	// Uppercase that is only case is a valid name.
	mustTool(t, sessions["gw"], "chat_say", map[string]any{"text": "case only", "channel": "GW--DASH"})

	// SQL-looking text is data: stored verbatim, the tables intact.
	var r struct {
		Seq int64 `json:"seq"`
	}
	mustTool(t, sessions["gw"], "chat_say", map[string]any{"text": sqlish}, &r)
	if got := dbStrings(t, db, `SELECT body FROM messages WHERE seq = ?`, r.Seq); len(got) != 1 || got[0] != sqlish {
		t.Fatalf("SQL-looking text stored as %q", got)
	}
	checkInvariants(t, db)
}

func preview(args map[string]any) string {
	data, _ := json.Marshal(args)
	if len(data) > 60 {
		return string(data[:60]) + "…"
	}
	return string(data)
}

// rawServer is `mcpp-chat serve` driven over its stdin/stdout by hand,
// without an SDK client, so the test can send what no SDK would.
type rawServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan map[string]any
	stderr *syncBuffer
	nextID int
}

func (w *world) rawServe(dir string) *rawServer {
	w.t.Helper()
	cmd := exec.Command(chatBin, "serve")
	cmd.Dir = dir
	cmd.Env = w.env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	r := &rawServer{t: w.t, cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 100), stderr: &syncBuffer{}, nextID: 100}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 32<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			r.lines <- m
		}
		close(r.lines)
	}()
	w.t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return r
}

func (r *rawServer) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatalf("the server stopped reading: %v; stderr: %s", err, r.stderr)
	}
}

// request sends a request and returns its response, skipping anything else
// (notifications, error replies to earlier junk) that comes first; extra
// collects what was skipped.
func (r *rawServer) request(method string, params any) (resp map[string]any, extra []map[string]any) {
	r.t.Helper()
	r.nextID++
	id := r.nextID
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	r.send(string(data))
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("the server closed stdout (crashed?) waiting for %s; stderr: %s", method, r.stderr)
			}
			if n, isNum := m["id"].(float64); isNum && int(n) == id {
				return m, extra
			}
			extra = append(extra, m)
		case <-timeout:
			r.t.Fatalf("no answer to %s within 20s; stderr: %s", method, r.stderr)
		}
	}
}

// TestRawJSONRPCGarbage feeds the server what a broken or hostile client
// might send. Each gets a JSON-RPC error or nothing; the server never stops
// and answers the next valid request.
func TestRawJSONRPCGarbage(t *testing.T) {
	w := newWorld(t)
	r := w.rawServe(w.repo("mesh-gw"))

	// What Claude Code sends first: a probe for a method we do not have.
	resp, _ := r.request("server/discover", map[string]any{})
	if e, ok := resp["error"].(map[string]any); !ok || e["code"].(float64) != -32601 {
		t.Fatalf("server/discover: want method-not-found, got %v", resp)
	}
	resp, _ = r.request("initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	})
	if resp["result"] == nil {
		t.Fatalf("initialize: %v", resp)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	huge := strings.Repeat("x", 10<<20)
	junk := []struct {
		name, line string
		wantID     any // the id an error reply must carry, if one comes
	}{
		{"not JSON", "this is not json", nil},
		{"truncated JSON", `{"jsonrpc":"2.0","id":7,"method":"ping"`, nil},
		{"two objects on one line", `{"jsonrpc":"2.0","id":8,"method":"ping"}{"x":1}`, nil},
		{"a JSON array", `[1, 2, 3]`, nil},
		{"a batch", `[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, nil},
		{"an empty batch", `[]`, nil},
		{"a string", `"hello"`, nil},
		{"null", `null`, nil},
		{"a request without a method", `{"jsonrpc":"2.0","id":10}`, 10.0},
		{"a method that is not a string", `{"jsonrpc":"2.0","id":11,"method":5}`, 11.0},
		{"a wrong version", `{"jsonrpc":"1.0","id":12,"method":"ping"}`, 12.0},
		{"an id that is an object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, nil},
		{"a 10 MB line of garbage", huge, nil},
		{"a 10 MB JSON string", `"` + huge + `"`, nil},
		{"a blank line", "   ", nil},
		{"an unknown method", `{"jsonrpc":"2.0","id":13,"method":"tools/frobnicate"}`, 13.0},
	}
	for _, j := range junk {
		r.send(j.line)
		resp, extra := r.request("ping", nil)
		if resp["result"] == nil {
			t.Fatalf("after %s: ping answered %v", j.name, resp)
		}
		for _, m := range extra {
			e, ok := m["error"].(map[string]any)
			if !ok {
				t.Errorf("after %s: unexpected message %v", j.name, m)
				continue
			}
			if msg, _ := e["message"].(string); msg == "" {
				t.Errorf("after %s: error without a message: %v", j.name, m)
			}
			if j.wantID != nil && m["id"] != j.wantID {
				t.Errorf("after %s: error reply carries id %v, want %v", j.name, m["id"], j.wantID)
			}
		}
	}

	// A 10 MB tool call is a valid request: refused as a tool error, not
	// stored, and the server goes on.
	resp, _ = r.request("tools/call", map[string]any{"name": "chat_whoami", "arguments": map[string]any{"about": huge}})
	res, _ := resp["result"].(map[string]any)
	if res == nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "`about`") {
		t.Fatalf("10 MB tool call: %v", truncate(resp))
	}
	// An unknown tool is a JSON-RPC error.
	resp, _ = r.request("tools/call", map[string]any{"name": "chat_nope", "arguments": map[string]any{}})
	if resp["error"] == nil {
		t.Fatalf("unknown tool: want a JSON-RPC error, got %v", resp)
	}
	resp, _ = r.request("tools/call", map[string]any{"name": "chat_whoami", "arguments": map[string]any{}})
	if res, _ := resp["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Fatalf("whoami after the garbage: %v", truncate(resp))
	}
	if strings.Contains(r.stderr.String(), "panic") {
		t.Fatalf("the server panicked: %s", r.stderr)
	}
	about := dbStrings(t, roDB(t, w.db), `SELECT coalesce(about, '') FROM parties`)
	for _, a := range about {
		if len(a) > 100 {
			t.Fatal("the refused 10 MB about was stored")
		}
	}
}

func truncate(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
