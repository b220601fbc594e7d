package reconnect

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// SyntaxError is a command line Split cannot turn into arguments. It does
// not quote the command: the command may carry a credential.
type SyntaxError struct {
	Problem string // "unterminated single quote", …
	Offset  int    // byte offset in the command
	Column  int    // 1-based column, in characters, for people
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at column %d", e.Problem, e.Column)
}

func syntaxError(command string, offset int, problem string) *SyntaxError {
	return &SyntaxError{
		Problem: problem,
		Offset:  offset,
		Column:  utf8.RuneCountInString(command[:offset]) + 1,
	}
}

// isBlank reports whether c separates words (the shell's default IFS, plus
// the carriage return a command pasted from a Windows file carries).
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Split turns a command line into argv the way a POSIX shell splits words,
// and does nothing else: no variable, command, tilde or glob expansion, no
// operators. Blanks separate words; 'single quotes' keep everything
// literally; "double quotes" keep everything but \" \\ \$ \` (and drop a
// backslash-newline); outside quotes a backslash keeps the next character.
// A quoted empty string ("" or a pair of single quotes) is an argument.
//
// Shell operators are ordinary text here: "a && b" is the three arguments
// "a", "&&" and "b". ShellSyntax tells which of them a command relies on.
//
// Why no shell: the reconnect command of the Node original ran through
// spawnSync(…, {shell: true}), so a server name or a stray $(…) became
// code. Commands that need a shell must say so: sh -c '…'.
func Split(command string) ([]string, error) {
	if i := strings.IndexByte(command, 0); i >= 0 {
		return nil, syntaxError(command, i, "NUL byte (not allowed in an argument)")
	}
	var (
		args   []string
		word   strings.Builder
		inWord bool // a word has started, even an empty quoted one
	)
	endWord := func() {
		if inWord {
			args = append(args, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(command); {
		c := command[i]
		switch {
		case isBlank(c):
			endWord()
			i++
		case c == '\\':
			if i+1 == len(command) {
				return nil, syntaxError(command, i, "trailing backslash")
			}
			if command[i+1] == '\n' { // line continuation: both vanish
				i += 2
				continue
			}
			// A multi-byte character after the backslash is copied byte by
			// byte: its first byte here, the rest by the default case.
			word.WriteByte(command[i+1])
			inWord = true
			i += 2
		case c == '\'':
			end := strings.IndexByte(command[i+1:], '\'')
			if end < 0 {
				return nil, syntaxError(command, i, "unterminated single quote")
			}
			word.WriteString(command[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case c == '"':
			next, err := readDoubleQuoted(command, i, &word)
			if err != nil {
				return nil, err
			}
			inWord = true
			i = next
		default:
			word.WriteByte(c)
			inWord = true
			i++
		}
	}
	endWord()
	return args, nil
}

// readDoubleQuoted copies the inside of the double-quoted string opening at
// command[open] into word and returns the offset just past its closing
// quote.
func readDoubleQuoted(command string, open int, word *strings.Builder) (int, error) {
	for i := open + 1; i < len(command); {
		switch c := command[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\' && i+1 < len(command) && strings.IndexByte("\"\\$`", command[i+1]) >= 0:
			word.WriteByte(command[i+1])
			i += 2
		case c == '\\' && i+1 < len(command) && command[i+1] == '\n':
			i += 2
		default: // any other backslash is literal inside double quotes
			word.WriteByte(c)
			i++
		}
	}
	return 0, syntaxError(command, open, "unterminated double quote")
}

// operators are the shell's control and redirection operators, longest
// first so that "&&" is not reported as two "&". ")" is left out: it only
// closes what "(" or "$(" opened, and those are reported already.
var operators = []string{"&&", "||", ">>", ">&", "<<", "<&", ";", "|", "&", ">", "<", "("}

// ShellSyntax lists the shell constructs in command that a shell would
// act on and Split does not, each once, in order of appearance: operators
// (&&, ||, ;, |, &, >, <, …) outside quotes; expansions $(…), `…`, ${…},
// $NAME outside single quotes (a shell expands them inside double quotes
// too); a ~ or # that starts a word. An empty result means Split gives the
// same argv a shell would. Callers warn with it: "this command relies on
// shell syntax (…), which nightwatch does not use; write sh -c '…'
// yourself". The {server} placeholder is not shell syntax.
func ShellSyntax(command string) []string {
	var found []string
	report := func(construct string) {
		if !slices.Contains(found, construct) {
			found = append(found, construct)
		}
	}
	wordStart := true
	for i := 0; i < len(command); {
		c := command[i]
		switch {
		case isBlank(c):
			wordStart = true
			i++
			continue
		case c == '\\':
			i += 2
		case c == '\'':
			end := strings.IndexByte(command[i+1:], '\'')
			if end < 0 {
				return found // Split reports the unbalanced quote
			}
			i += end + 2
		case c == '"':
			i = scanDoubleQuotedExpansions(command, i, report)
		case c == '$' || c == '`':
			construct, width := expansionAt(command[i:])
			if construct != "" {
				report(construct)
			}
			i += width
		case wordStart && c == '~':
			report("~")
			i++
		case wordStart && c == '#':
			report("#") // a shell ignores the rest of the line; Split does not
			return found
		default:
			if op := operatorAt(command[i:]); op != "" {
				report(op)
				i += len(op)
				wordStart = true // an operator ends a word: "a;~/x" expands ~
				continue
			}
			i++
		}
		wordStart = false
	}
	return found
}

// scanDoubleQuotedExpansions reports the expansions inside the double-quoted
// string opening at command[open] and returns the offset past its end.
func scanDoubleQuotedExpansions(command string, open int, report func(string)) int {
	for i := open + 1; i < len(command); {
		switch c := command[i]; c {
		case '"':
			return i + 1
		case '\\':
			i += 2
		case '$', '`':
			construct, width := expansionAt(command[i:])
			if construct != "" {
				report(construct)
			}
			i += width
		default:
			i++
		}
	}
	return len(command)
}

// expansionAt names the expansion that s (starting with $ or `) opens and
// the bytes it spans for scanning purposes: "$(" for command substitution,
// "`" for its old form, "${" for a parameter in braces, "$NAME" with the
// actual name for a plain variable, "$?" and friends for special ones. A
// lone $ is literal in a shell too: ("", 1).
func expansionAt(s string) (construct string, width int) {
	if s[0] == '`' {
		return "`", 1
	}
	if len(s) < 2 {
		return "", 1
	}
	switch next := s[1]; {
	case next == '(':
		return "$(", 2
	case next == '{':
		return "${", 2
	case next == '_' || isASCIILetter(next):
		end := 2
		for end < len(s) && (s[end] == '_' || isASCIILetter(s[end]) || isDigit(s[end])) {
			end++
		}
		return s[:end], end
	case isDigit(next) || strings.IndexByte("?$@*#!-", next) >= 0:
		return s[:2], 2
	}
	return "", 1
}

func operatorAt(s string) string {
	for _, op := range operators {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	return ""
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool       { return '0' <= c && c <= '9' }

// Placeholder is replaced by the server's name in every argument.
const Placeholder = "{server}"

// Expand returns a copy of argv with Placeholder replaced by server in
// every argument. It runs after Split, so the name lands inside one
// argument whatever it holds: a name with blanks, quotes, ";" or "$(…)"
// can add neither an argument nor a command.
func Expand(argv []string, server string) []string {
	expanded := make([]string, len(argv))
	for i, arg := range argv {
		expanded[i] = strings.ReplaceAll(arg, Placeholder, server)
	}
	return expanded
}
