package engine

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/mcpp/mcpp-chat/"

// The store's layout, which the compiler alone cannot keep: the protocol
// (package store) above, this port below, and the engines beside each
// other importing only the port (and the query grammar they share). The
// protocol names an engine in one file, open.go, that opens them. The test
// lives in the port, which imports none of them, so that it runs — and
// says which import broke the rule — even when that import makes a cycle
// the build refuses.
func TestStoreLayout(t *testing.T) {
	// The packages under internal/store each may import, besides the
	// standard library, third-party modules and the project's packages
	// outside internal/store.
	allowed := map[string][]string{
		"internal/store/engine":   nil,
		"internal/store/fulltext": {"internal/store/engine"},
		"internal/store/tokens":   {"internal/store/engine"},
		"internal/store/sqlite":   {"internal/store/engine", "internal/store/fulltext"},
		"internal/store/postgres": {"internal/store/engine", "internal/store/fulltext"},
		"internal/store":          {"internal/store/engine", "internal/store/fulltext"},
	}
	// What only the protocol's opener may import.
	engines := []string{"internal/store/sqlite", "internal/store/postgres", "internal/store/tokens"}
	root := filepath.Join("..", "..", "..")
	for pkg, may := range allowed {
		for file, imports := range importsOf(t, filepath.Join(root, pkg)) {
			for _, imp := range imports {
				inside, ok := strings.CutPrefix(imp, module)
				if !ok || !strings.HasPrefix(inside, "internal/store") {
					continue
				}
				switch {
				case slices.Contains(may, inside):
				case pkg == "internal/store" && slices.Contains(engines, inside) && filepath.Base(file) == "open.go":
				case pkg == "internal/store" && slices.Contains(engines, inside):
					t.Errorf("%s imports %s: the protocol names its engines only in open.go", file, inside)
				default:
					t.Errorf("%s imports %s: %s may import only %v of internal/store", file, inside, pkg, may)
				}
			}
		}
	}
}

// importsOf is what each non-test Go file of the folder dir imports.
func importsOf(t *testing.T, dir string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[path] = append(out[path], p)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return out
}
