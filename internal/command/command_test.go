package command

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// files is a fake file system of the given paths (compared without case,
// as NTFS does).
func files(paths ...string) func(string) bool {
	return func(p string) bool {
		for _, f := range paths {
			if strings.EqualFold(f, p) {
				return true
			}
		}
		return false
	}
}

func TestResolveWindows(t *testing.T) {
	nodeDir := `C:\Program Files\nodejs`
	fs := files(
		nodeDir+`\npx.cmd`, nodeDir+`\node.exe`, nodeDir+`\npm.ps1`, nodeDir+`\npm.cmd`,
		`C:\tools\gh-mcp.exe`, `C:\tools\npx.bat`, `C:\tools\legacy.com`, `C:\tools\server.js`,
		`C:\Users\lily\bin\restart.bat`,
	)
	env := Env{GOOS: "windows", Path: `C:\Windows\System32;"` + nodeDir + `";relative\dir;C:\tools\`, ComSpec: `C:\Windows\system32\cmd.exe`, IsFile: fs}
	const cs = `C:\Windows\system32\cmd.exe`
	for _, tc := range []struct {
		name    string
		args    []string
		pathext string
		want    Argv
		err     string
	}{
		{name: "npx", args: []string{"-y", "@modelcontextprotocol/server-memory"},
			// npx.cmd in the nodejs folder, before C:\tools\npx.bat: PATH order.
			want: Argv{Path: cs, Args: []string{cs, "/d", "/s", "/c", `"` + nodeDir + `\npx.cmd" -y @modelcontextprotocol/server-memory`},
				CmdLine: cs + ` /d /s /c ""` + nodeDir + `\npx.cmd" -y @modelcontextprotocol/server-memory"`}},
		{name: "node", args: []string{`C:\srv\index.js`, "a b"},
			want: Argv{Path: nodeDir + `\node.exe`, Args: []string{"node", `C:\srv\index.js`, "a b"}}},
		{name: "NODE.EXE", want: Argv{Path: nodeDir + `\NODE.EXE`, Args: []string{"NODE.EXE"}}},
		{name: "gh-mcp", want: Argv{Path: `C:\tools\gh-mcp.exe`, Args: []string{"gh-mcp"}}},
		{name: "legacy", want: Argv{Path: `C:\tools\legacy.com`, Args: []string{"legacy"}}},
		// PATHEXT order: .CMD before .BAT, and the first folder still wins.
		{name: "npx", pathext: ".EXE;.CMD", want: Argv{Path: cs, Args: []string{cs, "/d", "/s", "/c", `"` + nodeDir + `\npx.cmd"`},
			CmdLine: cs + ` /d /s /c ""` + nodeDir + `\npx.cmd""`}},
		// Without .CMD in PATHEXT, npx is the .bat of a later folder.
		{name: "npx", pathext: ".EXE;.BAT", want: Argv{Path: cs, Args: []string{cs, "/d", "/s", "/c", `"C:\tools\npx.bat"`},
			CmdLine: cs + ` /d /s /c ""C:\tools\npx.bat""`}},
		// A path with a folder is tried as it is, then with each extension.
		{name: `C:\Users\lily\bin\restart`, args: []string{"--all", "my server", "a=b", "", `C:\dir with space\`},
			want: Argv{Path: cs, Args: []string{cs, "/d", "/s", "/c", `"C:\Users\lily\bin\restart.bat" --all "my server" "a=b" "" "C:\dir with space\\"`},
				CmdLine: cs + ` /d /s /c ""C:\Users\lily\bin\restart.bat" --all "my server" "a=b" "" "C:\dir with space\\""`}},
		{name: `C:\tools\gh-mcp.exe`, want: Argv{Path: `C:\tools\gh-mcp.exe`, Args: []string{`C:\tools\gh-mcp.exe`}}},
		// Refusals.
		{name: "npx", args: []string{"-y", "pkg&calc"}, err: `argument 2 ("pkg&calc") holds '&'`},
		{name: "npx", args: []string{"%APPDATA%"}, err: `holds '%'`},
		{name: "npx", args: []string{"a|b"}, err: `holds '|'`},
		{name: "npx", args: []string{"(x)"}, err: `holds '('`},
		{name: "npx", args: []string{`say "hi"`}, err: `holds '"'`},
		{name: "npx", args: []string{"!PATH!"}, err: `holds '!'`},
		{name: "npx", args: []string{"a^b"}, err: `holds '^'`},
		{name: "npx", args: []string{"a>b"}, err: `holds '>'`},
		{name: "npx", args: []string{"line\nnext"}, err: `holds '\n'`},
		{name: "npm", pathext: ".PS1", err: `cannot start a ".ps1" file directly`},
		{name: `C:\tools\server.js`, err: `cannot start a ".js" file directly`},
		{name: "uvx", err: "uvx: not found in PATH (tried .com, .exe, .bat, .cmd in each of its 3 folders)"},
		{name: `C:\nope\x`, err: `not found (tried it with`},
		{name: "", err: "no command"},
	} {
		e := env
		e.PathExt = tc.pathext
		got, err := Resolve(tc.name, tc.args, e)
		label := tc.name + " " + strings.Join(tc.args, " ") + " [" + tc.pathext + "]"
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", label, err, tc.err)
			}
			if strings.Contains(tc.err, "holds") && !errors.Is(err, ErrUnsafe) {
				t.Errorf("%s: the refusal does not wrap ErrUnsafe", label)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", label, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %#v\nwant %#v", label, got, tc.want)
		}
	}
}

// TestBatchLineReadBack: what a batch file passes on with %* is read back
// by the program it wraps (node) as the original arguments.
func TestBatchLineReadBack(t *testing.T) {
	args := []string{"-y", "@scope/pkg@1.2", "my server", `C:\dir with space\`, "a=b", "x,y", ""}
	line, err := batchLine(`C:\n\npx.cmd`, args, "")
	if err != nil {
		t.Fatal(err)
	}
	// cmd.exe with /s strips the outer quotes; %* is the rest after the
	// script's own word.
	rest := strings.TrimPrefix(line.inner, `"C:\n\npx.cmd" `)
	if got := SplitCommandLine(rest); !reflect.DeepEqual(got, args) {
		t.Errorf("read back %q, want %q", got, args)
	}
	if line.full != `C:\Windows\System32\cmd.exe /d /s /c "`+line.inner+`"` {
		t.Errorf("full line %s", line.full)
	}
	if l, _ := batchLine(`C:\x.cmd`, nil, `C:\Program Files\cmd.exe`); !strings.HasPrefix(l.full, `"C:\Program Files\cmd.exe" /d`) {
		t.Errorf("a ComSpec with a space is not quoted: %s", l.full)
	}
	if _, err := batchLine(`C:\100%\x.cmd`, nil, ""); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a %% in the script path: %v", err)
	}
}

func TestResolveUnixUnchanged(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		got, err := Resolve("npx", []string{"-y", "a&b", "%x%"}, Env{GOOS: goos, IsFile: files()})
		want := Argv{Path: "npx", Args: []string{"npx", "-y", "a&b", "%x%"}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %#v, %v", goos, got, err)
		}
	}
}

func TestEnvFrom(t *testing.T) {
	e := EnvFrom([]string{"PATH=/a", "PATHEXT=.X", "ComSpec=c", "PATH=/b"})
	if e.Path != "/b" || e.PathExt != ".X" || e.ComSpec != "c" || e.GOOS != runtime.GOOS {
		t.Errorf("%+v", e)
	}
}

func TestIsPathAndFindWindows(t *testing.T) {
	for _, tc := range []struct {
		cmd, goos string
		want      bool
	}{
		{"npx", "windows", false}, {`.\bin\server.cmd`, "windows", true}, {`C:server.exe`, "windows", true},
		{"./bin/server", "windows", true}, {`back\slash`, "linux", false}, {"./x", "linux", true},
	} {
		if got := IsPath(tc.cmd, tc.goos); got != tc.want {
			t.Errorf("IsPath(%q, %s) = %v", tc.cmd, tc.goos, got)
		}
	}
	e := Env{GOOS: "windows", Path: `C:\a;C:\b`, IsFile: files(`C:\b\npx.cmd`, `C:\srv\run.BAT`)}
	if p, err := FindWindows("npx", e); err != nil || p != `C:\b\npx.cmd` {
		t.Errorf("npx: %q, %v", p, err)
	}
	if p, err := FindWindows(`C:\srv\run`, e); err != nil || p != `C:\srv\run.bat` {
		t.Errorf(`C:\srv\run: %q, %v`, p, err)
	}
	if _, err := FindWindows("gh", e); err == nil {
		t.Error("gh found")
	}
}
