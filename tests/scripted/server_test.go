package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The server is checked here with plain HTTP requests shaped like the
// CLIs' (the real CLIs drive it in ../claude_test.go and ../codex_test.go).

func start(t *testing.T, limits Limits, steps ...Step) *Server {
	t.Helper()
	s, err := Start(limits, steps...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

type event struct {
	name string
	data map[string]any
}

// post sends body as JSON and returns the status and the events of an
// event stream (or the decoded JSON as one event named "json").
func post(t *testing.T, url string, body any) (int, []event) {
	t.Helper()
	data, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var v map[string]any
		json.Unmarshal(raw, &v)
		return resp.StatusCode, []event{{"json", v}}
	}
	var events []event
	for _, chunk := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		var e event
		for _, line := range strings.Split(chunk, "\n") {
			if name, ok := strings.CutPrefix(line, "event: "); ok {
				e.name = name
			} else if d, ok := strings.CutPrefix(line, "data: "); ok {
				if err := json.Unmarshal([]byte(d), &e.data); err != nil {
					t.Fatalf("event data is not JSON: %q", d)
				}
			}
		}
		events = append(events, e)
	}
	return resp.StatusCode, events
}

// anthropicReply collects the blocks of a streamed message: text, and
// tool calls as name → input JSON.
func anthropicReply(t *testing.T, events []event) (text string, calls [][2]string, stop string) {
	t.Helper()
	names := map[float64]string{}
	inputs := map[float64]string{}
	var order []float64
	for _, e := range events {
		if e.data["type"] != e.name {
			t.Fatalf("event %q carries type %v", e.name, e.data["type"])
		}
		switch e.name {
		case "content_block_start":
			i := e.data["index"].(float64)
			if b := e.data["content_block"].(map[string]any); b["type"] == "tool_use" {
				names[i] = b["name"].(string)
				order = append(order, i)
			}
		case "content_block_delta":
			i := e.data["index"].(float64)
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				text += d["text"].(string)
			case "input_json_delta":
				inputs[i] += d["partial_json"].(string)
			}
		case "message_delta":
			stop = e.data["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	if len(events) == 0 || events[0].name != "message_start" || events[len(events)-1].name != "message_stop" {
		t.Fatalf("stream does not run from message_start to message_stop: %v", events)
	}
	for _, i := range order {
		calls = append(calls, [2]string{names[i], inputs[i]})
	}
	return text, calls, stop
}

func TestAnthropicLoadsADeferredToolThenCallsIt(t *testing.T) {
	var sawResult string
	s := start(t, Limits{},
		Do(MCP("chat", "chat_inbox", nil)),
		func(turn *Turn) Reply {
			sawResult = turn.Last().Text
			return Reply{Text: "done"}
		})
	url := s.URL + "/v1/messages"
	tools := []any{map[string]any{"name": "ToolSearch"}, map[string]any{"name": "mcp__chat__chat_inbox", "defer_loading": true}}
	user := map[string]any{"role": "user", "content": "check the chat"}

	_, ev := post(t, url, map[string]any{"model": "m", "stream": true, "tools": tools, "messages": []any{user}})
	_, calls, stop := anthropicReply(t, ev)
	if len(calls) != 1 || calls[0][0] != "ToolSearch" || calls[0][1] != `{"query":"select:mcp__chat__chat_inbox"}` || stop != "tool_use" {
		t.Fatalf("first answer: calls %v stop %q, want a ToolSearch select of the deferred tool", calls, stop)
	}

	search := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": map[string]any{}}}}
	loaded := map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1",
		"content": []any{map[string]any{"type": "tool_reference", "tool_name": "mcp__chat__chat_inbox"}}}}}
	_, ev = post(t, url, map[string]any{"model": "m", "stream": true, "tools": tools, "messages": []any{user, search, loaded}})
	if _, calls, _ = anthropicReply(t, ev); len(calls) != 1 || calls[0] != [2]string{"mcp__chat__chat_inbox", "{}"} {
		t.Fatalf("second answer: %v, want the held-back call of chat_inbox", calls)
	}

	call := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t2", "name": "mcp__chat__chat_inbox", "input": map[string]any{}}}}
	result := map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t2",
		"content": []any{map[string]any{"type": "text", "text": "display"}, map[string]any{"type": "text", "text": `{"unread_total":0}`}}}}}
	_, ev = post(t, url, map[string]any{"model": "m", "stream": true, "tools": tools, "messages": []any{user, search, loaded, call, result}})
	if text, calls, stop := anthropicReply(t, ev); text != "done" || len(calls) != 0 || stop != "end_turn" {
		t.Fatalf("third answer: %q %v %q, want the turn ended with done", text, calls, stop)
	}
	if sawResult != "display\n{\"unread_total\":0}" {
		t.Fatalf("the step saw the result %q", sawResult)
	}
	turns := s.Turns()
	if len(turns) != 3 || turns[0].Step != 1 || turns[2].Step != 2 {
		t.Fatalf("turns %+v", turns)
	}
	var out struct {
		UnreadTotal int `json:"unread_total"`
	}
	if last := turns[2].Parsed().Last(); last.Name != "mcp__chat__chat_inbox" || last.JSON(&out) != nil {
		t.Fatalf("the recorded turn's last result is %+v", last)
	}
}

func TestAnthropicSideRequestsLeaveTheScript(t *testing.T) {
	s := start(t, Limits{}, End("first step"))
	if code, ev := post(t, s.URL+"/v1/messages", map[string]any{"model": "haiku", "messages": []any{map[string]any{"role": "user", "content": "title?"}}}); code != 200 || ev[0].data["type"] != "message" {
		t.Fatalf("non-streaming side call: %d %v", code, ev)
	}
	if _, ev := post(t, s.URL+"/v1/messages", map[string]any{"model": "haiku", "stream": true, "messages": []any{}}); len(ev) == 0 {
		t.Fatal("streamed side call without tools got no stream")
	}
	if _, ev := post(t, s.URL+"/v1/messages/count_tokens", map[string]any{"messages": []any{}}); ev[0].data["input_tokens"] == nil {
		t.Fatalf("count_tokens: %v", ev)
	}
	resp, err := http.Get(s.URL + "/v1/models")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("models: %v %v", resp, err)
	}
	resp.Body.Close()
	_, ev := post(t, s.URL+"/v1/messages", map[string]any{"model": "m", "stream": true, "tools": []any{map[string]any{"name": "ToolSearch"}}, "messages": []any{}})
	if text, _, _ := anthropicReply(t, ev); text != "first step" {
		t.Fatalf("the first main turn got %q, want the script's first step", text)
	}
	_, ev = post(t, s.URL+"/v1/messages", map[string]any{"model": "m", "stream": true, "tools": []any{map[string]any{"name": "ToolSearch"}}, "messages": []any{}})
	if text, _, _ := anthropicReply(t, ev); text != ExhaustedText {
		t.Fatalf("a turn after the script got %q", text)
	}
	var kinds []Kind
	for _, e := range s.Exchanges() {
		kinds = append(kinds, e.Kind)
	}
	if want := []Kind{SideRequest, SideRequest, SideRequest, SideRequest, TurnRequest, Extra}; !equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAgainRepeatsAStepUntilItEnds(t *testing.T) {
	runs := 0
	s := start(t, Limits{}, func(*Turn) Reply {
		runs++
		if runs < 3 {
			return Reply{Calls: []Call{Builtin("Bash", map[string]any{"command": "true"})}, Again: true}
		}
		return Reply{Text: "enough"}
	}, End("next step"))
	body := map[string]any{"model": "m", "stream": true, "tools": []any{map[string]any{"name": "ToolSearch"}, map[string]any{"name": "Bash"}}, "messages": []any{}}
	var texts []string
	for range 4 {
		_, ev := post(t, s.URL+"/v1/messages", body)
		text, _, _ := anthropicReply(t, ev)
		texts = append(texts, text)
	}
	if want := []string{"", "", "enough", "next step"}; !equal(texts, want) {
		t.Fatalf("texts %q, want %q", texts, want)
	}
}

func TestOpenAISearchesThenCallsInTheNamespace(t *testing.T) {
	var got Result
	s := start(t, Limits{},
		Do(MCP("chat", "chat_whoami", map[string]any{"about": "x"})),
		func(turn *Turn) Reply { got = turn.Last(); return Reply{Text: "done"} })
	url := s.URL + "/v1/responses"
	tools := []any{map[string]any{"type": "function", "name": "exec_command"}, map[string]any{"type": "tool_search"}}
	user := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "hi"}}}

	_, ev := post(t, url, map[string]any{"model": "m", "stream": true, "tools": tools, "input": []any{user}})
	item := doneItems(t, ev)
	if len(item) != 1 || item[0]["type"] != "tool_search_call" || item[0]["execution"] != "client" ||
		item[0]["arguments"].(map[string]any)["query"] != "chat_whoami" {
		t.Fatalf("first answer %v, want a tool_search_call for chat_whoami", item)
	}
	searched := map[string]any{"type": "tool_search_call", "call_id": item[0]["call_id"], "arguments": item[0]["arguments"]}
	found := map[string]any{"type": "tool_search_output", "call_id": item[0]["call_id"],
		"tools": []any{map[string]any{"type": "namespace", "name": "mcp__chat", "tools": []any{map[string]any{"type": "function", "name": "chat_whoami"}}}}}
	_, ev = post(t, url, map[string]any{"model": "m", "stream": true, "tools": tools, "input": []any{user, searched, found}})
	item = doneItems(t, ev)
	if len(item) != 1 || item[0]["type"] != "function_call" || item[0]["namespace"] != "mcp__chat" || item[0]["name"] != "chat_whoami" || item[0]["arguments"] != `{"about":"x"}` {
		t.Fatalf("second answer %v, want the namespaced call", item)
	}
	call := map[string]any{"type": "function_call", "call_id": "c2", "namespace": "mcp__chat", "name": "chat_whoami", "arguments": "{}"}
	output := map[string]any{"type": "function_call_output", "call_id": "c2", "output": []any{
		map[string]any{"type": "input_text", "text": "Wall time: 0.01 seconds\nOutput:"}, map[string]any{"type": "input_text", "text": `{"me":"repo"}`}}}
	_, ev = post(t, url, map[string]any{"model": "m", "stream": true, "tools": tools, "input": []any{user, searched, found, call, output}})
	item = doneItems(t, ev)
	if len(item) != 1 || item[0]["type"] != "message" || ev[len(ev)-1].name != "response.completed" {
		t.Fatalf("third answer %v, want a message and response.completed", ev)
	}
	var who struct{ Me string }
	if got.Name != "mcp__chat.chat_whoami" || got.JSON(&who) != nil || who.Me != "repo" {
		t.Fatalf("the step saw %+v", got)
	}
}

// doneItems are the items of response.output_item.done events.
func doneItems(t *testing.T, events []event) []map[string]any {
	t.Helper()
	if len(events) == 0 || events[0].name != "response.created" || events[len(events)-1].name != "response.completed" {
		t.Fatalf("stream does not run from response.created to response.completed: %v", events)
	}
	var items []map[string]any
	for _, e := range events {
		if e.name == "response.output_item.done" {
			items = append(items, e.data["item"].(map[string]any))
		}
	}
	return items
}

func TestLimitsEndTheServer(t *testing.T) {
	s := start(t, Limits{Requests: 1}, End("one"))
	body := map[string]any{"model": "m", "stream": true, "tools": []any{map[string]any{"name": "ToolSearch"}}, "messages": []any{}}
	post(t, s.URL+"/v1/messages", body)
	if code, _ := post(t, s.URL+"/v1/messages", body); code != http.StatusBadRequest {
		t.Fatalf("a request over the limit got %d", code)
	}
	if s.Err() == nil {
		t.Fatal("a refused request is no problem")
	}

	s = start(t, Limits{Lifetime: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Await(ctx, func([]Exchange) bool { return false }) // returns when the server closes
	if ctx.Err() != nil {
		t.Fatal("the server outlived its lifetime")
	}
	if _, err := http.Get(s.URL + "/v1/models"); err == nil {
		t.Fatal("the server still answers after its lifetime")
	}
}

// A held answer goes out when the test lets it go; meanwhile the server
// answers other requests and logs the held one as in flight.
func TestHoldKeepsAnAnswerBackUntilReleased(t *testing.T) {
	release := make(chan struct{})
	s := start(t, Limits{}, func(*Turn) Reply { return Reply{Text: "slow answer", Hold: release} })
	url := s.URL + "/v1/responses"
	user := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "SLOW"}}}
	tools := []any{map[string]any{"type": "function", "name": "exec_command"}}
	done := make(chan []event, 1)
	go func() {
		_, ev := post(t, url, map[string]any{"model": "m", "stream": true, "tools": tools, "input": []any{user}})
		done <- ev
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !s.Await(ctx, func(log []Exchange) bool { return len(log) == 1 && s.StepsRun() == 1 }) {
		t.Fatal("the held request never arrived")
	}
	if code, _ := post(t, url, map[string]any{"model": "m", "stream": true, "input": "a title please"}); code != http.StatusOK {
		t.Errorf("a side request during the hold: %d", code)
	}
	select {
	case <-done:
		t.Fatal("the held answer went out before it was released")
	default:
	}
	if k := s.Exchanges()[0].Kind; k != InFlight {
		t.Errorf("the held request is logged as %q", k)
	}
	close(release)
	if items := doneItems(t, <-done); len(items) != 1 || items[0]["type"] != "message" {
		t.Errorf("the released answer is %v", items)
	}
}

// The title an interactive Codex asks for at a new thread's first prompt
// (tools offered, a structured answer of one field) is a side request:
// it does not take a step of the script.
func TestOpenAITitleRequestLeavesTheScript(t *testing.T) {
	s := start(t, Limits{}, End("the turn's answer"))
	user := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Generate a concise, single-line task title"}}}
	format := map[string]any{"type": "json_schema", "name": "codex_output_schema", "strict": true,
		"schema": map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}}}
	_, ev := post(t, s.URL+"/v1/responses", map[string]any{"model": "m", "stream": true, "input": []any{user},
		"tools": []any{map[string]any{"type": "function", "name": "exec_command"}}, "text": map[string]any{"format": format}})
	if items := doneItems(t, ev); len(items) != 1 || s.StepsRun() != 0 || s.Exchanges()[0].Kind != SideRequest {
		t.Errorf("the title request took a step (%d run, kind %s): %v", s.StepsRun(), s.Exchanges()[0].Kind, items)
	}
}
