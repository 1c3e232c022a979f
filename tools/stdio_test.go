package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// guardOutput runs input through the line guard and returns what reaches
// the SDK and what the guard answered itself.
func guardOutput(t *testing.T, input string, max int) (passed string, replies []map[string]any) {
	t.Helper()
	var out bytes.Buffer
	g := &lineGuard{in: bufio.NewReaderSize(strings.NewReader(input), 16), out: &out, max: max}
	data, err := io.ReadAll(g)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("guard reply is not JSON: %v", err)
		}
		replies = append(replies, m)
	}
	return string(data), replies
}

func TestLineGuardPassesValidMessages(t *testing.T) {
	t.Parallel()
	in := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\n  \n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"
	passed, replies := guardOutput(t, in, 1<<20)
	want := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
	if passed != want || len(replies) != 0 {
		t.Fatalf("passed %q, replies %v", passed, replies)
	}
}

func TestLineGuardAnswersBadLines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line string
		code float64
		id   any
	}{
		{"not json", codeParseError, nil},
		{`{"jsonrpc":"2.0","id":3,"method":"ping"`, codeParseError, nil},
		{`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`, codeInvalidRequest, nil},
		{`42`, codeInvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":5}`, codeInvalidRequest, 5.0},
		{`{"jsonrpc":"2.0","id":"six","method":7}`, codeInvalidRequest, "six"},
		{`{"jsonrpc":"1.0","id":8,"method":"ping"}`, codeInvalidRequest, 8.0},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, codeInvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":9,"method":"ping","params":"` + strings.Repeat("x", 200) + `"}`, codeInvalidRequest, nil}, // over max
	}
	for _, c := range cases {
		next := `{"jsonrpc":"2.0","id":99,"method":"ping"}`
		passed, replies := guardOutput(t, c.line+"\n"+next+"\n", 100)
		if passed != next+"\n" {
			t.Errorf("%.40s: passed %q, want only the next valid line", c.line, passed)
		}
		if len(replies) != 1 {
			t.Errorf("%.40s: %d replies, want 1", c.line, len(replies))
			continue
		}
		e, _ := replies[0]["error"].(map[string]any)
		if e == nil || e["code"] != c.code || replies[0]["id"] != c.id || e["message"] == "" {
			t.Errorf("%.40s: reply %v, want code %v id %v", c.line, replies[0], c.code, c.id)
		}
	}
}

// fakeConn hands out queued messages and records what is written.
type fakeConn struct {
	mcp.Connection
	in      []jsonrpc.Message
	written []jsonrpc.Message
}

func (f *fakeConn) Read(context.Context) (jsonrpc.Message, error) {
	m := f.in[0]
	f.in = f.in[1:]
	return m, nil
}

func (f *fakeConn) Write(_ context.Context, m jsonrpc.Message) error {
	f.written = append(f.written, m)
	return nil
}

func TestCancelledRequestGetsNoResponse(t *testing.T) {
	t.Parallel()
	id := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	cancel := func(v string) *jsonrpc.Request {
		return &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":` + v + `}`)}
	}
	f := &fakeConn{in: []jsonrpc.Message{
		&jsonrpc.Request{ID: id(float64(7)), Method: "tools/call"},
		&jsonrpc.Request{ID: id("eight"), Method: "tools/call"},
		&jsonrpc.Request{ID: id(float64(9)), Method: "tools/call"},
		cancel(`7`), cancel(`"eight"`),
		cancel(`9`),  // after 9 was answered: too late, nothing to drop
		cancel(`10`), // never asked
	}}
	c := newCancelAwareConn(f, nil)
	ctx := context.Background()
	for range 3 {
		c.Read(ctx)
	}
	c.Write(ctx, &jsonrpc.Response{ID: id(float64(9))})
	for range 4 {
		c.Read(ctx)
	}
	for _, v := range []any{float64(7), "eight", float64(10)} {
		c.Write(ctx, &jsonrpc.Response{ID: id(v)})
	}
	c.Write(ctx, &jsonrpc.Request{Method: "notifications/progress"})
	if len(f.written) != 3 || f.written[0].(*jsonrpc.Response).ID != id(float64(9)) || f.written[1].(*jsonrpc.Response).ID != id(float64(10)) {
		t.Fatalf("written: %+v; want the answer to 9, the one to 10 and the notification", f.written)
	}
	if len(c.inFlight)+len(c.cancelled) != 0 {
		t.Fatalf("left behind: %v %v", c.inFlight, c.cancelled)
	}
}

// Every id comes back exactly as the client wrote it. The SDK alone keeps
// only a float64's integer part: -1.5 would come back as -1,
// 9007199254740993 as …992 and 12345678901234567890 as a negative number.
func TestRequestIDsAreEchoedExactly(t *testing.T) {
	t.Parallel()
	m, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	go Serve(ctx, NewMCPServer(&Service{Manifest: m}, "test", nil), GuardedStdio(inR, outW, nil))
	answers := bufio.NewReader(outR)
	exchange := func(line string) map[string]json.RawMessage {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		data, err := answers.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var reply map[string]json.RawMessage
		if err := json.Unmarshal(data, &reply); err != nil {
			t.Fatalf("answer %q: %v", data, err)
		}
		return reply
	}
	exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	for _, id := range []string{`-1.5`, `9007199254740993`, `12345678901234567890`, `1.0`, `1e2`, `-0`, `7`, `-9007199254740992`, `"seven"`, `"mcpp-chat:id:1"`, `"mcpp-chat:id:1"`} {
		for _, method := range []string{"ping", "no/such/method"} { // a result and an error
			reply := exchange(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"}`)
			if string(reply["id"]) != id {
				t.Errorf("%s with id %s: the answer carries id %s", method, id, reply["id"])
			}
		}
	}
}

// A cancellation names the request by the client's id; the SDK knows it by
// its stand-in.
func TestCancellationOfAStoodInRequest(t *testing.T) {
	t.Parallel()
	var s standIns
	line := []byte(`{"jsonrpc":"2.0","id":-1.5,"method":"tools/call","params":{"name":"chat_wait"}}`)
	_, p := check(line)
	call := s.standIn(line, p)
	var req struct{ ID string }
	if err := json.Unmarshal(call, &req); err != nil || !strings.HasPrefix(req.ID, standInPrefix) {
		t.Fatalf("request handed on as %s", call)
	}
	cancel := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":-1.5,"reason":"x"}}`)
	_, p = check(cancel)
	var got struct {
		Params struct{ RequestID string }
	}
	if err := json.Unmarshal(s.standIn(cancel, p), &got); err != nil || got.Params.RequestID != req.ID {
		t.Fatalf("cancellation handed on for %q, want %q (%v)", got.Params.RequestID, req.ID, err)
	}
	answer := s.restore([]byte(`{"jsonrpc":"2.0","id":"` + req.ID + `","result":{}}`))
	if string(answer) != `{"jsonrpc":"2.0","id":-1.5,"result":{}}` {
		t.Fatalf("answer %s", answer)
	}
}
