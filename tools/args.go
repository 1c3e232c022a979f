package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ArgError is an argument the caller must fix; its message names the
// argument and the fix.
type ArgError struct{ msg string }

func (e *ArgError) Error() string { return e.msg }

func argErrorf(format string, args ...any) error {
	return &ArgError{msg: fmt.Sprintf(format, args...)}
}

// checkArgs validates raw arguments against the tool's schema and returns
// them as a JSON object with nulls dropped, ready to decode into the
// tool's argument struct. maxBytes bounds every string.
func checkArgs(t Tool, raw json.RawMessage, maxBytes int) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if !utf8.Valid(raw) {
		return nil, argErrorf("the arguments of %s are not valid UTF-8 — send text as UTF-8", t.Name)
	}
	var args map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil || args == nil {
		return nil, argErrorf("the arguments of %s must be a JSON object like {\"name\": value} — got %s", t.Name, preview(raw))
	}
	for name, value := range args {
		if string(value) == "null" {
			delete(args, name)
			continue
		}
		prop, ok := t.InputSchema.Properties[name]
		if !ok {
			return nil, argErrorf("%s has no argument `%s` — use only: %s", t.Name, name, strings.Join(t.argNames(), ", "))
		}
		value, err := checkValue(name, prop, value, maxBytes)
		if err != nil {
			return nil, err
		}
		args[name] = value
	}
	for _, name := range t.InputSchema.Required {
		if _, ok := args[name]; !ok {
			return nil, argErrorf("%s needs `%s` — %s", t.Name, name, hint(t.InputSchema.Properties[name]))
		}
	}
	return json.Marshal(args)
}

func hint(s *Schema) string {
	if s == nil || s.Description == "" {
		return "pass it"
	}
	return "pass it: " + strings.TrimSuffix(s.Description, ".")
}

// checkValue checks one argument against its schema and returns it in the
// form the tool decodes: a whole number written 50.0 or 1e2 becomes 50 or
// 100 (JSON Schema counts them as integers; Go's decoder would not).
func checkValue(name string, s *Schema, value json.RawMessage, maxBytes int) (json.RawMessage, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, argErrorf("`%s` is not valid JSON — %v", name, err)
	}
	if s.Type == "integer" {
		return checkInteger(name, s, v)
	}
	return value, checkOther(name, s, v, maxBytes)
}

// maxWhole is the largest whole number a float64 holds exactly; no count,
// seq or limit comes near it.
const maxWhole = 1 << 53

func checkInteger(name string, s *Schema, v any) (json.RawMessage, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, argErrorf("`%s` must be a whole number, not %s%s", name, kindOf(v), rangeHint(s))
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) {
		return nil, argErrorf("`%s` must be a whole number, not %s%s", name, n, rangeHint(s))
	}
	if (s.Minimum != nil && f < *s.Minimum) || (s.Maximum != nil && f > *s.Maximum) || math.Abs(f) > maxWhole {
		return nil, argErrorf("`%s` is %s, out of range%s", name, n, rangeHint(s))
	}
	return json.RawMessage(strconv.FormatInt(int64(f), 10)), nil
}

func checkOther(name string, s *Schema, v any, maxBytes int) error {
	switch s.Type {
	case "string":
		str, ok := v.(string)
		if !ok {
			return argErrorf("`%s` must be a string, not %s — pass it as text in quotes", name, kindOf(v))
		}
		if len(str) > maxBytes {
			return argErrorf("`%s` is %d bytes, over the %d-byte limit (chat.max_body_bytes) — shorten it or split it into several messages", name, len(str), maxBytes)
		}
		if strings.ContainsRune(str, 0) {
			return argErrorf("`%s` contains a NUL character (\\u0000), %s", name, nulFix)
		}
		if n := utf8.RuneCountInString(str); s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			return argErrorf("`%s` is %d characters long — pass %s", name, n, lengthHint(s))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return argErrorf("`%s` must be true or false, not %s — pass a JSON boolean, without quotes", name, kindOf(v))
		}
	case "array":
		list, ok := v.([]any)
		if !ok {
			return argErrorf("`%s` must be a list, not %s — e.g. [\"mesh-gw\", \"node-dash\"]", name, kindOf(v))
		}
		for i, item := range list {
			str, ok := item.(string)
			if !ok || strings.TrimSpace(str) == "" {
				return argErrorf("`%s` item %d must be a non-empty string, not %s — pass party names like [\"mesh-gw\"]", name, i+1, kindOf(item))
			}
			if len(str) > maxBytes {
				return argErrorf("`%s` item %d is over the %d-byte limit (chat.max_body_bytes) — shorten it", name, i+1, maxBytes)
			}
			if strings.ContainsRune(str, 0) {
				return argErrorf("`%s` item %d contains a NUL character (\\u0000), %s", name, i+1, nulFix)
			}
		}
	}
	return nil
}

// nulFix ends the refusal of a text holding U+0000. SQLite stores one,
// PostgreSQL refuses it; the rule is the same on both engines, so that a
// call does not work on one and fail on the other.
const nulFix = "which the chat cannot store on every engine — remove it and call again"

// lengthHint says how long a string must be.
func lengthHint(s *Schema) string {
	switch {
	case s.MinLength != nil && s.MaxLength != nil:
		return fmt.Sprintf("%d to %d characters", *s.MinLength, *s.MaxLength)
	case s.MaxLength != nil:
		return fmt.Sprintf("at most %d characters", *s.MaxLength)
	}
	return fmt.Sprintf("at least %d characters", *s.MinLength)
}

func rangeHint(s *Schema) string {
	switch {
	case s.Minimum != nil && s.Maximum != nil:
		return fmt.Sprintf(" — pass a whole number from %g to %g", *s.Minimum, *s.Maximum)
	case s.Minimum != nil:
		return fmt.Sprintf(" — pass a whole number of at least %g", *s.Minimum)
	}
	return " — pass a whole number"
}

func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + x.String()
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func preview(raw []byte) string {
	const n = 40
	if len(raw) > n {
		return string(raw[:n]) + "…"
	}
	return string(raw)
}

// text checks a required free-text argument after trimming.
func text(name, value string) error {
	if strings.TrimSpace(value) == "" {
		return argErrorf("`%s` is empty — pass some text", name)
	}
	return nil
}
