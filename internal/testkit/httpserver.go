package testkit

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// StartHTTPTestServer runs the test MCP server bin (BuildTestServer) over
// HTTP on a free loopback port until t ends, and returns its URL and pid
// (for a test that kills it mid-night).
func StartHTTPTestServer(t testing.TB, bin string) (url string, pid int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--http", "127.0.0.1:0")
	proc.Prepare(cmd, 200*time.Millisecond)
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := proc.Start(cmd); err != nil {
		cancel()
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
	return strings.TrimSpace(line), cmd.Process.Pid
}
