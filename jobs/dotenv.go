package jobs

import (
	"fmt"
	"strings"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// envLine is one variable of an env_file.
type envLine struct {
	key, value string
	line       int
}

// envLineError is a syntax error in an env_file, with its line.
type envLineError struct {
	line int
	msg  string
}

// parseDotenv reads the common dotenv subset that shells and docker agree
// on:
//
//	# a comment
//	KEY=value            # trailing comment after whitespace
//	export KEY=value
//	KEY="double quoted: ${VAR} expanded, \n \t \" \\ escapes"
//	KEY='single quoted: taken literally, no expansion'
//
// Unquoted and double-quoted values get ${VAR} / ${VAR:-default} expansion
// through lookup, which sees the keys defined above in the file first. A
// variable with no value is reported like a syntax error, with its line.
// Values span one line: a multi-line quoted value is an unterminated quote.
func parseDotenv(data string, lookup func(string) (string, bool)) ([]envLine, []envLineError) {
	var vars []envLine
	var errs []envLineError
	defined := map[string]string{}
	scoped := func(name string) (string, bool) {
		if v, ok := defined[name]; ok {
			return v, true
		}
		return lookup(name)
	}
	data = strings.TrimPrefix(data, "\ufeff") // a BOM from a Windows editor
	for i, raw := range strings.Split(data, "\n") {
		n := i + 1
		line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			line = strings.TrimSpace(rest)
		}
		key, value, found := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !found {
			errs = append(errs, envLineError{n, "expected KEY=VALUE"})
			continue
		}
		if !isVarName(key) {
			errs = append(errs, envLineError{n, fmt.Sprintf("%q is not a variable name (letters, digits and _, not starting with a digit)", clip(key))})
			continue
		}
		v, expand, err := dotenvValue(strings.TrimLeft(value, " \t"))
		if err != "" {
			errs = append(errs, envLineError{n, fmt.Sprintf("%s: %s", key, err)})
			continue
		}
		if expand {
			out, missing := mcpconfig.Expand(v, scoped)
			if len(missing) > 0 {
				errs = append(errs, envLineError{n, fmt.Sprintf("%s: variable ${%s} is not set and has no default", key, missing[0])})
				continue
			}
			v = out
		}
		if strings.IndexByte(v, 0) >= 0 {
			errs = append(errs, envLineError{n, key + ": contains a NUL byte"})
			continue
		}
		defined[key] = v
		vars = append(vars, envLine{key: key, value: v, line: n})
	}
	return vars, errs
}

// dotenvValue reads the text after "=": it returns the value, whether it
// is subject to expansion, and a syntax error.
func dotenvValue(s string) (value string, expand bool, err string) {
	if s == "" {
		return "", false, ""
	}
	switch s[0] {
	case '\'':
		end := strings.IndexByte(s[1:], '\'')
		if end < 0 {
			return "", false, "unterminated single quote"
		}
		return s[1 : 1+end], false, afterQuote(s[end+2:])
	case '"':
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '"':
				return b.String(), true, afterQuote(s[i+1:])
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				default: // \" \\ and anything else: the character itself
					b.WriteByte(s[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", false, "unterminated double quote"
	}
	// Unquoted: a " #" starts a comment, as in a shell.
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "\t#"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s), true, ""
}

// afterQuote checks what follows a closing quote: nothing, or a comment.
func afterQuote(rest string) string {
	rest = strings.TrimSpace(rest)
	if rest == "" || strings.HasPrefix(rest, "#") {
		return ""
	}
	return "unexpected text after the closing quote"
}

// isVarName is the shell's [A-Za-z_][A-Za-z0-9_]*.
func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && !(i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// clip shortens a name quoted in a message. Messages about an env_file
// never quote a value: the file holds secrets and errors end up in logs.
func clip(s string) string {
	const max = 40
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}
