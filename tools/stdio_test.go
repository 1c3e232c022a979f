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
	in := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\n  \n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"
	passed, replies := guardOutput(t, in, 1<<20)
	want := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
	if passed != want || len(replies) != 0 {
		t.Fatalf("passed %q, replies %v", passed, replies)
	}
}

func TestLineGuardAnswersBadLines(t *testing.T) {
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
