package codexconfig

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Decode reads a config with a TOML parser: github.com/pelletier/go-toml/v2,
// which reads TOML 1.1 as Codex 0.171 does (newlines and a trailing comma
// in an inline table, \e) and refuses what Codex refuses (a table defined
// by dotted keys and again by a header). A byte order mark, which Codex
// reads past, is left out. The error says where the file stops being TOML.
func Decode(data []byte) (map[string]any, error) {
	var doc map[string]any
	err := toml.Unmarshal(bytes.TrimPrefix(data, byteOrderMark), &doc)
	var de *toml.DecodeError
	switch {
	case errors.As(err, &de):
		row, col := de.Position()
		return nil, fmt.Errorf("not valid TOML (line %d, column %d: %s)", row, col, strings.TrimPrefix(de.Error(), "toml: "))
	case err != nil:
		return nil, fmt.Errorf("not valid TOML (%s)", strings.TrimPrefix(err.Error(), "toml: "))
	}
	if doc == nil {
		doc = map[string]any{}
	}
	return doc, nil
}

// Scope is what an edit may change: whole keys (a value, or a table with
// all it holds) and elements of arrays of tables. Everything else in the
// file is the person's.
type Scope struct {
	Keys [][]string
	// Elem reports an element of the array of tables at path that is the
	// edit's to change, add or take out.
	Elem func(path []string, elem map[string]any) bool
}

// Check judges an edit of a config: before must be TOML, after must be too,
// and every key outside the scope must be in both, with the same value, or
// in neither. Its error says what the edit would have done wrong.
func Check(before, after []byte, s Scope) error {
	b, err := Decode(before)
	if err != nil {
		return err
	}
	a, err := Decode(after)
	if err != nil {
		return fmt.Errorf("the edit would leave a file that is %w", err)
	}
	if where := Difference(s.Prune(b), s.Prune(a)); where != "" {
		return fmt.Errorf("the edit would change %s, which is not setup's to change", where)
	}
	return nil
}

// Prune is the document without the scope: its keys taken out, its
// elements taken out of their arrays. A table or array that leaves empty
// is marked so (Difference takes it for one that is absent or empty: an
// edit may make or leave the table its own keys sit in), while one that
// was empty before is the person's and stays as it is.
func (s Scope) Prune(doc map[string]any) map[string]any {
	out, _ := s.prune(nil, doc).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

// emptied marks a table or array the scope's pruning emptied.
type emptied struct{}

// prune copies v at path without the scope.
func (s Scope) prune(path []string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			p := append(path[:len(path):len(path)], k)
			if s.covers(p) {
				continue
			}
			out[k] = s.prune(p, x)
		}
		if len(v) > 0 && allEmptied(out) {
			return emptied{}
		}
		return out
	case []any:
		out := []any{}
		for _, x := range v {
			if t, ok := x.(map[string]any); ok && s.Elem != nil && s.Elem(path, t) {
				continue
			}
			out = append(out, s.prune(path, x))
		}
		if len(out) == 0 && len(v) > 0 {
			return emptied{}
		}
		return out
	}
	return v
}

func (s Scope) covers(path []string) bool {
	for _, k := range s.Keys {
		if slices.Equal(k, path) {
			return true
		}
	}
	return false
}

// Difference is the first key, dotted, where two documents differ: a key
// one has and the other has not, or another value; "" when they are
// equal. NaN equals NaN: the same text gives the same value.
func Difference(a, b map[string]any) string {
	return difference("", a, b)
}

func difference(path string, a, b any) string {
	name := path
	if name == "" {
		name = "the file's top"
	}
	if isEmptied(a) && isEmptyOrEmptied(b) || isEmptied(b) && isEmptyOrEmptied(a) {
		return ""
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return name
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			x, inA := av[k]
			y, inB := bv[k]
			p := dotted(path, k)
			if inA != inB && !isEmptied(x) && !isEmptied(y) {
				return p
			}
			if d := difference(p, x, y); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return name
		}
		for i := range av {
			if d := difference(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i]); d != "" {
				return d
			}
		}
		return ""
	case float64:
		bv, ok := b.(float64)
		if !ok || !(av == bv || math.IsNaN(av) && math.IsNaN(bv)) || math.Signbit(av) != math.Signbit(bv) {
			return name
		}
		return ""
	}
	if !reflect.DeepEqual(a, b) {
		return name
	}
	return ""
}

func dotted(path, key string) string {
	k := bareKey(key)
	if path == "" {
		return k
	}
	return path + "." + k
}

func isEmptied(v any) bool {
	_, ok := v.(emptied)
	return ok
}

func isEmptyOrEmptied(v any) bool {
	switch v := v.(type) {
	case emptied, nil: // nil: absent
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// allEmptied reports a table whose every key the pruning took out or
// emptied.
func allEmptied(m map[string]any) bool {
	for _, v := range m {
		if !isEmptied(v) {
			return false
		}
	}
	return true
}
