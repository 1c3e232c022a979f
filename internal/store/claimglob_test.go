package store

import (
	"strings"
	"testing"
)

func TestGlobMatches(t *testing.T) {
	for _, c := range []struct {
		pattern string
		holds   []string
		not     []string
	}{
		{"go.mod", []string{"go.mod"}, []string{"go.sum", "a/go.mod", "go.mod2"}},
		{"proto", []string{"proto", "proto/a.go", "proto/x/y.go"}, []string{"protos", "x/proto"}},
		{"gen/*.go", []string{"gen/a.go", "gen/.go"}, []string{"gen/x/a.go", "gen/a.gox", "a.go"}},
		{"gen/?.go", []string{"gen/a.go"}, []string{"gen/ab.go", "gen//.go"}},
		{"**/*.proto", []string{"a.proto", "x/a.proto", "x/y/a.proto"}, []string{"a.protox", "x/a.go"}},
		{"a/**/b", []string{"a/b", "a/x/b", "a/x/y/b", "a/b/c"}, []string{"a/xb", "b", "ab"}},
		{"a/**", []string{"a/x", "a/x/y"}, []string{"ab", "b/a"}},
		{"**", []string{"a", "a/b/c"}, nil},
		{"app/[slug]/page.tsx", []string{"app/[slug]/page.tsx"}, []string{"app/s/page.tsx"}},
		{"release/*", []string{"release/1.4"}, []string{"main", "release"}},
	} {
		g := compileGlob(c.pattern)
		for _, p := range c.holds {
			if !g.match(p) {
				t.Errorf("%q does not hold %q", c.pattern, p)
			}
		}
		for _, p := range c.not {
			if g.match(p) {
				t.Errorf("%q holds %q", c.pattern, p)
			}
		}
	}
}

// Two patterns overlap exactly when some path is held by both: checked
// against a brute force over every path of a small alphabet.
func TestGlobOverlapIsSomeCommonPath(t *testing.T) {
	patterns := []string{"a", "b", "a/b", "a/*", "*/b", "*", "?", "a?", "**", "a/**", "**/b", "a/**/b", "*a", "b*", "a/b/a", "**/a/**", "ab", "*/*/*"}
	var paths []string
	var grow func(prefix string, depth int)
	grow = func(prefix string, depth int) {
		if depth == 0 {
			return
		}
		for _, r := range []string{"a", "b", "/"} {
			p := prefix + r
			if !strings.HasPrefix(p, "/") && !strings.HasSuffix(p, "/") && !strings.Contains(p, "//") {
				paths = append(paths, p)
			}
			grow(p, depth-1)
		}
	}
	grow("", 7)
	for _, x := range patterns {
		for _, y := range patterns {
			gx, gy := compileGlob(x), compileGlob(y)
			want := false
			for _, p := range paths {
				if gx.match(p) && gy.match(p) {
					want = true
					break
				}
			}
			if got := gx.overlaps(gy); got != want {
				t.Errorf("overlaps(%q, %q) = %v, a common path exists: %v", x, y, got, want)
			}
		}
	}
}

func TestPatternChecks(t *testing.T) {
	for raw, want := range map[string]string{" ./src/x.go ": "src/x.go", "gen/": "gen", "a/**/b": "a/**/b"} {
		if got, err := checkPattern(raw); err != nil || got != want {
			t.Errorf("checkPattern(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "  ", "a//b", "../x", "a/./b", "a**", "x\x01", strings.Repeat("a", maxPattern+1)} {
		if got, err := checkPattern(raw); err == nil {
			t.Errorf("checkPattern(%q) = %q, want a refusal", raw, got)
		}
	}
}
