package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"
)

// benchHook times the hook binary as Claude Code runs it on every prompt
// (a process reading one JSON payload and printing what waits), on the
// benchmark conversation: 1,000 live items, 300 of them in the reader's
// channels. The hook's own benchmark (go test ./tests -bench Hook) times
// every event on a conversation with one item.
func benchHook(w *world, o options, r *report) error {
	if w.hookBin == "" {
		r.add(figure{what: "hook whole process (UserPromptSubmit)", setup: "—", value: "not measured: the checkout has no cmd/mcpp-chat-hook",
			goal: "p50 < 10 ms, flat 10k → 100k", met: "no", command: "go run ./tests/bench -only hook"})
		return nil
	}
	floor, err := w.processFloor(100)
	if err != nil {
		return err
	}
	r.add(figure{what: "hook process floor (`--version`)", setup: "no database", lat: floor, command: "go run ./tests/bench -only hook"})
	quietGoal := floor.pct(50) + time.Millisecond
	for _, event := range []string{"SessionStart", "UserPromptSubmit"} {
		var p50 []time.Duration
		for _, n := range hookUnread {
			lat, err := w.timeHook(event, n)
			if err != nil {
				return err
			}
			goal, met := "", ""
			if event == "UserPromptSubmit" {
				// Prompts after the first are quiet: the session was told.
				goal, met = "p50 ≤ floor p50 + 1 ms = "+ms(quietGoal), yesNo(lat.pct(50) <= quietGoal)
			}
			r.add(figure{what: "hook whole process (" + event + ")", setup: fmt.Sprintf("%dk unread, 1,000 live items (300 seen)", n/1000), lat: lat,
				goal: goal, met: met, command: "go run ./tests/bench -only hook"})
			p50 = append(p50, lat.pct(50))
		}
		r.ratios = append(r.ratios, ratio{tool: "hook " + event + " (10k → 100k unread)", small: p50[0], big: p50[1]})
	}
	return nil
}

// timeHook runs the hook for one event 100 times (after 10 that warm the
// page cache) in one session, the way a session's prompts follow each other.
func (w *world) timeHook(event string, unread int) (samples, error) {
	t, err := w.unread(unread)
	if err != nil {
		return nil, err
	}
	run, err := w.newRun(t.path)
	if err != nil {
		return nil, err
	}
	ws := t.parties[0].Workspace
	payload, _ := json.Marshal(map[string]any{"session_id": "bench-" + event, "transcript_path": "", "cwd": ws,
		"hook_event_name": event, "prompt": "carry on", "source": "startup", "permission_mode": "default"})
	var lat samples
	for i := 0; i < 110; i++ {
		cmd := exec.Command(w.hookBin, "--event", event)
		cmd.Dir = ws
		cmd.Env = append(run.env, "CLAUDE_PROJECT_DIR="+ws)
		cmd.Stdin = bytes.NewReader(payload)
		begin := time.Now()
		out, err := cmd.Output()
		d := time.Since(begin)
		if err != nil {
			return nil, fmt.Errorf("hook %s: %v: %s", event, err, out)
		}
		if event == "SessionStart" && len(bytes.TrimSpace(out)) == 0 {
			return nil, fmt.Errorf("the hook printed nothing at SessionStart with %d unread", unread)
		}
		if i >= 10 {
			lat = append(lat, d)
		}
	}
	return lat, nil
}
