package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ClaudeCountEnv names a file: when set, ClaudeBinOf returns a wrapper
// script that appends one line per start of the CLI to that file (the test
// that asked for the binary, "session" for a `-p` run or "other" for
// anything else such as --version, the version) and then execs the real
// binary. It measures how many Claude sessions each test starts, the
// suite's main cost; unset, nothing changes:
//
//	NIGHTWATCH_TEST_CLAUDE_LOG=/tmp/claude.log go test -count=1 ./supervisor/
//	cut -f1,2 /tmp/claude.log | sed 's|/[^\t]*||' | sort | uniq -c
const ClaudeCountEnv = "NIGHTWATCH_TEST_CLAUDE_LOG"

// countingClaude returns bin itself, or the counting wrapper of bin when
// ClaudeCountEnv is set (Unix only: the wrapper is a shell script).
func countingClaude(t testing.TB, bin, version string) string {
	log := os.Getenv(ClaudeCountEnv)
	if log == "" || runtime.GOOS == "windows" {
		return bin
	}
	script := fmt.Sprintf(`#!/bin/sh
kind=other
for a in "$@"; do [ "$a" = -p ] && kind=session; done
printf '%%s\t%%s\t%%s\n' %s "$kind" %s >>%s
exec %s "$@"
`, shQuote(t.Name()), shQuote(version), shQuote(log), shQuote(bin))
	p := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatalf("testkit: write the counting claude wrapper: %v", err)
	}
	return p
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
