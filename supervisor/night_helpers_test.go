package supervisor

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// startHTTPTestServer runs the test MCP server over Streamable HTTP as a
// process of its own and returns its URL.
func startHTTPTestServer(t *testing.T, bin string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--http", "127.0.0.1:0")
	proc.Prepare(cmd, 200*time.Millisecond)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = proc.Wait(cmd)
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("test server printed no URL: %v", err)
	}
	return strings.TrimSpace(line)
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
