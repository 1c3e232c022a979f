package settings

import (
	"bytes"
	"encoding/json"
	"strings"
)

// keepFormat writes the document want (JSON) over the person's document
// old, keeping old's bytes — indentation, spacing, line breaks, key order,
// escapes — wherever the two agree: an object or array setup changed keeps
// its unchanged members and elements as they were written; only what is
// new or changed is written afresh, indented as the lines around it. old
// must be valid JSON.
func keepFormat(old []byte, want json.RawMessage) []byte {
	k := keeper{doc: old, unit: indentUnit(old), eol: "\n"}
	if bytes.Contains(old, []byte("\r\n")) {
		k.eol = "\r\n"
	}
	var out bytes.Buffer
	start := skipSpace(old, 0)
	end := valueEnd(old, start)
	out.Write(old[:start])
	k.value(&out, start, end, want)
	out.Write(old[end:])
	return out.Bytes()
}

type keeper struct {
	doc  []byte
	unit string // one level of indentation, as the document writes it
	eol  string // its line end
}

// value writes want in place of the value at doc[start:end].
func (k keeper) value(out *bytes.Buffer, start, end int, want json.RawMessage) {
	old := k.doc[start:end]
	switch {
	case sameJSON(old, want):
		out.Write(old)
	case old[0] == '{' && firstByte(want) == '{':
		k.object(out, start, end, want)
	case old[0] == '[' && firstByte(want) == '[':
		k.array(out, start, end, want)
	default:
		out.WriteString(k.fresh(want, lineIndent(k.doc, start)))
	}
}

// fresh is v indented as Claude Code writes its files, its lines after the
// first at indent.
func (k keeper) fresh(v json.RawMessage, indent string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, v, indent, k.unit); err != nil {
		return string(v)
	}
	return strings.ReplaceAll(b.String(), "\n", k.eol)
}

// span is a part of the document: a member (its key to its value's end)
// or an element, and its value.
type span struct {
	start, end int    // the whole member or element
	key        string // a member's key
	valStart   int
}

// item is one member or element of the new value: the text to write, and
// the old one it stands in place of (-1 for a new one).
type item struct {
	old  int
	text string
}

func (k keeper) object(out *bytes.Buffer, start, end int, want json.RawMessage) {
	old := k.members(start)
	have, _ := parseObject(want)
	indent := k.innerIndent(start, old)
	var items []item
	for _, m := range have {
		i := slicesIndex(old, m.key)
		if i < 0 {
			items = append(items, item{-1, string(encodeValue(m.key)) + ": " + k.fresh(m.value, indent)})
			continue
		}
		var b bytes.Buffer
		b.Write(k.doc[old[i].start:old[i].valStart])
		k.value(&b, old[i].valStart, old[i].end, m.value)
		items = append(items, item{i, b.String()})
	}
	k.rebuild(out, start, end, old, items)
}

func slicesIndex(spans []span, key string) int {
	for i, s := range spans {
		if s.key == key {
			return i
		}
	}
	return -1
}

func (k keeper) array(out *bytes.Buffer, start, end int, want json.RawMessage) {
	old := k.elements(start)
	var have []json.RawMessage
	json.Unmarshal(want, &have)
	indent := k.innerIndent(start, old)
	// An old element that comes back unchanged keeps its bytes; one that
	// no later element of want is, where a changed one stands, is that
	// one changed in place; the rest go, and new ones are written afresh.
	var items []item
	i := 0
	for j, v := range have {
		if n := k.findFrom(old, i, v); n >= 0 {
			items, i = append(items, item{n, string(k.doc[old[n].start:old[n].end])}), n+1
			continue
		}
		if i < len(old) && !k.comesLater(old[i], have[j+1:]) {
			var b bytes.Buffer
			k.value(&b, old[i].start, old[i].end, v)
			items, i = append(items, item{i, b.String()}), i+1
			continue
		}
		items = append(items, item{-1, k.fresh(v, indent)})
	}
	k.rebuild(out, start, end, old, items)
}

// innerIndent is the indentation of the members or elements of the
// object or array at start: its first one's line, else one level more
// than its own.
func (k keeper) innerIndent(start int, old []span) string {
	if len(old) > 0 && bytes.LastIndexByte(k.doc[start:old[0].start], '\n') >= 0 {
		return lineIndent(k.doc, old[0].start)
	}
	return lineIndent(k.doc, start) + k.unit
}

// findFrom is the first old element from i on that is v, -1 for none.
func (k keeper) findFrom(old []span, i int, v json.RawMessage) int {
	for n := i; n < len(old); n++ {
		if sameJSON(k.doc[old[n].start:old[n].end], v) {
			return n
		}
	}
	return -1
}

func (k keeper) comesLater(s span, rest []json.RawMessage) bool {
	for _, v := range rest {
		if sameJSON(k.doc[s.start:s.end], v) {
			return true
		}
	}
	return false
}

// rebuild writes the object or array at doc[start:end] as items: what
// stood before its first member or element and after its last stays, two
// old ones still next to each other keep the separator between them, and
// anything new is set off the way its first separator was written.
func (k keeper) rebuild(out *bytes.Buffer, start, end int, old []span, items []item) {
	open, close := k.doc[start], k.doc[end-1]
	kept := false
	for _, it := range items {
		kept = kept || it.old >= 0
	}
	if !kept {
		// Nothing of the old one is left to lay the new one out by.
		parent := lineIndent(k.doc, start)
		out.WriteByte(open)
		for i, it := range items {
			if i > 0 {
				out.WriteByte(',')
			}
			out.WriteString(k.eol + parent + k.unit + it.text)
		}
		if len(items) > 0 {
			out.WriteString(k.eol + parent)
		}
		out.WriteByte(close)
		return
	}
	sep := "," + k.eol + k.innerIndent(start, old)
	if len(old) > 1 {
		sep = string(k.doc[old[0].end:old[1].start])
	}
	out.Write(k.doc[start:old[0].start])
	for i, it := range items {
		if i > 0 {
			prev := items[i-1].old
			if prev >= 0 && it.old == prev+1 {
				out.Write(k.doc[old[prev].end:old[it.old].start])
			} else {
				out.WriteString(sep)
			}
		}
		out.WriteString(it.text)
	}
	out.Write(k.doc[old[len(old)-1].end:end])
}

// members are the members of the object starting at start.
func (k keeper) members(start int) []span {
	var out []span
	i := skipSpace(k.doc, start+1)
	for i < len(k.doc) && k.doc[i] != '}' {
		keyEnd := valueEnd(k.doc, i)
		var key string
		json.Unmarshal(k.doc[i:keyEnd], &key)
		v := skipSpace(k.doc, skipSpace(k.doc, keyEnd)+1) // past the colon
		e := valueEnd(k.doc, v)
		out = append(out, span{start: i, end: e, key: key, valStart: v})
		i = skipSpace(k.doc, e)
		if i < len(k.doc) && k.doc[i] == ',' {
			i = skipSpace(k.doc, i+1)
		}
	}
	return out
}

// elements are the elements of the array starting at start.
func (k keeper) elements(start int) []span {
	var out []span
	i := skipSpace(k.doc, start+1)
	for i < len(k.doc) && k.doc[i] != ']' {
		e := valueEnd(k.doc, i)
		out = append(out, span{start: i, end: e, valStart: i})
		i = skipSpace(k.doc, e)
		if i < len(k.doc) && k.doc[i] == ',' {
			i = skipSpace(k.doc, i+1)
		}
	}
	return out
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is where the JSON value starting at i ends.
func valueEnd(doc []byte, i int) int {
	if i >= len(doc) {
		return i
	}
	switch doc[i] {
	case '"':
		for j := i + 1; j < len(doc); j++ {
			switch doc[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(doc)
	case '{', '[':
		depth := 0
		for j := i; j < len(doc); j++ {
			switch doc[j] {
			case '"':
				j = valueEnd(doc, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(doc)
	}
	j := i
	for j < len(doc) && !strings.ContainsRune(",}] \t\r\n", rune(doc[j])) {
		j++
	}
	return j
}

// lineIndent is the whitespace the line holding offset i starts with.
func lineIndent(doc []byte, i int) string {
	from := bytes.LastIndexByte(doc[:i], '\n') + 1
	to := from
	for to < len(doc) && (doc[to] == ' ' || doc[to] == '\t') {
		to++
	}
	return string(doc[from:to])
}

// indentUnit is one level of the document's indentation: the first
// indented line's, else two spaces as Claude Code writes.
func indentUnit(doc []byte) string {
	for _, line := range strings.Split(string(doc), "\n")[1:] {
		if ws := line[:len(line)-len(strings.TrimLeft(line, " \t"))]; ws != "" && strings.TrimSpace(line) != "" {
			return ws
		}
	}
	return "  "
}

// sameJSON reports two JSON texts of one value, however spaced.
func sameJSON(a, b []byte) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

func firstByte(v json.RawMessage) byte {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return 0
	}
	return v[0]
}
