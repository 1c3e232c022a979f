// Package settings merges command hooks into a Claude Code settings.json
// without disturbing anything else in it: every other key, hook and the
// order they appear in stay as the user left them.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Hook is one command hook to register for one Claude Code event.
type Hook struct {
	Event   string
	Command string
	Timeout int
	// AsyncRewake runs the hook in the background; its exit 2 wakes an
	// idle session (Claude Code's "asyncRewake", experimental).
	AsyncRewake bool
	// RewakeSummary is the line Claude Code shows the person when such a
	// hook wakes the session, instead of "Stop hook feedback".
	RewakeSummary string
	// Replaces recognises an older form of this hook (say, the same program
	// at a path the checkout has since moved from), updated in place
	// rather than added twice. nil: only an identical command counts.
	Replaces func(command string) bool
}

// Action is what a merge did with one hook.
type Action string

// The actions.
const (
	Added   Action = "added"
	Kept    Action = "already there"
	Updated Action = "updated"
)

// Change reports one hook's action.
type Change struct {
	Hook   Hook
	Action Action
}

// Merge adds hooks to the settings document data (empty means {}) under
// "hooks".<event>, each once. It returns the new document and what it did;
// when nothing changes the document is returned byte for byte.
func Merge(data []byte, hooks []Hook) ([]byte, []Change, error) {
	doc := object{}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := syntax(data); err != nil {
			return nil, nil, err
		}
		var err error
		if doc, err = parseObject(data); err != nil {
			return nil, nil, fmt.Errorf("not valid JSON for a settings file: %w", err)
		}
	}
	all := object{}
	if raw, ok := doc.get("hooks"); ok {
		var err error
		if all, err = parseObject(raw); err != nil {
			return nil, nil, fmt.Errorf(`"hooks" is not a JSON object: %w`, err)
		}
	}
	changes := make([]Change, 0, len(hooks))
	dirty := false
	for _, h := range hooks {
		groups, err := parseArray(all, h.Event)
		if err != nil {
			return nil, nil, err
		}
		groups, action, err := place(groups, h)
		if err != nil {
			return nil, nil, fmt.Errorf("hooks.%s: %w", h.Event, err)
		}
		changes = append(changes, Change{Hook: h, Action: action})
		if action != Kept {
			dirty = true
			all.set(h.Event, encodeArray(groups))
		}
	}
	if !dirty {
		return data, changes, nil
	}
	doc.set("hooks", all.encode())
	var out bytes.Buffer
	if err := json.Indent(&out, doc.encode(), "", "  "); err != nil {
		return nil, nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), changes, nil
}

// syntax reports where a document stops being JSON, by line.
func syntax(data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("not valid JSON (line %d: %v)", line, se)
	}
	return nil
}

func parseArray(all object, event string) ([]json.RawMessage, error) {
	raw, ok := all.get(event)
	if !ok {
		return nil, nil
	}
	var groups []json.RawMessage
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, fmt.Errorf("hooks.%s is not a JSON array: %w", event, err)
	}
	return groups, nil
}

// place finds h among the event's matcher groups, updates an older form of
// it, or appends a group holding it.
func place(groups []json.RawMessage, h Hook) ([]json.RawMessage, Action, error) {
	for gi, g := range groups {
		group, err := parseObject(g)
		if err != nil {
			continue // not ours to judge; Claude Code reports it
		}
		raw, ok := group.get("hooks")
		if !ok {
			continue
		}
		var entries []json.RawMessage
		if json.Unmarshal(raw, &entries) != nil {
			continue
		}
		for ei, e := range entries {
			entry, err := parseObject(e)
			if err != nil {
				continue
			}
			var cmd string
			if c, ok := entry.get("command"); !ok || json.Unmarshal(c, &cmd) != nil {
				continue
			}
			switch {
			case cmd == h.Command:
				return groups, Kept, nil
			case h.Replaces != nil && h.Replaces(cmd):
				entry.set("command", encodeValue(h.Command))
				entries[ei] = entry.encode()
				group.set("hooks", encodeArray(entries))
				groups[gi] = group.encode()
				return groups, Updated, nil
			}
		}
	}
	entry := object{}
	entry.set("type", encodeValue("command"))
	entry.set("command", encodeValue(h.Command))
	if h.AsyncRewake {
		entry.set("asyncRewake", encodeValue(true))
	}
	if h.RewakeSummary != "" {
		entry.set("rewakeSummary", encodeValue(h.RewakeSummary))
	}
	if h.Timeout > 0 {
		entry.set("timeout", encodeValue(h.Timeout))
	}
	group := object{}
	group.set("hooks", encodeArray([]json.RawMessage{entry.encode()}))
	return append(groups, group.encode()), Added, nil
}

// Template is the settings document holding only hooks: what a user pastes.
func Template(hooks []Hook) []byte {
	out, _, err := Merge(nil, hooks)
	if err != nil {
		panic(err) // merging into an empty document cannot fail
	}
	return out
}

// MergeFile merges hooks into the settings file at path (created if
// missing, with its folder). Before changing an existing file it copies it
// to path.bak; a file that is not valid JSON is refused and left untouched.
// It returns what it did and the backup written ("" for none).
func MergeFile(path string, hooks []Hook) ([]Change, string, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // keep a dotfiles symlink a symlink
	}
	old, err := os.ReadFile(path)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("cannot read %s: %w — check its permissions", path, err)
	}
	data, changes, err := Merge(old, hooks)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w — fix the file or move it aside, then run this again; nothing was written", path, err)
	}
	if existed && bytes.Equal(data, old) {
		return changes, "", nil
	}
	mode := fs.FileMode(0o600)
	backup := ""
	if existed {
		if info, err := os.Stat(path); err == nil {
			mode = info.Mode().Perm()
		}
		backup = path + ".bak"
		if err := os.WriteFile(backup, old, mode); err != nil {
			return nil, "", fmt.Errorf("cannot write the backup %s: %w — nothing was changed", backup, err)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, "", fmt.Errorf("cannot create %s: %w", filepath.Dir(path), err)
	}
	if err := replace(path, data, mode); err != nil {
		return nil, backup, err
	}
	return changes, backup, nil
}

// replace writes through a temporary file and a rename, so a crash never
// leaves a half-written settings file.
func replace(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("cannot write beside %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// object is a JSON object that remembers its key order.
type object []member

type member struct {
	key   string
	value json.RawMessage
}

func parseObject(data []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if tok != json.Delim('{') {
		return nil, fmt.Errorf("want an object, found %v", describe(tok))
	}
	var o object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, member{key: tok.(string), value: v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected text after the closing brace")
	}
	return o, nil
}

func describe(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", tok)
	case string:
		return "a string"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// get returns the value of key (the last one, as JSON decoders do).
func (o object) get(key string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].key == key {
			return o[i].value, true
		}
	}
	return nil, false
}

func (o *object) set(key string, value json.RawMessage) {
	for i := len(*o) - 1; i >= 0; i-- {
		if (*o)[i].key == key {
			(*o)[i].value = value
			return
		}
	}
	*o = append(*o, member{key: key, value: value})
}

func (o object) encode() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(encodeValue(m.key))
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func encodeArray(items []json.RawMessage) json.RawMessage {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = string(it)
	}
	return json.RawMessage("[" + strings.Join(parts, ",") + "]")
}

// encodeValue marshals without HTML escaping, so a user's `&&` stays `&&`.
func encodeValue(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only strings and ints come here
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
