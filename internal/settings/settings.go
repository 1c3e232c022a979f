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
	"reflect"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/config"
)

// Hook is one command hook to register for one Claude Code event.
type Hook struct {
	Event   string
	Command string
	Timeout int
	// Matcher names the tools whose calls run the hook (PreToolUse:
	// "Edit|Write"); "" runs it for every one. A new group gets it.
	Matcher string
	// AsyncRewake runs the hook in the background; its exit 2 wakes an
	// idle session (Claude Code's "asyncRewake", experimental).
	AsyncRewake bool
	// RewakeSummary is the line Claude Code shows the person when such a
	// hook wakes the session, instead of "Stop hook feedback".
	RewakeSummary string
	// Match recognises another form of this hook (the same program at a
	// path the checkout has since moved from, or for another database) and
	// says what command it becomes, so that it is updated in place rather
	// than added twice. nil: only an identical command counts.
	Match func(command string) (want string, ours bool)
	// UpdateOnly updates the hook where it is found and never adds it:
	// for an entry the user chose to have.
	UpdateOnly bool
	// Drop removes every entry of the hook and adds none: for an entry
	// the user chose not to have.
	Drop bool
}

// Action is what a merge did with one hook.
type Action string

// The actions.
const (
	Added   Action = "added"
	Kept    Action = "already there"
	Updated Action = "updated"
	Absent  Action = "not there" // an UpdateOnly hook not found
	Removed Action = "removed"
)

// Change reports one hook's action.
type Change struct {
	Hook   Hook
	Action Action
	// Duplicates is how many more entries of this hook were removed: one
	// hook per event, whatever earlier versions or hands left there.
	Duplicates int
}

// Merge adds hooks to the settings document data (empty means {}) under
// "hooks".<event>, each once. It returns the new document and what it did;
// when nothing changes the document is returned byte for byte.
func Merge(data []byte, hooks []Hook) ([]byte, []Change, error) {
	doc, all, err := parseHooks(data)
	if err != nil {
		return nil, nil, err
	}
	changes := make([]Change, 0, len(hooks))
	dirty := false
	for _, h := range hooks {
		groups, err := parseArray(all, h.Event)
		if err != nil {
			return nil, nil, err
		}
		groups, change := place(groups, h)
		changes = append(changes, change)
		if change.Action == Added || change.Action == Updated || change.Action == Removed || change.Duplicates > 0 {
			dirty = true
			setEvent(&all, h.Event, groups)
		}
	}
	if !dirty {
		return data, changes, nil
	}
	setHooks(&doc, all)
	out, err := render(data, doc)
	if err != nil {
		return nil, nil, err
	}
	return out, changes, keptOthers(data, out, func(event, cmd string) bool {
		for _, h := range hooks {
			if _, ours := h.matches(cmd); ours && h.Event == event {
				return true
			}
		}
		return false
	})
}

// setEvent sets the event's matcher groups, dropping an event left with
// none.
func setEvent(all *object, event string, groups []json.RawMessage) {
	if len(groups) == 0 {
		all.remove(event)
		return
	}
	all.set(event, encodeArray(groups))
}

// setHooks sets the document's "hooks", dropping the key when no event is
// left in it: a table we emptied is not left behind.
func setHooks(doc *object, all object) {
	if len(all) == 0 {
		doc.remove("hooks")
		return
	}
	doc.set("hooks", all.encode())
}

// parseHooks reads a settings document (empty means {}) and its "hooks"
// object.
func parseHooks(data []byte) (doc, hooks object, err error) {
	if len(bytes.TrimSpace(data)) > 0 {
		if err := syntax(data); err != nil {
			return nil, nil, err
		}
		if doc, err = parseObject(data); err != nil {
			return nil, nil, fmt.Errorf("not valid JSON for a settings file: %w", err)
		}
	}
	if raw, ok := doc.get("hooks"); ok {
		if hooks, err = parseObject(raw); err != nil {
			return nil, nil, fmt.Errorf(`"hooks" is not a JSON object: %w`, err)
		}
	}
	return doc, hooks, nil
}

// render writes the changed document over the person's: their layout
// kept wherever nothing changed (keepFormat), or, for a document that is
// not laid out over lines (none, or all on one), as Claude Code writes its
// own files. What it writes is always the document: should keeping the
// layout ever go wrong, it is written afresh.
func render(data []byte, doc object) ([]byte, error) {
	if bytes.IndexByte(bytes.TrimSpace(data), '\n') < 0 {
		return indent(doc)
	}
	out := keepFormat(data, doc.encode())
	if !json.Valid(out) || !sameJSON(out, doc.encode()) {
		return indent(doc)
	}
	return out, nil
}

// indent writes the document as Claude Code's own files are written.
func indent(doc object) ([]byte, error) {
	var out bytes.Buffer
	if err := json.Indent(&out, doc.encode(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
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

// place finds h among the event's matcher groups: the first entry that is
// h, or another form of it, is kept or updated in place, and any further
// ones are removed; with none, a group holding h is appended (unless h is
// UpdateOnly).
func place(groups []json.RawMessage, h Hook) ([]json.RawMessage, Change) {
	if h.Drop {
		return drop(groups, h)
	}
	change := Change{Hook: h, Action: Added}
	found := false
	groups = editEntries(groups, func(cmd string, entry *object) entryEdit {
		want, ours := h.matches(cmd)
		switch {
		case !ours:
			return keepEntry
		case found:
			change.Duplicates++
			return dropEntry
		}
		found = true
		edit := keepEntry
		if want != cmd {
			entry.set("command", encodeValue(want))
			change.Hook.Command = want
			edit = changeEntry
		}
		// An idle wake without the flag would run in the foreground and
		// hold every stop of the session until its timeout.
		if h.AsyncRewake && !isTrue(entry, "asyncRewake") {
			entry.set("asyncRewake", encodeValue(true))
			edit = changeEntry
		}
		change.Action = Kept
		if edit == changeEntry {
			change.Action = Updated
		}
		return edit
	})
	switch {
	case found:
		return groups, change
	case h.UpdateOnly:
		change.Action = Absent
		return groups, change
	}
	return append(groups, newGroup(h)), change
}

// drop removes every entry of h.
func drop(groups []json.RawMessage, h Hook) ([]json.RawMessage, Change) {
	change := Change{Hook: h, Action: Absent}
	groups = editEntries(groups, func(cmd string, _ *object) entryEdit {
		if _, ours := h.matches(cmd); !ours {
			return keepEntry
		}
		if change.Action == Removed {
			change.Duplicates++
		}
		change.Action, change.Hook.Command = Removed, cmd
		return dropEntry
	})
	return groups, change
}

// matches reports whether cmd is h, in this form or another (Match), and
// the command it becomes.
func (h Hook) matches(cmd string) (want string, ours bool) {
	if cmd == h.Command {
		return cmd, true
	}
	if h.Match != nil {
		return h.Match(cmd)
	}
	return cmd, false
}

// isTrue reports whether the object's key holds JSON true.
func isTrue(o *object, key string) bool {
	raw, ok := o.get(key)
	var b bool
	return ok && json.Unmarshal(raw, &b) == nil && b
}

// entryEdit is what editEntries does with one entry.
type entryEdit int

const (
	keepEntry   entryEdit = iota
	changeEntry           // the entry object was changed in place
	dropEntry
)

// editEntries runs edit on every command entry of the matcher groups, in
// order, which keeps it, changes the object it is given, or drops it. A
// group left with no entries is dropped; what is not a command entry
// in Claude Code's shape is left as it is (not ours to judge; Claude Code
// reports it). Groups nothing changed in keep their bytes.
func editEntries(groups []json.RawMessage, fn func(cmd string, entry *object) entryEdit) []json.RawMessage {
	out := groups[:0:0]
	for _, g := range groups {
		group, err := parseObject(g)
		if err != nil {
			out = append(out, g)
			continue
		}
		raw, ok := group.get("hooks")
		var entries []json.RawMessage
		if !ok || json.Unmarshal(raw, &entries) != nil {
			out = append(out, g)
			continue
		}
		kept, dirty := entries[:0:0], false
		for _, e := range entries {
			entry, err := parseObject(e)
			var cmd string
			if c, ok := entry.get("command"); err != nil || !ok || json.Unmarshal(c, &cmd) != nil {
				kept = append(kept, e)
				continue
			}
			switch fn(cmd, &entry) {
			case dropEntry:
				dirty = true
			case changeEntry:
				dirty = true
				kept = append(kept, entry.encode())
			default:
				kept = append(kept, e)
			}
		}
		switch {
		case !dirty:
			out = append(out, g)
		case len(kept) > 0 || len(entries) == 0:
			group.set("hooks", encodeArray(kept))
			out = append(out, group.encode())
		}
	}
	return out
}

func newGroup(h Hook) json.RawMessage {
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
	if h.Matcher != "" {
		group.set("matcher", encodeValue(h.Matcher))
	}
	group.set("hooks", encodeArray([]json.RawMessage{entry.encode()}))
	return group.encode()
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
	var changes []Change
	backup, err := EditFile(path, true, func(old []byte) ([]byte, bool, error) {
		data, cs, err := Merge(old, hooks)
		changes = cs
		return data, false, fixable(err)
	})
	return changes, backup, err
}

// RemoveFile removes the hooks match recognises from the settings file at
// path, as Remove does, with MergeFile's care: a .bak first, an invalid
// file refused untouched. A missing file has nothing to remove. A file
// left holding nothing at all (one that held only these hooks, as a
// file --write created does) is removed, its last version kept in the
// .bak; deleted reports that.
func RemoveFile(path string, match func(event, command string) bool) (changes []Change, backup string, deleted bool, err error) {
	backup, err = EditFile(path, false, func(old []byte) ([]byte, bool, error) {
		data, cs, err := Remove(old, match)
		changes = cs
		deleted = err == nil && len(cs) > 0 && isEmptyObject(data)
		return data, deleted, fixable(err)
	})
	return changes, backup, deleted && err == nil, err
}

// fixable adds to an error about the document what to do about it.
func fixable(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w — fix the file or move it aside, then run this again", err)
}

// isEmptyObject reports a document that is {} and nothing else.
func isEmptyObject(data []byte) bool {
	o, err := parseObject(data)
	return err == nil && len(o) == 0
}

// maxEditBytes bounds a file setup edits: a settings.json or a Codex
// config.toml is a few kilobytes.
const maxEditBytes = 16 << 20

// EditFile rewrites the file at path with fn's answer (created, with its
// folder, only if create), or removes it when fn says so. It copies a
// file it changes to path.bak first and writes nothing when fn fails or
// changes nothing. A symlink that leads to a file is written through, so
// that it stays a link (dotfiles); one that leads nowhere is refused, as
// is a file its owner made read-only: neither is setup's to replace.
// fn's error says what to do; EditFile adds the file and that nothing was
// written.
func EditFile(path string, create bool, fn func(old []byte) (data []byte, remove bool, err error)) (backup string, err error) {
	link := false
	if info, err := os.Lstat(path); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			to, _ := os.Readlink(path)
			return "", fmt.Errorf("%s is a symbolic link to %s, which does not exist — create that file (or put a file in the link's place), then run this again; nothing was written", path, to)
		}
		path, link = real, true
	}
	old, err := config.ReadSmallFile(path, maxEditBytes)
	existed := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("cannot read %s: %w — check it, then run this again; nothing was written", path, err)
	case !existed && !create:
		return "", nil
	}
	mode := fs.FileMode(0o600)
	if existed {
		info, err := os.Stat(path)
		if err != nil {
			return "", fmt.Errorf("cannot read %s: %w", path, err)
		}
		mode = info.Mode().Perm()
		if mode&0o200 == 0 {
			return "", fmt.Errorf("%s is read-only (mode %04o), which setup takes as yours to keep — make it writable (chmod u+w %s) if setup may change it, then run this again; nothing was written", path, mode, path)
		}
	}
	data, remove, err := fn(old)
	if err != nil {
		return "", fmt.Errorf("%s: %w; nothing was written", path, err)
	}
	if existed && !remove && bytes.Equal(data, old) {
		return "", nil
	}
	if existed {
		backup = path + ".bak"
		// Replaced, not written through: a symlink at .bak is not followed.
		if err := replace(backup, old, mode); err != nil {
			return "", fmt.Errorf("cannot write the backup %s: %w — nothing was changed", backup, err)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("cannot create %s: %w", filepath.Dir(path), err)
	}
	if remove && !link {
		if err := os.Remove(path); err != nil {
			return backup, fmt.Errorf("cannot remove %s: %w", path, err)
		}
		return backup, nil
	}
	// A link's file is emptied rather than removed: the link stays whole.
	if err := replace(path, data, mode); err != nil {
		return backup, err
	}
	return backup, nil
}

// Remove drops every command hook match recognises from the settings
// document data, and the matcher groups and event lists that leaves empty;
// everything else stays as it was. It returns the new document and what it
// removed; when nothing is removed the document is returned byte for byte.
func Remove(data []byte, match func(event, command string) bool) ([]byte, []Change, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return data, nil, nil
	}
	doc, all, err := parseHooks(data)
	if err != nil {
		return nil, nil, err
	}
	var changes []Change
	events := make([]string, len(all))
	for i, m := range all {
		events[i] = m.key
	}
	for _, event := range events {
		groups, err := parseArray(all, event)
		if err != nil {
			return nil, nil, err
		}
		before := len(changes)
		groups = editEntries(groups, func(cmd string, _ *object) entryEdit {
			if !match(event, cmd) {
				return keepEntry
			}
			changes = append(changes, Change{Hook: Hook{Event: event, Command: cmd}, Action: Removed})
			return dropEntry
		})
		if len(changes) > before {
			setEvent(&all, event, groups)
		}
	}
	if len(changes) == 0 {
		return data, nil, nil
	}
	setHooks(&doc, all)
	out, err := render(data, doc)
	if err != nil {
		return nil, nil, err
	}
	return out, changes, keptOthers(data, out, match)
}

// keptOthers judges an edit of a settings document: every key but "hooks"
// as it was, and every hook entry ours does not recognise still there,
// as it was, in its matcher group's company (compared as parsed, not as
// laid out). Its error says what the edit would have lost.
func keptOthers(before, after []byte, ours func(event, command string) bool) error {
	var b, a map[string]any
	if len(bytes.TrimSpace(before)) > 0 {
		if err := json.Unmarshal(before, &b); err != nil {
			return err
		}
	}
	if err := json.Unmarshal(after, &a); err != nil {
		return fmt.Errorf("the edit would leave a file that is not JSON (%v)", err)
	}
	for k := range mergeKeys(b, a) {
		if k != "hooks" && !reflect.DeepEqual(b[k], a[k]) {
			return fmt.Errorf("the edit would change %q, which is not setup's to change", k)
		}
	}
	if left := othersHooks(b, ours); !reflect.DeepEqual(left, othersHooks(a, ours)) {
		return errors.New("the edit would change a hook that is not mcpp-chat's")
	}
	return nil
}

func mergeKeys(a, b map[string]any) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

// othersHooks counts, per event, the hook entries ours does not
// recognise, each with its group's other keys (a matcher): what must
// outlast an edit.
func othersHooks(doc map[string]any, ours func(event, command string) bool) map[string]int {
	out := map[string]int{}
	events, _ := doc["hooks"].(map[string]any)
	for event, v := range events {
		groups, ok := v.([]any)
		if !ok {
			out[event+" "+canonical(v)]++
			continue
		}
		for _, g := range groups {
			group, ok := g.(map[string]any)
			entries, isList := group["hooks"].([]any)
			if !ok || !isList {
				out[event+" "+canonical(g)]++
				continue
			}
			company := map[string]any{}
			for k, x := range group {
				if k != "hooks" {
					company[k] = x
				}
			}
			for _, e := range entries {
				entry, _ := e.(map[string]any)
				if cmd, ok := entry["command"].(string); ok && ours(event, cmd) {
					continue
				}
				out[event+" "+canonical(company)+" "+canonical(e)]++
			}
		}
	}
	return out
}

// canonical is v as JSON with its keys sorted.
func canonical(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
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

func (o *object) remove(key string) {
	out := (*o)[:0]
	for _, m := range *o {
		if m.key != key {
			out = append(out, m)
		}
	}
	*o = out
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
