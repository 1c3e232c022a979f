// Package scripted is a model server for end-to-end tests: real coding
// CLIs (Claude Code, Codex) talk to it as they would to their vendor's
// API, and it answers each turn of the conversation from a script written
// in the test. It listens on loopback only, records every request body,
// is bounded in requests and in time, and stops by itself.
//
// One script serves both protocols: a step names an MCP tool by server
// and tool name, and the protocol adapter spells it as its CLI expects
// (mcp__chat__chat_inbox for Claude Code, namespace mcp__chat and name
// chat_inbox for Codex) and loads it through the CLI's tool search first
// when the CLI defers it.
package scripted

import (
	"encoding/json"
	"strings"
)

// A Step answers one turn of the main conversation. It may look at what
// the CLI sent (the tool results it got, the context it was given).
type Step func(*Turn) Reply

// Reply is the model's answer to one turn: tool calls (the CLI runs them
// and comes back with their results), or, with none, text that ends the
// turn.
type Reply struct {
	Text  string
	Calls []Call
	// Again keeps the step for the next turn too: a step that reads until
	// nothing more comes answers every turn until it ends the loop.
	Again bool
	// Hold, when set, keeps the answer back until it is closed (or the
	// server closes): the CLI's turn runs on meanwhile, as with a slow
	// model, and the test says when it ends. The server takes other
	// requests in the meantime.
	Hold <-chan struct{}
}

// Call is one tool call. Server is the MCP server's name as the CLI knows
// it ("chat"); empty for a built-in tool of the CLI (Bash, ToolSearch).
type Call struct {
	Server string
	Tool   string
	Args   any
}

// MCP is a call of an MCP server's tool.
func MCP(server, tool string, args any) Call { return Call{Server: server, Tool: tool, Args: args} }

// Builtin is a call of one of the CLI's own tools.
func Builtin(tool string, args any) Call { return Call{Tool: tool, Args: args} }

// Freeform is the input of a call of a freeform tool of Codex's (a
// "custom" tool, such as apply_patch): text the model writes as it is,
// not JSON arguments.
type Freeform string

// Do is a step that makes these calls.
func Do(calls ...Call) Step {
	return func(*Turn) Reply { return Reply{Calls: calls} }
}

// End is a step that ends the turn with text.
func End(text string) Step {
	return func(*Turn) Reply { return Reply{Text: text} }
}

// Turn is what the CLI sent for one turn of the main conversation, in a
// form that does not depend on the protocol.
type Turn struct {
	N        int      // 1 for the first turn of the script
	Protocol string   // "anthropic" or "openai"
	Body     []byte   // the request body as received
	Tools    []string // the tools the model may call now, as the CLI names them
	// Parts are every piece of text in the request, in order: the system
	// prompt or instructions, context the CLI or its hooks added, the
	// user's words, the model's, tool results.
	Parts []Part
	// New are the parts after the model last spoke: the user's prompt and
	// the context hooks added to it, or the results of the model's calls,
	// or what made the CLI come back on its own (a Stop hook's block, a
	// background wake).
	New []Part
	// Results are the tool results among New, in order.
	Results []Result
}

// Part is one piece of text and who it is from: "instructions" (the
// top-level system prompt), a message role ("system", "developer",
// "user", "assistant"), or "tool" for a tool result (Tool names it).
type Part struct {
	Role string
	Tool string
	Text string
}

// Result is one tool's result as the model receives it.
type Result struct {
	Name     string   // the tool as the CLI names it
	Contents []string // its text parts, in order; for Codex's tool_search, the tools it found
	Text     string   // the text parts joined by "\n"
	IsError  bool
}

// IsMCP reports whether the result is of the MCP tool server/tool, in
// either CLI's spelling.
func (r Result) IsMCP(server, tool string) bool {
	return r.Name == ClaudeName(server, tool) || r.Name == CodexName(server, tool)
}

// Contains reports whether some text of the turn holds s.
func (t *Turn) Contains(s string) bool { return anyContains(t.Parts, s) }

// NewContains reports whether some text the CLI added since the model
// last spoke holds s.
func (t *Turn) NewContains(s string) bool { return anyContains(t.New, s) }

func anyContains(parts []Part, s string) bool {
	for _, p := range parts {
		if strings.Contains(p.Text, s) {
			return true
		}
	}
	return false
}

// add appends a part; new parts also go to New, and tool results among
// them to Results.
func (t *Turn) add(p Part, isNew bool, r *Result) {
	t.Parts = append(t.Parts, p)
	if !isNew {
		return
	}
	t.New = append(t.New, p)
	if r != nil {
		t.Results = append(t.Results, *r)
	}
}

// Last is the last tool result of the turn, or a zero Result.
func (t *Turn) Last() Result {
	if len(t.Results) == 0 {
		return Result{}
	}
	return t.Results[len(t.Results)-1]
}

// JSON decodes the last JSON object in the result's text (our tools
// return display markdown, then the result JSON) into into.
func (r Result) JSON(into any) error {
	text := strings.TrimSpace(r.Text)
	for i := strings.LastIndex(text, "\n{"); ; i = strings.LastIndex(text[:i], "\n{") {
		start := i + 1
		if i < 0 {
			start = 0
		}
		if err := json.Unmarshal([]byte(text[start:]), into); err == nil || i < 0 {
			return err
		}
	}
}
