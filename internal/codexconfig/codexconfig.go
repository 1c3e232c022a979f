// Package codexconfig reads and edits a Codex config.toml table by table,
// keeping every line it does not replace as the person, or Codex itself,
// wrote it (Codex adds its own tables there: the hooks' trust) — byte for
// byte: comments, spacing, a byte order mark, CRLF line ends. The line
// editor knows where tables begin, skipping multi-line strings and arrays,
// and reads single-line keys and strings, which is how Codex's
// documentation and mcpp-chat's setup write the tables it looks for. A real
// TOML parser is the judge of every edit (Decode, Check): a file it cannot
// read is refused, and an edit must leave a file it reads, with every key
// outside what the edit meant to change as it was.
package codexconfig

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

// Block is one table of the file: its header and the lines up to the next
// header. The first block, before any header, is the root table (Name
// "", no header line).
type Block struct {
	// Path is the table's dotted name, each part unquoted
	// ([mcp_servers."chat"] is mcp_servers, chat); nil for the root.
	Path []string
	// Array is a [[header]]: one element of an array of tables.
	Array bool
	// Lines are the block's lines, its header first, without their "\n"
	// (a CRLF line keeps its "\r").
	Lines []string
	// cr: lines added to the block end in "\r\n", as most of the file's do.
	cr bool
}

// Name is the table's dotted name.
func (b Block) Name() string { return strings.Join(b.Path, ".") }

// File is a config file as blocks, with what lies around them.
type File struct {
	Blocks []Block
	bom    bool   // it starts with a UTF-8 byte order mark
	cr     bool   // most of its lines end in "\r\n"
	last   string // its last line when that has no line end, else ""
	open   bool
}

var byteOrderMark = []byte("\ufeff")

// ParseFile splits a config file into blocks. Unchanged, Bytes gives back
// the same bytes.
func ParseFile(data []byte) *File {
	f := &File{bom: bytes.HasPrefix(data, byteOrderMark)}
	text := string(bytes.TrimPrefix(data, byteOrderMark))
	f.open = text != "" && !strings.HasSuffix(text, "\n")
	var lines []string
	if text != "" {
		lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	}
	crlf := 0
	for _, l := range lines {
		if strings.HasSuffix(l, "\r") {
			crlf++
		}
	}
	f.cr = crlf > len(lines)/2
	if f.open && f.cr {
		// Its line end, should lines follow it, is the file's; Bytes takes
		// it off again while it is last.
		lines[len(lines)-1] += "\r"
	}
	if f.open {
		f.last = lines[len(lines)-1]
	}
	f.Blocks = []Block{{cr: f.cr}}
	var sc scanner
	for _, line := range lines {
		if sc.continuing() {
			sc.scan(line)
			f.Blocks[len(f.Blocks)-1].Lines = append(f.Blocks[len(f.Blocks)-1].Lines, line)
			continue
		}
		if path, array, ok := header(line); ok {
			f.Blocks = append(f.Blocks, Block{Path: path, Array: array, Lines: []string{line}, cr: f.cr})
			continue
		}
		sc.scan(line)
		f.Blocks[len(f.Blocks)-1].Lines = append(f.Blocks[len(f.Blocks)-1].Lines, line)
	}
	return f
}

// Parse splits a config file into blocks (ParseFile, for reading).
func Parse(data []byte) []Block { return ParseFile(data).Blocks }

// Bytes joins the blocks back into a file: its byte order mark, every line
// with its line end — the last one too, unless the file's last line had
// none and is still last.
func (f *File) Bytes() []byte {
	var b strings.Builder
	if f.bom {
		b.Write(byteOrderMark)
	}
	var last string
	for _, bl := range f.Blocks {
		for _, l := range bl.Lines {
			b.WriteString(l)
			b.WriteByte('\n')
			last = l
		}
	}
	out := b.String()
	if f.open && last == f.last {
		out = strings.TrimSuffix(out, "\n")
		if f.cr {
			out = strings.TrimSuffix(out, "\r")
		}
	}
	return []byte(out)
}

// Append adds a table at the end, after a blank line: its header (with
// comment, if any, after it) and a key = value line per key, values raw.
func (f *File) Append(path []string, array bool, comment string, keys [][2]string) {
	last := &f.Blocks[len(f.Blocks)-1]
	if n := len(last.Lines); n > 0 && strings.TrimSpace(last.Lines[n-1]) != "" {
		last.Lines = append(last.Lines, last.line(""))
	}
	b := Block{Path: path, Array: array, cr: f.cr}
	head := Header(path, array)
	if comment != "" {
		head += " " + comment
	}
	b.Lines = []string{b.line(head)}
	for _, kv := range keys {
		b.Lines = append(b.Lines, b.line(bareKey(kv[0])+" = "+kv[1]))
	}
	f.Blocks = append(f.Blocks, b)
}

// line is s with the line end lines added to the block get.
func (b Block) line(s string) string {
	if b.cr {
		return s + "\r"
	}
	return s
}

// Format joins blocks back into a file, ending in a newline.
func Format(blocks []Block) []byte {
	var b strings.Builder
	for _, bl := range blocks {
		for _, l := range bl.Lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// scanner follows multi-line strings and arrays across lines, so that a
// line inside one is never taken for a header.
type scanner struct {
	quote string // the open multi-line string's delimiter
	depth int    // open brackets and braces of a value
}

func (s *scanner) continuing() bool { return s.quote != "" || s.depth > 0 }

func (s *scanner) scan(line string) {
	for i := 0; i < len(line); i++ {
		if s.quote != "" {
			if strings.HasPrefix(line[i:], s.quote) {
				i += len(s.quote) - 1
				s.quote = ""
			} else if line[i] == '\\' && s.quote == `"""` {
				i++
			}
			continue
		}
		switch c := line[i]; {
		case c == '#':
			return
		case strings.HasPrefix(line[i:], `"""`), strings.HasPrefix(line[i:], `'''`):
			s.quote = line[i : i+3]
			i += 2
		case c == '"' || c == '\'':
			end := closing(line, i)
			if end < 0 {
				return // not valid TOML: leave it to Codex to say so
			}
			i = end
		case c == '[' || c == '{':
			s.depth++
		case c == ']' || c == '}':
			if s.depth > 0 {
				s.depth--
			}
		}
	}
}

// closing is the index of the quote that closes the one-line string
// opened at i, or -1.
func closing(line string, i int) int {
	q := line[i]
	for j := i + 1; j < len(line); j++ {
		switch {
		case line[j] == '\\' && q == '"':
			j++
		case line[j] == q:
			return j
		}
	}
	return -1
}

var headerLine = regexp.MustCompile(`^\s*(\[\[?)\s*([^\[\]#]+?)\s*(\]\]?)\s*(#.*)?$`)

// header reports a table header line and its dotted name.
func header(line string) (path []string, array, ok bool) {
	m := headerLine.FindStringSubmatch(line)
	if m == nil || len(m[1]) != len(m[3]) {
		return nil, false, false
	}
	path, ok = splitKey(m[2])
	return path, len(m[1]) == 2, ok
}

// splitKey splits a dotted key, unquoting its parts.
func splitKey(key string) ([]string, bool) {
	var parts []string
	for rest := strings.TrimSpace(key); rest != ""; {
		var part string
		switch rest[0] {
		case '"', '\'':
			end := closing(rest, 0)
			if end < 0 {
				return nil, false
			}
			s, ok := String(rest[:end+1])
			if !ok {
				return nil, false
			}
			part, rest = s, rest[end+1:]
		default:
			i := strings.IndexAny(rest, ". \t")
			if i < 0 {
				i = len(rest)
			}
			part, rest = rest[:i], rest[i:]
			if part == "" {
				return nil, false
			}
		}
		parts = append(parts, part)
		rest = strings.TrimSpace(rest)
		if rest == "" {
			break
		}
		if rest[0] != '.' {
			return nil, false
		}
		rest = strings.TrimSpace(rest[1:])
	}
	return parts, len(parts) > 0
}

var keyLine = regexp.MustCompile(`^\s*([A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*=\s*(.*?)\s*$`)

// Value is the raw value of key in the block, when it is written on one
// line (a trailing comment left out); ok is false when the key is not
// there.
func (b Block) Value(key string) (raw string, ok bool) {
	var sc scanner
	for i, line := range b.Lines {
		if i == 0 && b.Path != nil {
			continue
		}
		if sc.continuing() {
			sc.scan(line)
			continue
		}
		sc.scan(line)
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[1]
		if s, ok := String(name); ok {
			name = s
		}
		if name == key {
			return stripComment(m[2]), true
		}
	}
	return "", false
}

// stripComment drops a trailing comment from a one-line value.
func stripComment(v string) string {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"', '\'':
			end := closing(v, i)
			if end < 0 {
				return v
			}
			i = end
		case '#':
			return strings.TrimSpace(v[:i])
		}
	}
	return v
}

// String is the value of a one-line TOML string (basic or literal).
func String(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if len(raw) >= 2 && raw[0] == '\'' && raw[len(raw)-1] == '\'' {
		return raw[1 : len(raw)-1], true
	}
	if len(raw) >= 2 && raw[0] == '"' {
		s, err := strconv.Unquote(raw)
		return s, err == nil
	}
	return "", false
}

// Strings are the strings of a one-line array of strings.
func Strings(raw string) []string {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "[") || !strings.HasSuffix(raw, "]") {
		return nil
	}
	var out []string
	for _, v := range splitOutside(raw[1:len(raw)-1], ',') {
		if s, ok := String(v); ok {
			out = append(out, s)
		}
	}
	return out
}

// Inline is the keys of a one-line inline table ({ a = "b", c = 1 }),
// their values raw.
func Inline(raw string) map[string]string {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "{") || !strings.HasSuffix(raw, "}") {
		return nil
	}
	out := map[string]string{}
	for _, kv := range splitOutside(raw[1:len(raw)-1], ',') {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if s, ok := String(k); ok {
			k = s
		}
		out[k] = strings.TrimSpace(v)
	}
	return out
}

// Tables are the inline tables of a one-line array of them
// ([{ type = "command", command = "x" }]).
func Tables(raw string) []map[string]string {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "[") || !strings.HasSuffix(raw, "]") {
		return nil
	}
	var out []map[string]string
	for _, v := range splitOutside(raw[1:len(raw)-1], ',') {
		if t := Inline(v); t != nil {
			out = append(out, t)
		}
	}
	return out
}

// splitOutside splits s at sep where sep is outside quotes, brackets and
// braces; empty pieces are left out.
func splitOutside(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\'':
			if end := closing(s, i); end >= 0 {
				i = end
			}
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	out = append(out, s[start:])
	kept := out[:0]
	for _, p := range out {
		if strings.TrimSpace(p) != "" {
			kept = append(kept, strings.TrimSpace(p))
		}
	}
	return kept
}

// Quote is s as a TOML basic string.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\u` + strconv.FormatInt(int64(r)+0x10000, 16)[1:])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Pairs are the keys of a one-line inline table in the order written,
// their values raw.
func Pairs(raw string) [][2]string {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "{") || !strings.HasSuffix(raw, "}") {
		return nil
	}
	var out [][2]string
	for _, kv := range splitOutside(raw[1:len(raw)-1], ',') {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if s, ok := String(k); ok {
			k = s
		}
		out = append(out, [2]string{k, strings.TrimSpace(v)})
	}
	return out
}

// keyAt is the index of key's line in the block and whether the value
// runs on past it (a multi-line value, which Set and Delete leave alone);
// -1 when the key is not there.
func (b Block) keyAt(key string) (int, bool) {
	var sc scanner
	for i, line := range b.Lines {
		if i == 0 && b.Path != nil {
			continue
		}
		if sc.continuing() {
			sc.scan(line)
			continue
		}
		sc.scan(line)
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[1]
		if s, ok := String(name); ok {
			name = s
		}
		if name == key {
			return i, sc.continuing()
		}
	}
	return -1, false
}

// Set gives key the raw value: its line is replaced (keeping its line
// end), or a line added after the block's last key. It reports whether the
// block changed; a key whose value spans lines is not touched (ok false).
func (b *Block) Set(key, raw string) (changed, ok bool) {
	line := bareKey(key) + " = " + raw
	i, multi := b.keyAt(key)
	switch {
	case multi:
		return false, false
	case i >= 0 && strings.TrimSpace(b.Lines[i]) == line:
		return false, true
	case i >= 0:
		if strings.HasSuffix(b.Lines[i], "\r") {
			line += "\r"
		}
		b.Lines[i] = line
		return true, true
	}
	at := len(b.body())
	b.Lines = append(b.Lines[:at], append([]string{b.line(line)}, b.Lines[at:]...)...)
	return true, true
}

// Line is the whole line of key, its comment too ("" when the key is not
// there or its value spans lines).
func (b Block) Line(key string) string {
	i, multi := b.keyAt(key)
	if i < 0 || multi {
		return ""
	}
	return strings.TrimSpace(b.Lines[i])
}

// Delete removes key's line; it reports whether there was one.
func (b *Block) Delete(key string) bool {
	i, multi := b.keyAt(key)
	if i < 0 || multi {
		return false
	}
	b.Lines = append(b.Lines[:i], b.Lines[i+1:]...)
	return true
}

// body is the block up to its last line that is neither blank nor a
// comment: what follows belongs in front of the next table.
func (b Block) body() []string {
	end := 0
	var sc scanner
	for i, line := range b.Lines {
		inside := sc.continuing() // a line of a multi-line value is the value's
		sc.scan(line)
		if l := strings.TrimSpace(line); inside || l != "" && !strings.HasPrefix(l, "#") {
			end = i + 1
		}
	}
	if end == 0 && b.Path != nil {
		end = 1 // the header
	}
	return b.Lines[:end]
}

// Empty reports a block holding nothing but its header, blank lines and
// comments.
func (b Block) Empty() bool {
	n := 0
	if b.Path != nil {
		n = 1
	}
	return len(b.body()) <= n
}

// Tail is the block's blank and comment lines after its last key.
func (b Block) Tail() []string { return b.Lines[len(b.body()):] }

var bareKeyChars = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func bareKey(key string) string {
	if bareKeyChars.MatchString(key) {
		return key
	}
	return Quote(key)
}

// Header is the header line of a table at path.
func Header(path []string, array bool) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = bareKey(p)
	}
	if array {
		return "[[" + strings.Join(parts, ".") + "]]"
	}
	return "[" + strings.Join(parts, ".") + "]"
}

// InlineTable writes pairs (values raw) as a one-line inline table.
func InlineTable(pairs [][2]string) string {
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = bareKey(p[0]) + " = " + p[1]
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}
