package proc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// spawnAllowed are the folders (from the module's root) whose non-test code
// may start a process other than through internal/proc, and why.
var spawnAllowed = map[string]string{
	"internal/proc":    "the one spawn API",
	"internal/command": "resolves a configured command; proc.Command calls it",
	"internal/testkit": "test infrastructure (servers, the CLI, Postgres)",
	"chaos":            "the article's plain hook, reproduced as it spawns, for the baseline night",
}

// TestOneWayToSpawn fails when code outside internal/proc makes a child
// process itself: every child must get a group, a bound and the kill of
// everything it started, which only proc gives.
func TestOneWayToSpawn(t *testing.T) {
	root := testkit.ModuleRoot(t)
	forbidden := map[string]bool{
		"exec.Command": true, "exec.CommandContext": true, "command.CommandContext": true,
		"os.StartProcess": true, "syscall.ForkExec": true, "syscall.StartProcess": true,
	}
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if _, ok := spawnAllowed[rel]; ok || d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && forbidden[id.Name+"."+sel.Sel.Name] {
				found = append(found, rel+": "+id.Name+"."+sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: start processes through internal/proc (proc.Command, proc.Run)", f)
	}
}
