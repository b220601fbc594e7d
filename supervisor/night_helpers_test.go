package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// logNight logs, for a failing test, what the night left in stateDir:
// the journal, the hooks' and guards' events file, and each attempt's
// stream and stderr (lines cut at 600 bytes), so that a failure seen
// once on a loaded CI machine says what the session and its hooks did.
func logNight(t *testing.T, stateDir, journalPath string) {
	t.Helper()
	show := func(what, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Logf("%s: %v", what, err)
			return
		}
		t.Logf("%s (%s):", what, path)
		for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			if len(line) > 600 {
				line = line[:600] + "…"
			}
			t.Logf("  %s", line)
		}
	}
	show("journal", journalPath)
	show("events", statedir.Events(stateDir))
	files, _ := filepath.Glob(filepath.Join(statedir.Runs(stateDir), "*", "*", "attempt-*", "*"))
	for _, f := range files {
		if base := filepath.Base(f); strings.HasSuffix(base, ".jsonl") || strings.HasSuffix(base, ".log") {
			show("attempt file", f)
		}
	}
}

// startHTTPTestServer runs the test MCP server over HTTP; its URL.
func startHTTPTestServer(t *testing.T, bin string) string {
	url, _ := testkit.StartHTTPTestServer(t, bin)
	return url
}

// isZombie reports a process that exited but was not reaped: gone for
// every purpose but the process table (nothing reaps orphans in this
// container's init).
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] == 'Z'
}
