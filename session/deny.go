package session

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/environ"
)

// denyTools are the file tools a deny rule names. Claude Code checks
// Read rules for every tool that reads a file (Read, Grep, Glob, the
// notebook reader) and Edit rules for every tool that writes one (Edit,
// Write, MultiEdit, NotebookEdit); a Write(path) rule is not a file
// rule to the CLI.
var denyTools = []string{"Read", "Edit"}

// denyRules are the permission rules the session's settings deny: the
// files that hold the night's secrets and state, which the model must
// never read or change, wherever the job's cwd is. Each path is
// absolute; Claude Code writes an absolute path in a rule with a
// leading "//" (a single "/" is relative to the settings file).
//
//   - env_file: every value it sets;
//   - state_dir and everything below it: the attempt's MCP config (the
//     servers' resolved keys), the cache, the journal, the logs;
//   - the CLI's own login (<CLAUDE_CONFIG_DIR or ~/.claude>/.credentials.json);
//   - the batch file, against edits: the model must not rewrite
//     tomorrow's night (fail_open, its own allowed tools).
//
// These bind the CLI's file tools only: a Bash command the job allows
// (cat, env) is not a file tool and is not stopped by them (RELIABILITY.md).
func denyRules(spec Spec) []string {
	b := spec.Batch
	var rules []string
	add := func(path string, tools ...string) {
		for _, p := range withResolved(path) {
			for _, t := range tools {
				rules = append(rules, t+"("+rulePath(p)+")")
			}
		}
	}
	if b.EnvFile != "" {
		add(b.EnvFile, denyTools...)
	}
	if b.StateDir != "" {
		add(filepath.Join(b.StateDir, "**"), denyTools...)
	}
	if c := credentialsFile(Environ(b, spec.Env)); c != "" {
		add(c, denyTools...)
	}
	if b.File != "" {
		add(b.File, "Edit")
	}
	slices.Sort(rules)
	return slices.Compact(rules)
}

// credentialsFile is the CLI's login file as the session's CLI finds it,
// "" when neither CLAUDE_CONFIG_DIR nor HOME says where.
func credentialsFile(env []string) string {
	get := environ.Lookup(env)
	dir, _ := get("CLAUDE_CONFIG_DIR")
	if dir == "" {
		home, _ := get("HOME")
		if home == "" {
			home, _ = get("USERPROFILE")
		}
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".claude")
	}
	if !filepath.IsAbs(dir) {
		return ""
	}
	return filepath.Join(dir, ".credentials.json")
}

// withResolved is path and, when a symlink in it leads elsewhere
// (macOS's /tmp is /private/tmp), the path it resolves to: the CLI may
// name the file either way. A trailing "**" is kept on both.
func withResolved(path string) []string {
	out := []string{path}
	dir, tail := path, ""
	if filepath.Base(path) == "**" {
		dir, tail = filepath.Dir(path), "**"
	}
	// The file itself may not exist yet (the state folder's files come
	// and go): resolve its folder.
	parent, name := filepath.Dir(dir), filepath.Base(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		out = append(out, filepath.Join(real, tail))
	} else if real, err := filepath.EvalSymlinks(parent); err == nil && real != parent {
		out = append(out, filepath.Join(real, name, tail))
	}
	return out
}

// rulePath writes an absolute path the way a permission rule reads it:
// forward slashes, a leading "//", a Windows drive as its letter
// ("C:\x" is "//c/x"). A segment with a character the rule's pattern
// syntax reads as a pattern or an escape (*?[]{}()!\) is written as "*":
// the rule then denies a little more, never less.
func rulePath(abs string) string {
	p := filepath.ToSlash(abs)
	if v := filepath.VolumeName(abs); len(v) == 2 && v[1] == ':' {
		p = "/" + strings.ToLower(v[:1]) + p[2:]
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		if s != "**" && strings.ContainsAny(s, `*?[]{}()!\`) {
			segs[i] = "*"
		}
	}
	return "//" + strings.Join(segs, "/")
}
