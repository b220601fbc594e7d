// Package command turns a configured command (an MCP server, a reconnect
// or notify command, the agent) into the process nightwatch starts, as the
// platform's own launcher would find it.
//
// On Unix nothing changes: the name is looked up in PATH by os/exec, the
// arguments are passed as they are. On Windows a bare name is tried with
// each PATHEXT extension in each PATH folder in turn (`npx` is npx.cmd), an
// .exe or .com runs directly, and a .cmd or .bat — which only cmd.exe can
// run — runs through %ComSpec% (`cmd.exe /d /s /c "…"`) with a command line
// written here, not by Go. cmd.exe reads & | < > ^ ( ) as commands and
// expands % and ! even inside quotes, so a batch file is refused, with the
// reason, when its command line would hold one of them or a newline: the
// rule Node.js adopted for CVE-2024-27980 and the article's hook follows.
package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Env is what resolution depends on. Resolve reads nothing else.
type Env struct {
	GOOS string
	// Path, PathExt and ComSpec are the variables of the same names
	// (Windows spells them case-insensitively: "Path" is usual).
	Path, PathExt, ComSpec string
	// IsFile reports whether p names an existing regular file.
	IsFile func(p string) bool
}

// Argv is a resolved command.
type Argv struct {
	Path string   // the program to start (cmd.exe for a batch file)
	Args []string // its argv, Args[0] as given
	// CmdLine is the raw Windows command line to start Path with, set for
	// a batch file; "" lets os/exec quote Args.
	CmdLine string
}

// ErrUnsafe is wrapped by the refusal of a batch file whose command line
// cmd.exe would read as more than one command.
var ErrUnsafe = errors.New("unsafe for cmd.exe")

// defaultPathExt is Windows' PATHEXT when the variable is empty.
const defaultPathExt = ".COM;.EXE;.BAT;.CMD"

// Resolve computes what runs name with args on e.GOOS. On every platform
// but Windows it is name and args unchanged (os/exec looks name up).
func Resolve(name string, args []string, e Env) (Argv, error) {
	argv := append([]string{name}, args...)
	if e.GOOS != "windows" {
		return Argv{Path: name, Args: argv}, nil
	}
	if name == "" {
		return Argv{}, errors.New("no command")
	}
	path, err := findWindows(name, e)
	if err != nil {
		return Argv{}, err
	}
	switch ext := strings.ToLower(winExt(path)); ext {
	case ".exe", ".com":
		return Argv{Path: path, Args: argv}, nil
	case ".cmd", ".bat":
		line, err := batchLine(path, args, e.ComSpec)
		if err != nil {
			return Argv{}, err
		}
		comspec := comSpec(e.ComSpec)
		return Argv{Path: comspec, Args: []string{comspec, "/d", "/s", "/c", line.inner}, CmdLine: line.full}, nil
	default:
		return Argv{}, fmt.Errorf("%s: Windows cannot start a %q file directly (only .exe, .com, .bat and .cmd); give the program that runs it (node, python…) as the command", path, ext)
	}
}

// findWindows looks name up as CreateProcess's callers do: a name with a
// folder is tried as it is and then with each PATHEXT extension; a bare
// name is tried in each absolute PATH folder in order, with each extension
// in PATHEXT order. The current folder is not searched (os/exec does not
// either, since Go 1.19).
func findWindows(name string, e Env) (string, error) {
	isFile := e.IsFile
	if isFile == nil {
		isFile = statFile
	}
	exts := pathExts(e.PathExt)
	candidates := func(base string) []string {
		var c []string
		if winExt(base) != "" {
			c = append(c, base)
		}
		for _, x := range exts {
			c = append(c, base+x)
		}
		return c
	}
	if strings.ContainsAny(name, `\/:`) {
		for _, c := range candidates(name) {
			if isFile(c) {
				return c, nil
			}
		}
		return "", fmt.Errorf("%s: not found (tried it with %s)", name, strings.Join(exts, ", "))
	}
	var searched int
	for _, dir := range strings.Split(e.Path, ";") {
		dir = strings.Trim(strings.TrimSpace(dir), `"`)
		if !winAbs(dir) {
			continue // a relative folder would depend on the current one
		}
		searched++
		dir = strings.TrimRight(dir, `\/`) + `\`
		for _, c := range candidates(dir + name) {
			if isFile(c) {
				return c, nil
			}
		}
	}
	if searched == 0 {
		return "", fmt.Errorf("%s: not found: PATH has no absolute folder", name)
	}
	return "", fmt.Errorf("%s: not found in PATH (tried %s in each of its %d folders)", name, strings.Join(exts, ", "), searched)
}

func pathExts(v string) []string {
	if strings.TrimSpace(v) == "" {
		v = defaultPathExt
	}
	var out []string
	for _, x := range strings.Split(v, ";") {
		x = strings.TrimSpace(x)
		if x == "" {
			continue
		}
		if !strings.HasPrefix(x, ".") {
			x = "." + x
		}
		out = append(out, strings.ToLower(x))
	}
	return out
}

// winExt is the extension of a Windows path's last element ("" if none).
func winExt(p string) string {
	base := p[strings.LastIndexAny(p, `\/:`)+1:]
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return base[i:]
	}
	return ""
}

// winAbs reports a Windows absolute path: C:\… or \\server\share.
func winAbs(p string) bool {
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		c := p[0] | 0x20
		return c >= 'a' && c <= 'z'
	}
	return strings.HasPrefix(p, `\\`)
}

func comSpec(v string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return `C:\Windows\System32\cmd.exe`
}

// batchUnsafe are the characters cmd.exe acts on in an argument even
// inside quotes, or that would end the quoting: % and ! expand variables,
// " closes the quotes, and the rest start another command or a
// redirection once a batch file passes its arguments on unquoted (%~1).
const batchUnsafe = "&|<>^%!()\""

type cmdLine struct{ inner, full string }

// batchLine writes `"script" arg "arg 2"` and the whole cmd.exe command
// line around it, or refuses.
func batchLine(script string, args []string, comspec string) (cmdLine, error) {
	if i := strings.IndexAny(script, "%!\"\r\n\x00"); i >= 0 {
		return cmdLine{}, fmt.Errorf("%s: a batch file whose path holds %q cannot be run safely through cmd.exe: %w", script, script[i], ErrUnsafe)
	}
	words := []string{`"` + script + `"`}
	for n, a := range args {
		if i := strings.IndexAny(a, batchUnsafe+"\r\n\x00"); i >= 0 {
			return cmdLine{}, fmt.Errorf("%s is a batch file, run by cmd.exe, and argument %d (%q) holds %q, which cmd.exe would act on: %w; give the program it wraps (node …\\npx-cli.js, the server's .exe) as the command instead",
				script, n+1, a, a[i], ErrUnsafe)
		}
		words = append(words, batchQuote(a))
	}
	inner := strings.Join(words, " ")
	c := comSpec(comspec)
	if strings.ContainsAny(c, " \t") {
		c = `"` + c + `"`
	}
	return cmdLine{inner: inner, full: c + ` /d /s /c "` + inner + `"`}, nil
}

// batchQuote quotes an argument cmd.exe would split (space, tab and
// , ; = separate a batch file's parameters) or drop (empty). Backslashes
// before the closing quote are doubled so that the program the batch file
// passes %* to reads them as backslashes, not as an escaped quote.
func batchQuote(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t,;=") {
		return a
	}
	trailing := len(a) - len(strings.TrimRight(a, `\`))
	return `"` + a + strings.Repeat(`\`, trailing) + `"`
}

func statFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// EnvFrom takes PATH, PATHEXT and ComSpec from env (NAME=VALUE lines; names
// compared without case on Windows) or, when env is nil, from this
// process; GOOS is this platform's.
func EnvFrom(env []string) Env {
	e := Env{GOOS: runtime.GOOS}
	get := os.Getenv
	if env != nil {
		get = func(k string) string {
			v := ""
			for _, kv := range env {
				name, val, ok := strings.Cut(kv, "=")
				if ok && (name == k || runtime.GOOS == "windows" && strings.EqualFold(name, k)) {
					v = val // the last one wins, as os/exec dedups
				}
			}
			return v
		}
	}
	e.Path, e.PathExt, e.ComSpec = get("PATH"), get("PATHEXT"), get("ComSpec")
	return e
}

// CommandContext is exec.CommandContext for a configured command: on
// Windows name is resolved by Resolve in the PATH of env (nil: this
// process's environment; env is not set on the command). When name cannot
// be found or cannot be run safely, the command's Err says why and Start
// returns it, so every caller reports it where it reports a failed start.
func CommandContext(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	if runtime.GOOS != "windows" {
		return exec.CommandContext(ctx, name, args...)
	}
	a, err := Resolve(name, args, EnvFrom(env))
	if err != nil {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Err = err
		return cmd
	}
	cmd := exec.CommandContext(ctx, a.Path, a.Args[1:]...)
	cmd.Args = a.Args
	if a.CmdLine != "" {
		setCmdLine(cmd, a.CmdLine)
	}
	return cmd
}

// FindWindows looks name up as Resolve does on Windows, in e.Path with
// e.PathExt: a name with a folder is tried as it is and with each
// extension, a bare name in each absolute PATH folder. It is the check a
// batch file's commands get when it is loaded.
func FindWindows(name string, e Env) (string, error) { return findWindows(name, e) }

// IsPath reports whether a command names a file rather than a name to look
// up in PATH: it holds a "/" or, on Windows, a "\" or a drive's ":".
func IsPath(cmd, goos string) bool {
	return strings.Contains(cmd, "/") || goos == "windows" && strings.ContainsAny(cmd, `\:`)
}
