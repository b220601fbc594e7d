// Package text holds the small text helpers every package needs the same
// way: a reason clipped to one line, a value quoted for /bin/sh.
package text

import "strings"

// OneLine folds s to one line (every run of white space becomes one space)
// and clips it to max runes, ending a clipped text with "…".
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); max > 0 && len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// ShellQuote quotes s for /bin/sh: inside single quotes nothing is special
// except the quote itself, which is closed, escaped and reopened.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// JoinNonEmpty joins the parts that are not empty with sep.
func JoinNonEmpty(sep string, parts ...string) string {
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// Clip folds s to one line and bounds it to max bytes, cut on a rune
// boundary and ended with "…": for reasons stored in a bounded field.
func Clip(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
