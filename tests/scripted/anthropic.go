package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Anthropic Messages API as Claude Code uses it: POST /v1/messages
// with "stream": true for the conversation, answered with Server-Sent
// Events; other requests (count_tokens, the model list, a non-streaming
// side call) are answered without the script.

type anthropicRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name         string `json:"name"`
		DeferLoading bool   `json:"defer_loading"`
	} `json:"tools"`
}

// anthropicBlock is one content block of any type we read.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	ToolName  string          `json:"tool_name"` // tool_reference
}

// blocks decodes content that is either a string or a list of blocks.
func blocks(raw json.RawMessage) []anthropicBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var bs []anthropicBlock
	json.Unmarshal(raw, &bs)
	return bs
}

// ToolSearch is Claude Code's built-in tool that loads deferred tools.
const claudeToolSearch = "ToolSearch"

// ClaudeName is how Claude Code names an MCP tool.
func ClaudeName(server, tool string) string { return "mcp__" + server + "__" + tool }

func (c Call) claudeName() string {
	if c.Server == "" {
		return c.Tool
	}
	return ClaudeName(c.Server, c.Tool)
}

// anthropicTurn is the protocol-free view of a request.
func anthropicTurn(req *anthropicRequest, body []byte) *Turn {
	t := &Turn{Protocol: "anthropic", Body: body}
	for _, tool := range req.Tools {
		if !tool.DeferLoading {
			t.Tools = append(t.Tools, tool.Name)
		}
	}
	for _, b := range blocks(req.System) {
		t.add(Part{Role: "instructions", Text: b.Text}, false, nil)
	}
	lastModel := -1
	for i, m := range req.Messages {
		if m.Role == "assistant" {
			lastModel = i
		}
	}
	names := map[string]string{} // tool_use id → tool name
	for i, m := range req.Messages {
		isNew := i > lastModel
		for _, b := range blocks(m.Content) {
			switch b.Type {
			case "text":
				t.add(Part{Role: m.Role, Text: b.Text}, isNew, nil)
			case "tool_use":
				names[b.ID] = b.Name
			case "tool_result":
				r := Result{Name: names[b.ToolUseID], IsError: b.IsError}
				var parts []string
				for _, rb := range blocks(b.Content) {
					switch rb.Type {
					case "text":
						parts = append(parts, rb.Text)
					case "tool_reference":
						t.loaded(rb.ToolName)
					}
				}
				r.Contents, r.Text = parts, strings.Join(parts, "\n")
				t.add(Part{Role: "tool", Tool: r.Name, Text: r.Text}, isNew, &r)
			}
		}
	}
	return t
}

// loaded adds a tool a search loaded (a tool_reference in a result) to
// the tools the model may call, unless it is there already.
func (t *Turn) loaded(name string) {
	for _, have := range t.Tools {
		if have == name {
			return
		}
	}
	t.Tools = append(t.Tools, name)
}

// claudeLoad returns the ToolSearch call that loads the MCP tools r calls
// and the turn does not offer yet.
func claudeLoad(t *Turn, r Reply) (Reply, bool) {
	var missing []string
	for _, c := range r.Calls {
		if name := c.claudeName(); c.Server != "" && !t.has(name) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return Reply{}, false
	}
	return Reply{Calls: []Call{Builtin(claudeToolSearch, map[string]any{"query": "select:" + strings.Join(missing, ",")})}}, true
}

func (t *Turn) has(tool string) bool {
	for _, have := range t.Tools {
		if have == tool {
			return true
		}
	}
	return false
}

// isMainTurn tells a turn of the conversation from a side call: Claude
// Code streams the conversation and offers its tools there; a title or a
// summary comes without tools or without streaming.
func (req *anthropicRequest) isMainTurn() bool {
	if !req.Stream {
		return false
	}
	for _, tool := range req.Tools {
		if tool.Name == claudeToolSearch {
			return true
		}
	}
	return false
}

func (s *Server) anthropicMessages(w http.ResponseWriter, r *request) Exchange {
	var req anthropicRequest
	if err := json.Unmarshal(r.body, &req); err != nil {
		s.problem("POST %s: body is not JSON: %v", r.URL.Path, err)
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"body is not JSON"}}`, http.StatusBadRequest)
		return Exchange{Kind: Refused}
	}
	if !req.isMainTurn() {
		anthropicSide(w, &req)
		return Exchange{Kind: SideRequest}
	}
	t := anthropicTurn(&req, r.body)
	reply, kind := s.answer(t, claudeLoad)
	s.hold(r, reply)
	id := fmt.Sprint(r.n)
	anthropicStream(w, req.Model, id, reply)
	return Exchange{Kind: kind, Step: t.N}
}

// anthropicSide answers a side call with a short text, streamed or not as
// asked.
func anthropicSide(w http.ResponseWriter, req *anthropicRequest) {
	const text = "Scripted session"
	if req.Stream {
		anthropicStream(w, req.Model, "side", Reply{Text: text})
		return
	}
	writeJSON(w, map[string]any{
		"id": "msg_side", "type": "message", "role": "assistant", "model": req.Model,
		"content":     []any{map[string]any{"type": "text", "text": text}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 2},
	})
}

// anthropicStream writes reply as a streamed message: a text block if
// there is text, then a tool_use block per call.
func anthropicStream(w http.ResponseWriter, model, id string, reply Reply) {
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_" + id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1},
	}})
	index := 0
	if reply.Text != "" || len(reply.Calls) == 0 {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "text_delta", "text": reply.Text}})
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, c := range reply.Calls {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%s_%d", id, i), "name": c.claudeName(), "input": map[string]any{}}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": argsJSON(c.Args)}})
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	stop := "end_turn"
	if len(reply.Calls) > 0 {
		stop = "tool_use"
	}
	sse.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

func (s *Server) anthropicCountTokens(w http.ResponseWriter, r *request) Exchange {
	// A rough count is enough: Claude Code uses it to size the context.
	writeJSON(w, map[string]any{"input_tokens": len(r.body)/4 + 1})
	return Exchange{Kind: SideRequest}
}

// The model list, asked by both CLIs in some modes.
func (s *Server) models(w http.ResponseWriter, r *request) Exchange {
	writeJSON(w, map[string]any{
		"data":     []any{modelEntry("scripted-model")},
		"has_more": false, "first_id": "scripted-model", "last_id": "scripted-model",
		"object": "list",
	})
	return Exchange{Kind: SideRequest}
}

func (s *Server) model(w http.ResponseWriter, r *request) Exchange {
	writeJSON(w, modelEntry(r.PathValue("id")))
	return Exchange{Kind: SideRequest}
}

func modelEntry(id string) map[string]any {
	return map[string]any{"type": "model", "id": id, "display_name": id,
		"created_at": "2026-01-01T00:00:00Z", "object": "model", "owned_by": "scripted"}
}
