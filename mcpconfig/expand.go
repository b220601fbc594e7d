package mcpconfig

import (
	"path/filepath"
	"slices"
	"strings"
)

// Expand applies Claude Code's ${VAR} expansion to one config string.
//
//   - ${VAR} becomes VAR's value.
//   - ${VAR:-default} becomes default when VAR is unset or set but empty
//     (bash semantics for ":-"). The default is used as written: it is not
//     expanded again.
//   - An unset ${VAR} with no default stays as the literal text and VAR is
//     reported in missing (deduplicated, in order of first appearance).
//     Claude Code starts the server with that literal text all the same.
//   - Plain $VAR and ~ are left alone: Claude Code does not expand them.
//   - Text that only looks like a reference stays as written and is not
//     reported: an unterminated "${", an empty "${}", and a nested
//     "${A${B}}" or "${A:-${B}}" (a name may not contain '$', '{' or
//     whitespace, and a default may not contain "${").
//
// A nil getenv behaves as an empty environment.
func Expand(s string, getenv func(string) (string, bool)) (out string, missing []string) {
	return expand(s, getenv, false)
}

// expand is Expand, plus shell-style plain $NAME when plainDollar is set
// (for paths given in environment variables, which a launchd plist or a
// systemd unit passes through without a shell).
func expand(s string, getenv func(string) (string, bool), plainDollar bool) (string, []string) {
	if !strings.Contains(s, "$") {
		return s, nil // the common case: no allocation
	}
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	var b strings.Builder
	var missing []string
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]

		ref, n, ok := parseBraced(s)
		if !ok && n > 0 {
			// "${A${B}}", "${A B}": not a reference, and neither is anything
			// inside it, as with Claude Code's /\$\{([^}]+)\}/.
			b.WriteString(s[:n])
			s = s[n:]
			continue
		}
		if ok {
			value, set := getenv(ref.name)
			switch {
			case set && (value != "" || !ref.hasDefault):
				b.WriteString(value)
			case ref.hasDefault:
				b.WriteString(ref.fallback)
			default:
				b.WriteString(s[:n]) // Claude Code keeps the literal text
				if !slices.Contains(missing, ref.name) {
					missing = append(missing, ref.name)
				}
			}
			s = s[n:]
			continue
		}
		if plainDollar {
			if n := plainNameLen(s[1:]); n > 0 {
				name := s[1 : 1+n]
				if value, set := getenv(name); set {
					b.WriteString(value)
				} else {
					b.WriteString(s[:1+n])
					if !slices.Contains(missing, name) {
						missing = append(missing, name)
					}
				}
				s = s[1+n:]
				continue
			}
		}
		// Not a reference: keep the '$' and look for the next one.
		b.WriteByte('$')
		s = s[1:]
	}
	return b.String(), missing
}

type bracedRef struct {
	name       string
	fallback   string
	hasDefault bool
}

// parseBraced reads "${NAME}" or "${NAME:-default}" at the start of s. Like
// Claude Code, a reference ends at the first '}'. It returns the length of
// the "${...}" text, with ok=false and n>0 when that text is not a valid
// reference (empty or odd name, nested "${"), and n=0 when s does not start
// a terminated "${...}" at all.
func parseBraced(s string) (ref bracedRef, n int, ok bool) {
	if !strings.HasPrefix(s, "${") {
		return bracedRef{}, 0, false
	}
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return bracedRef{}, 0, false // unterminated
	}
	content := s[2:end]
	ref = bracedRef{name: content}
	if name, fallback, found := strings.Cut(content, ":-"); found {
		ref = bracedRef{name: name, fallback: fallback, hasDefault: true}
	}
	if content == "" {
		return bracedRef{}, 0, false // "${}": Claude Code's pattern needs a character
	}
	if ref.name == "" || strings.ContainsAny(ref.name, "${ \t\r\n") || strings.Contains(ref.fallback, "${") {
		return bracedRef{}, end + 1, false
	}
	return ref, end + 1, true
}

// plainNameLen is the length of the shell variable name ([A-Za-z_][A-Za-z0-9_]*)
// at the start of s, or 0.
func plainNameLen(s string) int {
	n := 0
	for n < len(s) {
		c := s[n]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		digit := c >= '0' && c <= '9'
		if !letter && !(digit && n > 0) {
			break
		}
		n++
	}
	return n
}

// ExplicitPaths turns a path-list value such as NIGHTWATCH_MCP_CONFIG or
// ECC_MCP_CONFIG_PATH into absolute file paths. Such values often come from
// a launchd plist or a systemd unit where no shell ran, so this does the
// shell's job for the common forms: $VAR, ${VAR} and ${VAR:-default} are
// expanded in the whole value before it is split (an unset variable is left
// as written, so the resulting "file not found" problem shows it), a
// leading "~" or "~/" of each path becomes home, relative
// paths are made absolute against the process's working directory, and
// empty elements and surrounding whitespace are dropped.
//
// A "~" anywhere else (the article's "/Users/~/.claude/settings.json") is
// left alone on purpose: a shell would not expand it either, and Resolve
// reports the missing file with a hint.
func ExplicitPaths(value string, home string, getenv func(string) (string, bool)) []string {
	// Variables first, then split: "${CFG:-/a.json}" must not be cut at its
	// ':', and a variable may itself hold a list, as $PATH-like values do.
	value, _ = expand(value, getenv, true)
	var paths []string
	for _, element := range filepath.SplitList(value) {
		p := strings.TrimSpace(element)
		if p == "" {
			continue
		}
		if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
			p = home + p[1:]
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		paths = append(paths, p)
	}
	return paths
}
