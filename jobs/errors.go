package jobs

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Problem is one thing wrong with a batch file. File is the path as the
// user wrote it (the batch file, or its env_file); Line is 1-based, 0 when
// the problem has no line (the file cannot be read); Field is the path of
// the field in the file ("jobs[2].servers"), "" when none applies.
type Problem struct {
	File    string
	Line    int
	Field   string
	Message string
}

// Error reads "file:line: field: message", the shape editors and terminals
// turn into a link.
func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// LoadError is every problem found in a batch file. Load collects them all,
// so that a user fixes the file in one go instead of one error per run.
type LoadError struct {
	Problems []Problem
}

// Error lists each problem on its own line, in file order.
func (e *LoadError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// sortProblems puts the batch file's problems first, top to bottom, then
// those of other files (the env_file). The sort is stable so that problems
// on one line keep the order they were found in.
func sortProblems(ps []Problem, batchFile string) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(
			cmp.Compare(rank(a.File, batchFile), rank(b.File, batchFile)),
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
		)
	})
}

func rank(file, batchFile string) int {
	if file == batchFile {
		return 0
	}
	return 1
}
