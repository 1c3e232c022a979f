package tools

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
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
