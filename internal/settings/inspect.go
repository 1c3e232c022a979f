package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Entry is one command hook found in a settings document.
type Entry struct {
	Where       string // e.g. hooks.Stop[1].hooks[0]
	Event       string
	Command     string
	AsyncRewake bool
}

// Inspect lists the command hooks of a settings document and the reasons
// Claude Code would not load them: a document that is not JSON, or hooks
// not in the shape {"hooks": {"<Event>": [{"hooks": [{"type": "command",
// "command": "...", "timeout": N}]}]}}. Claude Code ignores a settings
// file that is not JSON as a whole, without a word.
func Inspect(data []byte) (entries []Entry, problems []string) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil // an empty file holds no hooks; Claude Code treats it as {}
	}
	if err := syntax(data); err != nil {
		return nil, []string{err.Error() + ": Claude Code ignores the whole file"}
	}
	doc, err := parseObject(data)
	if err != nil {
		return nil, []string{"not a JSON object: Claude Code ignores the whole file"}
	}
	raw, ok := doc.get("hooks")
	if !ok {
		return nil, nil
	}
	var events map[string]json.RawMessage
	if json.Unmarshal(raw, &events) != nil {
		return nil, []string{`"hooks" is not a JSON object`}
	}
	names := make([]string, 0, len(events))
	for name := range events {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, event := range names {
		e, p := inspectEvent(event, events[event])
		entries, problems = append(entries, e...), append(problems, p...)
	}
	return entries, problems
}

func inspectEvent(event string, raw json.RawMessage) (entries []Entry, problems []string) {
	var groups []json.RawMessage
	if json.Unmarshal(raw, &groups) != nil {
		return nil, []string{fmt.Sprintf("hooks.%s is not a list of matcher groups", event)}
	}
	for gi, g := range groups {
		where := fmt.Sprintf("hooks.%s[%d]", event, gi)
		var group struct {
			Hooks []json.RawMessage `json:"hooks"`
		}
		if json.Unmarshal(g, &group) != nil || group.Hooks == nil {
			problems = append(problems, where+` is not an object with a "hooks" list`)
			continue
		}
		for hi, h := range group.Hooks {
			e, problem := inspectEntry(fmt.Sprintf("%s.hooks[%d]", where, hi), h)
			if problem != "" {
				problems = append(problems, problem)
				continue
			}
			if e.Command != "" {
				e.Event = event
				entries = append(entries, e)
			}
		}
	}
	return entries, problems
}

// inspectEntry checks one hook entry; only command hooks are returned.
func inspectEntry(where string, raw json.RawMessage) (Entry, string) {
	var h struct {
		Type        *string          `json:"type"`
		Command     *json.RawMessage `json:"command"`
		Timeout     *json.RawMessage `json:"timeout"`
		AsyncRewake *json.RawMessage `json:"asyncRewake"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return Entry{}, where + " is not an object"
	}
	if h.Type == nil {
		return Entry{}, where + ` has no "type"`
	}
	if *h.Type != "command" {
		return Entry{}, "" // another kind of hook: not ours to judge
	}
	var e Entry
	if h.Command == nil || json.Unmarshal(*h.Command, &e.Command) != nil || e.Command == "" {
		return Entry{}, where + `: "command" is not a non-empty string`
	}
	var n float64
	if h.Timeout != nil && (json.Unmarshal(*h.Timeout, &n) != nil || n <= 0) {
		return Entry{}, where + `: "timeout" is not a positive number of seconds`
	}
	if h.AsyncRewake != nil && json.Unmarshal(*h.AsyncRewake, &e.AsyncRewake) != nil {
		return Entry{}, where + `: "asyncRewake" is not true or false`
	}
	e.Where = where
	return e, ""
}

// HooksDisabled reports a settings document that turns every hook off
// ("disableAllHooks": true): the person's choice, which setup leaves.
func HooksDisabled(data []byte) bool {
	doc, err := parseObject(data)
	return err == nil && isTrue(&doc, "disableAllHooks")
}
