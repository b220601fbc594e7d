package probe

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// Probes against the real @modelcontextprotocol/server-everything, the
// TypeScript SDK's reference server.

func TestServerEverythingStdio(t *testing.T) {
	t.Parallel()
	bin := serverEverythingBin(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	// The shell records the pid, then becomes the server (exec keeps it):
	// server-everything ignores stdin EOF, so only the group kill ends it.
	srv := &mcpconfig.Server{Name: "everything", Transport: mcpconfig.Stdio, Command: "/bin/sh",
		Args: []string{"-c", `echo $$ > "$0"; exec "$1" stdio`, pidfile, bin}}
	start := time.Now()
	res := Stdio(context.Background(), srv, Options{Timeout: 10 * time.Second, ListTools: true})
	t.Logf("%+v in %s", res, time.Since(start))
	if res.Verdict != Healthy || res.Tools <= 0 || res.ProtocolVersion != ClientProtocolVersion || res.ServerName == "" {
		t.Fatalf("got %+v", res)
	}
	// The TypeScript SDK answers server/discover with -32601 (late when
	// Node starts slowly, and then initialize is already queued): legacy.
	if res.Era != Legacy || !strings.Contains(res.Reason, "server/discover got JSON-RPC error -32601") {
		t.Errorf("era %q reason %q", res.Era, res.Reason)
	}
	requireGone(t, readPids(t, pidfile))
}

func TestServerEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	base := startServerEverything(t, "streamableHttp")
	res := HTTP(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: base + "/mcp"},
		Options{Timeout: 5 * time.Second, ListTools: true})
	t.Logf("%+v", res)
	if res.Verdict != Healthy || res.Status != 200 || res.Tools <= 0 || res.ProtocolVersion != ClientProtocolVersion || res.Era != Legacy {
		t.Fatalf("got %+v", res)
	}
	// The wrong transport or path is NotMCP, not down.
	if res := SSE(context.Background(), &mcpconfig.Server{Transport: mcpconfig.SSE, URL: base + "/mcp"}, Options{Timeout: 5 * time.Second}); res.Verdict != NotMCP {
		t.Errorf("SSE probe of /mcp: %+v", res)
	}
	if res := HTTP(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: base + "/sse"}, Options{Timeout: 5 * time.Second}); res.Verdict != NotMCP || res.Status != 404 {
		t.Errorf("HTTP probe of /sse: %+v", res)
	}
}

func TestServerEverythingSSE(t *testing.T) {
	t.Parallel()
	base := startServerEverything(t, "sse")
	res := SSE(context.Background(), &mcpconfig.Server{Transport: mcpconfig.SSE, URL: base + "/sse"},
		Options{Timeout: 5 * time.Second, ListTools: true})
	t.Logf("%+v", res)
	if res.Verdict != Healthy || res.Tools <= 0 {
		t.Fatalf("got %+v", res)
	}
}

// A type http URL that is server-everything's legacy SSE endpoint: both
// POSTs get 404, the GET opens the stream, and the probe goes on over SSE
// as Claude Code 2.1.332 does.
func TestServerEverythingSSEBehindTypeHTTP(t *testing.T) {
	t.Parallel()
	base := startServerEverything(t, "sse")
	res := HTTP(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: base + "/sse"},
		Options{Timeout: 5 * time.Second, ListTools: true})
	t.Logf("%+v", res)
	if res.Verdict != Healthy || !res.LegacySSE || res.Tools <= 0 || res.Era != Legacy || res.ProtocolVersion != ClientProtocolVersion {
		t.Fatalf("got %+v", res)
	}
	// A URL that is neither transport stays not-mcp.
	if res := HTTP(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: base + "/nowhere"}, Options{Timeout: 5 * time.Second}); res.Verdict != NotMCP || res.LegacySSE {
		t.Errorf("HTTP probe of /nowhere: %+v", res)
	}
}

// startServerEverything runs server-everything on a free loopback port in
// its own process group, killed at the end of the test, and returns its
// base URL once it accepts connections.
func startServerEverything(t testing.TB, transport string) string {
	t.Helper()
	bin := serverEverythingBin(t)
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, transport)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	var stderr tailBuffer
	stderr.max = 4 << 10
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	proc.Prepare(cmd, 200*time.Millisecond)
	if err := proc.Start(cmd); err != nil {
		t.Fatalf("starting server-everything: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = proc.Wait(cmd)
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(15 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything %s did not listen on %s: %s", transport, addr, stderr.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	url := closedPortURL(t)
	port, err := strconv.Atoi(url[strings.LastIndexByte(url, ':')+1:])
	if err != nil {
		t.Fatal(err)
	}
	return port
}
