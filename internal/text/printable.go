package text

import (
	"strconv"
	"strings"
	"unicode"
)

// Printable returns s with every control character (terminal escape codes,
// newlines, DEL, C1 codes) and every invalid UTF-8 byte written as a Go
// escape (\x1b, \n, \u009b), so a hostile name cannot move the cursor,
// recolour or rewrite an operator's terminal through an error message.
// Printable text is returned as it is.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == unicode.ReplacementChar || unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	// QuoteToGraphic also escapes the quote and the backslash; undo that
	// for the characters that are harmless, keeping the escapes it added.
	q = q[1 : len(q)-1]
	return strings.NewReplacer(`\"`, `"`).Replace(q)
}

// Name returns a name as messages show it: in double quotes, with every
// character that is not printable escaped (strconv.Quote).
func Name(s string) string { return strconv.Quote(s) }

// PlainName reports whether s can be shown without quotes: letters, digits,
// '.', '_' and '-' only.
func PlainName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '.' || r == '_' || r == '-' || r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}
