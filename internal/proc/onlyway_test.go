package proc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
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

// spawners are the calls that start a process, by import path; a package
// imported under another name is matched by that name.
var spawners = map[string][]string{
	"os/exec":                  {"Command", "CommandContext"},
	"os":                       {"StartProcess"},
	"syscall":                  {"ForkExec", "StartProcess"},
	"golang.org/x/sys/unix":    {"ForkExec", "StartProcess"},
	"golang.org/x/sys/windows": {"CreateProcess", "CreateProcessAsUser"},
	"github.com/nightwatch-dev/nightwatch/internal/command": {"CommandContext"},
}

// TestOneWayToSpawn fails when code outside internal/proc makes a child
// process itself: every child must get a group, a bound and the kill of
// everything it started, which only proc gives. It looks at every folder
// of the module (a new package is covered as soon as it exists), follows
// import names, and also refuses an exec.Cmd built by hand.
func TestOneWayToSpawn(t *testing.T) {
	root := testkit.ModuleRoot(t)
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
		found = append(found, spawnsIn(t, path, rel)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: start processes through internal/proc (proc.Command, proc.Run)", f)
	}
}

// spawnsIn lists the process starts in one file.
func spawnsIn(t *testing.T, path, rel string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := map[string]bool{} // local name + "." + function
	execName := ""
	for _, imp := range f.Imports {
		ipath, _ := strconv.Unquote(imp.Path.Value)
		name := ipath[strings.LastIndex(ipath, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		for _, fn := range spawners[ipath] {
			forbidden[name+"."+fn] = true
		}
		if ipath == "os/exec" {
			execName = name
		}
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && forbidden[id.Name+"."+n.Sel.Name] {
				found = append(found, rel+": "+id.Name+"."+n.Sel.Name)
			}
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok && execName != "" && sel.Sel.Name == "Cmd" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == execName {
					found = append(found, rel+": an exec.Cmd built by hand")
				}
			}
		}
		return true
	})
	return found
}

// The check sees through an import name and a hand-built exec.Cmd.
func TestOneWayToSpawnSeesThroughNames(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, src string
		want      int
	}{
		{"plain", "package x\nimport \"os/exec\"\nvar _ = exec.Command(\"a\")\n", 1},
		{"renamed", "package x\nimport run \"os/exec\"\nvar _ = run.CommandContext(nil, \"a\")\n", 1},
		{"by hand", "package x\nimport \"os/exec\"\nvar _ = &exec.Cmd{Path: \"/bin/a\"}\n", 1},
		{"os.StartProcess", "package x\nimport \"os\"\nvar _, _ = os.StartProcess(\"a\", nil, nil)\n", 1},
		{"types and errors only", "package x\nimport \"os/exec\"\nvar _ *exec.Cmd\nvar _ *exec.ExitError\nvar _, _ = exec.LookPath(\"a\")\n", 0},
		{"another package's Command", "package x\nimport exec \"example.com/other\"\nvar _ = exec.Command(\"a\")\n", 0},
	} {
		path := filepath.Join(dir, tc.name+".go")
		if err := os.WriteFile(path, []byte(tc.src), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := spawnsIn(t, path, tc.name); len(got) != tc.want {
			t.Errorf("%s: found %q, want %d", tc.name, got, tc.want)
		}
	}
}
