package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI Responses API as Codex uses it: POST /v1/responses with
// "stream": true, answered with Server-Sent Events. Codex hides MCP tools
// behind its client-executed tool_search: the model calls it
// (a tool_search_call item), Codex answers with the matching tools (a
// tool_search_output item), and only then may the model call them, as a
// function_call with a namespace (mcp__chat) and a name (chat_inbox).

type openaiRequest struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []openaiTool    `json:"tools"`
	Text         struct {
		Format struct {
			Type   string `json:"type"`
			Schema struct {
				Properties map[string]any `json:"properties"`
			} `json:"schema"`
		} `json:"format"`
	} `json:"text"`
}

type openaiTool struct {
	Type  string       `json:"type"`
	Name  string       `json:"name"`
	Tools []openaiTool `json:"tools"` // a namespace's functions
}

// openaiItem is one input item of any type we read.
type openaiItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Tools     []openaiTool    `json:"tools"` // tool_search_output
}

// CodexName is how the turn lists an MCP tool Codex offers: its namespace
// and its name, joined by a dot.
func CodexName(server, tool string) string { return "mcp__" + server + "." + tool }

const codexToolSearch = "tool_search"

func (c Call) codexName() (namespace, name string) {
	if c.Server == "" {
		return "", c.Tool
	}
	return "mcp__" + c.Server, c.Tool
}

// openaiTexts decodes message content or a tool output: a string, or a
// list of parts with text.
func openaiTexts(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return out
}

// toolNames are the names of tools, namespaced ones as namespace.name:
// what a tool search found.
func toolNames(tools []openaiTool) []string {
	var t Turn
	t.addTools(tools)
	return t.Tools
}

// addTools lists tools under their Codex names (namespaced ones as
// namespace.name).
func (t *Turn) addTools(tools []openaiTool) {
	for _, tool := range tools {
		switch tool.Type {
		case "namespace":
			for _, f := range tool.Tools {
				t.loaded(tool.Name + "." + f.Name)
			}
		case "tool_search":
			t.loaded(codexToolSearch)
		default:
			if tool.Name != "" {
				t.loaded(tool.Name)
			}
		}
	}
}

func openaiTurn(req *openaiRequest, body []byte) *Turn {
	t := &Turn{Protocol: "openai", Body: body}
	t.addTools(req.Tools)
	if req.Instructions != "" {
		t.add(Part{Role: "instructions", Text: req.Instructions}, false, nil)
	}
	var items []openaiItem
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		items = []openaiItem{{Type: "message", Role: "user", Content: req.Input}}
	} else {
		json.Unmarshal(req.Input, &items)
	}
	lastModel := -1 // the model's last item: a message of its own or a call
	for i, it := range items {
		if it.Role == "assistant" || it.Type == "function_call" || it.Type == "custom_tool_call" || it.Type == "tool_search_call" {
			lastModel = i
		}
	}
	names := map[string]string{} // call_id → tool name
	for i, it := range items {
		isNew := i > lastModel
		switch it.Type {
		case "message", "":
			for _, text := range openaiTexts(it.Content) {
				t.add(Part{Role: it.Role, Text: text}, isNew, nil)
			}
		case "function_call", "custom_tool_call":
			names[it.CallID] = it.Name
			if it.Namespace != "" {
				names[it.CallID] = it.Namespace + "." + it.Name
			}
		case "function_call_output", "custom_tool_call_output":
			texts := openaiTexts(it.Output)
			r := Result{Name: names[it.CallID], Contents: texts, Text: strings.Join(texts, "\n")}
			t.add(Part{Role: "tool", Tool: r.Name, Text: r.Text}, isNew, &r)
		case "additional_tools":
			t.addTools(it.Tools)
		case "tool_search_output":
			t.addTools(it.Tools)
			found := toolNames(it.Tools)
			r := Result{Name: codexToolSearch, Contents: found, Text: strings.Join(found, "\n")}
			t.add(Part{Role: "tool", Tool: r.Name, Text: r.Text}, isNew, &r)
		}
	}
	return t
}

// codexLoad returns the tool_search call that loads the MCP tools r calls
// and the turn does not offer yet. Like an agent, it searches for the
// tool's name; Codex's search ranks the tools' names and descriptions.
func codexLoad(t *Turn, r Reply) (Reply, bool) {
	var search []Call
	for _, c := range r.Calls {
		if ns, name := c.codexName(); ns != "" && !t.has(ns+"."+name) {
			search = append(search, Builtin(codexToolSearch, map[string]any{"query": name}))
		}
	}
	return Reply{Calls: search}, len(search) > 0
}

// isMainTurn tells a turn of the conversation from a side call (Codex
// asks for summaries and titles without tools). Models in Codex's "code
// mode" get their tools in an additional_tools input item instead.
func (req *openaiRequest) isMainTurn() bool {
	return req.Stream && !req.isTitle() && (len(req.Tools) > 0 || bytes.Contains(req.Input, []byte(`"type":"additional_tools"`)))
}

// isTitle tells the request an interactive Codex sends for a new thread's
// title — with a tool, but for a structured answer of one field, title —
// from a turn.
func (req *openaiRequest) isTitle() bool {
	f := req.Text.Format
	_, title := f.Schema.Properties["title"]
	return f.Type == "json_schema" && title && len(f.Schema.Properties) == 1
}

func (s *Server) openaiResponses(w http.ResponseWriter, r *request) Exchange {
	var req openaiRequest
	if err := json.Unmarshal(r.body, &req); err != nil {
		s.problem("POST %s: body is not JSON: %v", r.URL.Path, err)
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"body is not JSON"}}`, http.StatusBadRequest)
		return Exchange{Kind: Refused}
	}
	id := fmt.Sprint(r.n)
	if !req.isMainTurn() {
		text := "Scripted session"
		if req.isTitle() {
			text = `{"title":"Scripted session"}`
		}
		openaiStream(w, req.Model, "side"+id, Reply{Text: text})
		return Exchange{Kind: SideRequest}
	}
	t := openaiTurn(&req, r.body)
	reply, kind := s.answer(t, codexLoad)
	s.hold(r, reply)
	openaiStream(w, req.Model, id, reply)
	return Exchange{Kind: kind, Step: t.N}
}

// openaiStream writes reply as a streamed response: a message item if
// there is text, then an item per call.
func openaiStream(w http.ResponseWriter, model, id string, reply Reply) {
	sse := newSSE(w)
	resp := map[string]any{"id": "resp_" + id, "object": "response", "created_at": 1, "status": "in_progress", "model": model, "output": []any{}}
	sse.event("response.created", map[string]any{"type": "response.created", "response": resp})
	var output []any
	if reply.Text != "" || len(reply.Calls) == 0 {
		output = append(output, openaiMessage(sse, len(output), "msg_"+id, reply.Text))
	}
	for i, c := range reply.Calls {
		output = append(output, openaiCall(sse, len(output), fmt.Sprintf("%s_%d", id, i), c))
	}
	resp["status"], resp["output"] = "completed", output
	resp["usage"] = map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	sse.event("response.completed", map[string]any{"type": "response.completed", "response": resp})
}

func openaiMessage(sse *sse, index int, id, text string) map[string]any {
	item := map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}
	sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": index, "item": item})
	sse.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": id, "output_index": index, "content_index": 0, "delta": text})
	item = map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": index, "item": item})
	return item
}

func openaiCall(sse *sse, index int, id string, c Call) map[string]any {
	args := argsJSON(c.Args)
	if c.Server == "" && c.Tool == codexToolSearch {
		var parsed any
		json.Unmarshal([]byte(args), &parsed)
		item := map[string]any{"type": "tool_search_call", "id": "ts_" + id, "call_id": "call_" + id,
			"execution": "client", "status": "completed", "arguments": parsed}
		sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": index, "item": item})
		sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": index, "item": item})
		return item
	}
	if input, ok := c.Args.(Freeform); ok && c.Server == "" {
		item := map[string]any{"type": "custom_tool_call", "id": "ctc_" + id, "call_id": "call_" + id, "name": c.Tool, "input": string(input), "status": "completed"}
		sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": index, "item": item})
		sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": index, "item": item})
		return item
	}
	ns, name := c.codexName()
	item := map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": name, "arguments": "", "status": "in_progress"}
	if ns != "" {
		item["namespace"] = ns
	}
	sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": index, "item": item})
	sse.event("response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta", "item_id": "fc_" + id, "output_index": index, "delta": args})
	sse.event("response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done", "item_id": "fc_" + id, "output_index": index, "arguments": args})
	item["arguments"], item["status"] = args, "completed"
	sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": index, "item": item})
	return item
}
