// Package clirange names the range of Claude Code CLI versions nightwatch is
// tested against, and compares versions against it.
//
// Every end-to-end test runs on the oldest and the newest of the range (the
// versions pinned in testdata/npm/package.json, one `claude-code-<version>`
// alias line each); a test in internal/testkit fails if the pins and these
// constants disagree.
package clirange

import (
	"regexp"
	"strconv"
	"strings"
)

const (
	// Oldest is the oldest Claude Code version the end-to-end suite runs.
	Oldest = "2.1.197"
	// Newest is the newest Claude Code version the end-to-end suite runs.
	Newest = "2.1.332"
)

var versionRE = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)\b`)

// Parse finds the first x.y.z version in s (for example the output of
// `claude --version`: "2.1.332 (Claude Code)") and returns it, or "" when
// s holds none.
func Parse(s string) string {
	return versionRE.FindString(s)
}

// Compare orders two x.y.z versions numerically: -1 if a < b, 0 if equal,
// +1 if a > b. A part that is not a number compares as 0.
func Compare(a, b string) int {
	pa, pb := parts(a), parts(b)
	for i := range pa {
		switch {
		case pa[i] < pb[i]:
			return -1
		case pa[i] > pb[i]:
			return 1
		}
	}
	return 0
}

func parts(v string) [3]int {
	var out [3]int
	for i, p := range strings.SplitN(v, ".", 3) {
		n, _ := strconv.Atoi(p)
		out[i] = n
	}
	return out
}

// Where says where version v lies relative to the tested range: "older",
// "inside" or "newer".
func Where(v string) string {
	switch {
	case Compare(v, Oldest) < 0:
		return "older"
	case Compare(v, Newest) > 0:
		return "newer"
	default:
		return "inside"
	}
}
