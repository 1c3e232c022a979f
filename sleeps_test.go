package mcppchat

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// No test sleeps for a fixed time to let something happen: on a busy
// machine that time is too short (the test fails) or the thing it waits
// for is not the one it checks (the test proves nothing). A time.Sleep in
// a test, or in a helper under tests/, is one of:
//
//   - fake time: inside a testing/synctest bubble;
//   - the pause of a loop that ends on a condition: a bounded poll (the
//     for statement's post statement, or a loop that breaks, returns or
//     fails), or the pace of a load;
//   - marked: a comment starting "sleep:", on its line or ending on the
//     line above, says why no signal or condition can stand in.
//
// tests/bench is left out: a benchmark program, whose pauses let what it
// measures settle. go test -v -run TestTestsSleepOnlyToPoll . lists the
// count of each kind and every marked sleep.
func TestTestsSleepOnlyToPoll(t *testing.T) {
	counts := map[string]int{}
	var marked, fixed []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || path == filepath.Join("tests", "bench")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || !strings.HasSuffix(path, "_test.go") && !strings.HasPrefix(path, "tests"+string(filepath.Separator)) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, s := range sleepsIn(fset, f) {
			counts[s.kind]++
			where := fset.Position(s.call.Pos()).String()
			switch s.kind {
			case "marked":
				marked = append(marked, where+": "+s.why)
			case "fixed":
				fixed = append(fixed, where)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("time.Sleep in tests: %d in fake time, %d pausing a loop that ends on a condition, %d marked, %d fixed",
		counts["fake time"], counts["loop"], counts["marked"], counts["fixed"])
	for _, m := range marked {
		t.Logf("marked: %s", m)
	}
	for _, f := range fixed {
		t.Errorf("%s: a fixed time.Sleep — wait for a signal or poll the condition (bounded), use fake time (testing/synctest), or say why nothing can stand in with a \"// sleep: why\" comment", f)
	}
}

// aSleep is a call of time.Sleep and its kind: "fake time", "loop",
// "marked" (why says why) or "fixed".
type aSleep struct {
	call      *ast.CallExpr
	kind, why string
}

// sleepsIn finds the calls of time.Sleep in f and tells their kind.
func sleepsIn(fset *token.FileSet, f *ast.File) []aSleep {
	why := map[int]string{} // what a "sleep:" comment says, by its last line
	for _, g := range f.Comments {
		if text, ok := strings.CutPrefix(strings.TrimSpace(g.Text()), "sleep:"); ok {
			why[fset.Position(g.End()).Line] = strings.Join(strings.Fields(text), " ")
		}
	}
	var found []aSleep
	var path []ast.Node // from f down to the node being looked at
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			path = path[:len(path)-1]
			return false
		}
		path = append(path, n)
		call, ok := n.(*ast.CallExpr)
		if !ok || !isCall(call, "time", "Sleep") {
			return true
		}
		s := aSleep{call: call, kind: "fixed"}
		line := fset.Position(call.Pos()).Line
		switch {
		case slices.ContainsFunc(path, func(n ast.Node) bool { c, ok := n.(*ast.CallExpr); return ok && isCall(c, "synctest", "Test") }):
			s.kind = "fake time"
		case pausesALoop(path):
			s.kind = "loop"
		case why[line] != "" || why[line-1] != "":
			s.kind, s.why = "marked", why[line]+why[line-1]
		}
		found = append(found, s)
		return true
	})
	return found
}

// isCall reports whether call is pkg.name(…).
func isCall(call *ast.CallExpr, pkg, name string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// pausesALoop reports whether the last node of path is within a loop, in
// the same function, that ends on a condition: it is the loop's post
// statement, or the loop has a condition or breaks, returns or fails.
func pausesALoop(path []ast.Node) bool {
	for i := len(path) - 2; i >= 0; i-- {
		switch loop := path[i].(type) {
		case *ast.FuncLit, *ast.FuncDecl:
			return false
		case *ast.ForStmt:
			if loop.Post != nil && path[i+1] == loop.Post || loop.Cond != nil {
				return true
			}
			return endsOnItsOwn(loop.Body)
		case *ast.RangeStmt:
			return endsOnItsOwn(loop.Body)
		}
	}
	return false
}

// endsOnItsOwn reports whether body has a way out of its loop: a return,
// a break or goto, or a test's Fatal or FailNow (outside the functions it
// defines).
func endsOnItsOwn(body *ast.BlockStmt) bool {
	out := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			out = true
		case *ast.BranchStmt:
			out = out || n.Tok == token.BREAK || n.Tok == token.GOTO
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (strings.HasPrefix(sel.Sel.Name, "Fatal") || sel.Sel.Name == "FailNow") {
				out = true
			}
		}
		return !out
	})
	return out
}
