package jobs

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/command"
)

// path makes a path from the batch file absolute: a leading "~" or "~/" is
// HOME, a relative path is relative to the batch file's folder (not to the
// folder nightwatch happens to be started from: launchd starts it in /).
// A "~" left at the start of a path component ("/Users/~/notes",
// "~bob/x") is an error: launchd and cron do not expand it, so the night
// would look for a folder literally named "~". A "~" inside a name
// ("notes~") is an ordinary character.
func (l *loader) path(p string, line int, field string) (string, bool) {
	if p == "" {
		l.problem(line, field, "must not be empty")
		return "", false
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, _ := l.lookup("HOME")
		if home == "" || !filepath.IsAbs(home) {
			l.problem(line, field, "%q starts with ~ but HOME is not set to an absolute path", p)
			return "", false
		}
		p = filepath.Join(home, p[1:])
	}
	if hasTildeComponent(p) {
		l.problem(line, field, "%q contains a ~ that nothing will expand (launchd and cron run no shell); write the folder out in full", p)
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.dir, p)
	}
	return filepath.Clean(p), true
}

func hasTildeComponent(p string) bool {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if strings.HasPrefix(part, "~") {
			return true
		}
	}
	return false
}

// executable resolves a command the way it will be run: a command with a
// "/" is a path (relative to the batch file); a bare name is looked up in
// PATH as the batch's environment defines it, so that a name found in the
// login shell but not under launchd's minimal PATH fails now, not at 2 a.m.
// mustExist also checks a command given as a path.
func (l *loader) executable(cmd string, line int, field string, mustExist bool) (string, bool) {
	if cmd == "" {
		l.problem(line, field, "must not be empty")
		return "", false
	}
	if command.IsPath(cmd, runtime.GOOS) {
		p, ok := l.path(cmd, line, field)
		if !ok {
			return "", false
		}
		if mustExist {
			if err := checkExecutable(p); err != nil {
				l.problem(line, field, "%v", err)
				return "", false
			}
		}
		return p, true
	}
	if p, ok := l.looked[cmd]; ok {
		return p, true
	}
	pathList, _ := l.lookup("PATH")
	if p, ok := lookPath(cmd, pathList); ok {
		if l.looked == nil {
			l.looked = map[string]string{}
		}
		l.looked[cmd] = p
		return p, true
	}
	l.problem(line, field, "%q not found in PATH (%s); set PATH in env or write the command's absolute path", cmd, orNone(pathList))
	return "", false
}

// lookPath is exec.LookPath against a given PATH rather than the
// process's. Relative PATH entries are skipped: they would resolve against
// whatever folder the supervisor runs in.
func lookPath(name, pathList string) (string, bool) {
	if runtime.GOOS == "windows" { // PATHEXT: npx is npx.cmd
		p, err := command.FindWindows(name, command.Env{GOOS: "windows", Path: pathList, PathExt: os.Getenv("PATHEXT")})
		return p, err == nil
	}
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if checkExecutable(p) == nil {
			return p, true
		}
	}
	return "", false
}

func checkExecutable(p string) error {
	if runtime.GOOS == "windows" { // no execute bit: an extension in PATHEXT
		_, err := command.FindWindows(p, command.Env{GOOS: "windows", PathExt: os.Getenv("PATHEXT")})
		return err
	}
	fi, err := os.Stat(p)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("%s does not exist", p)
		}
		return fmt.Errorf("cannot use %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "empty"
	}
	return s
}
