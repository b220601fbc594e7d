package supervisor

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

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
