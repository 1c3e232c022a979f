package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Payload is the JSON object Claude Code (or Codex) writes on a hook's
// stdin; only the fields the hook uses.
type Payload struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	Source         string `json:"source"`
	StopHookActive bool   `json:"stop_hook_active"`
	// PreToolUse: the tool and its input; Codex adds the turn's id.
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	TurnID    string          `json:"turn_id"`
	// Prompt is UserPromptSubmit's: a person's words, or a wake's notice.
	Prompt string `json:"prompt"`
}

// maxPayload bounds what the hook reads: a UserPromptSubmit payload carries
// the whole prompt, which may be long, but never this long.
const maxPayload = 16 << 20

// ReadPayload decodes the one JSON object on r.
func ReadPayload(r io.Reader) (Payload, error) {
	var p Payload
	data, err := io.ReadAll(io.LimitReader(r, maxPayload+1))
	if err != nil {
		return p, fmt.Errorf("read hook payload: %w", err)
	}
	if len(data) > maxPayload {
		return p, fmt.Errorf("hook payload is larger than %d MiB", maxPayload>>20)
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || trimmed[0] != '{' {
		return p, errors.New("hook payload is not a JSON object")
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("hook payload is not a JSON object: %w", err)
	}
	return p, nil
}
