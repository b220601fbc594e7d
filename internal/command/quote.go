package command

import "strings"

// QuoteArg quotes one argument for a Windows command line the way the
// C runtime (and Go's own os/exec, and CommandLineToArgvW) splits it back:
// an argument without space, tab, newline or double quote is left as it is;
// otherwise it is enclosed in double quotes, each " is preceded by a
// backslash, and backslashes are doubled only where they precede a " (or
// the closing quote). It is the rule of syscall.EscapeArg, written out here
// so that it can be used, and tested, on every platform.
func QuoteArg(s string) string {
	if s == "" {
		return `""`
	}
	if !strings.ContainsAny(s, " \t\n\v\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			slashes++
		case '"':
			for ; slashes > 0; slashes-- {
				b.WriteByte('\\')
			}
			b.WriteByte('\\')
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	for ; slashes > 0; slashes-- {
		b.WriteByte('\\')
	}
	b.WriteByte('"')
	return b.String()
}

// JoinArgs is the Windows command line of args, each quoted with QuoteArg.
func JoinArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = QuoteArg(a)
	}
	return strings.Join(q, " ")
}

// SplitCommandLine splits a Windows command line into its arguments by the
// rules QuoteArg writes for (those of CommandLineToArgvW for every word but
// the program's): white space separates words outside double quotes; 2n
// backslashes before a " are n backslashes and the " opens or closes a
// quoted part, 2n+1 are n backslashes and a literal "; other backslashes are
// literal; "" inside a quoted part is a literal ".
func SplitCommandLine(line string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\':
			n := 0
			for i < len(line) && line[i] == '\\' {
				n++
				i++
			}
			if i < len(line) && line[i] == '"' {
				cur.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					cur.WriteByte('"')
				} else {
					quoted = !quoted
				}
			} else {
				cur.WriteString(strings.Repeat(`\`, n))
				i--
			}
			inWord = true
		case c == '"':
			if quoted && i+1 < len(line) && line[i+1] == '"' {
				cur.WriteByte('"')
				i++
			} else {
				quoted = !quoted
			}
			inWord = true
		case (c == ' ' || c == '\t') && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
