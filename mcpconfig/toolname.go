package mcpconfig

import "strings"

const toolPrefix = "mcp__"

// NormalizeName is the server name as it appears in tool names: Claude Code
// replaces every character outside [A-Za-z0-9_-] with '_'. Claude Code does
// this on UTF-16 code units, so a character outside the Basic Multilingual
// Plane (an emoji) becomes two underscores; this matches that.
func NormalizeName(name string) string {
	if isNormalized(name) {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		switch {
		case isNameChar(r):
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("__") // a surrogate pair in JavaScript
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func isNormalized(name string) bool {
	for i := 0; i < len(name); i++ {
		if !isNameChar(rune(name[i])) {
			return false
		}
	}
	return true
}

func isNameChar(r rune) bool {
	return r == '_' || r == '-' ||
		(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

// MatchTool finds which configured server a tool name "mcp__<server>__<tool>"
// belongs to. Server names may themselves contain "__", so the tool name
// alone is ambiguous: every configured name whose normalized form fits is a
// candidate and the longest one wins ("a__b" beats "a" for
// "mcp__a__b__tool"). Two names that normalize alike ("my.server" and
// "my_server") tie; the one written exactly as in the tool name wins, then
// the smaller string, so the answer does not depend on the order of names
// (callers pass map keys). The returned server is the configured name, not
// its normalized form.
func MatchTool(toolName string, names []string) (server, tool string, ok bool) {
	rest, isMCP := strings.CutPrefix(toolName, toolPrefix)
	if !isMCP {
		return "", "", false
	}
	for _, name := range names {
		normalized := NormalizeName(name)
		after, fits := strings.CutPrefix(rest, normalized)
		if !fits || !strings.HasPrefix(after, "__") || len(after) == 2 {
			continue
		}
		if !ok || betterMatch(name, normalized, server) {
			server, tool, ok = name, after[2:], true
		}
	}
	return server, tool, ok
}

// betterMatch reports whether name (normalizing to normalized) beats the
// current best match.
func betterMatch(name, normalized, best string) bool {
	bestNormalized := NormalizeName(best)
	if len(normalized) != len(bestNormalized) {
		return len(normalized) > len(bestNormalized)
	}
	if exact, bestExact := name == normalized, best == bestNormalized; exact != bestExact {
		return exact
	}
	return name < best
}

// SplitToolName is the fallback when no configured name matches: the
// server is the text up to the first "__" after "mcp__". It is wrong for
// server names containing "__", which is why MatchTool comes first.
func SplitToolName(toolName string) (server, tool string, ok bool) {
	rest, isMCP := strings.CutPrefix(toolName, toolPrefix)
	if !isMCP {
		return "", "", false
	}
	server, tool, found := strings.Cut(rest, "__")
	if !found || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// Lookup returns the winning server called name, or the one whose
// normalized name equals name's normalized form (a name taken from a tool
// name), or nil. Safe on a nil *Resolved.
func (r *Resolved) Lookup(name string) *Server {
	if r == nil {
		return nil
	}
	if srv, ok := r.Servers[name]; ok {
		return srv
	}
	want := NormalizeName(name)
	for _, candidate := range r.Names {
		if NormalizeName(candidate) == want {
			return r.Servers[candidate]
		}
	}
	return nil
}
