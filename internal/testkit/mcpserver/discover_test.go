package mcpserver_test

import (
	"context"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
)

// Claude Code 2.1.332 opens every connection with server/discover; a test
// server that sat on it would cost every session ~3 s. The go-sdk client
// with its default protocol (2026-07-28) sends discover first, as Claude
// Code does, so it shows how each mode answers.
func TestDiscover(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	stdio := func(mode string) func(*testing.T) (mcp.Transport, *exec.Cmd) {
		return func(*testing.T) (mcp.Transport, *exec.Cmd) {
			cmd := exec.Command(bin, "--mode", mode)
			return &mcp.CommandTransport{Command: cmd, TerminateDuration: 200 * time.Millisecond}, cmd
		}
	}
	streamable := func(mode string, stateless bool) func(*testing.T) (mcp.Transport, *exec.Cmd) {
		return func(t *testing.T) (mcp.Transport, *exec.Cmd) {
			m, err := mcpserver.ParseMode(mode)
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Modes: mcpserver.Fixed(m), Stateless: stateless}))
			t.Cleanup(ts.Close)
			return &mcp.StreamableClientTransport{Endpoint: ts.URL + mcpserver.StreamablePath, MaxRetries: -1, DisableStandaloneSSE: true}, nil
		}
	}
	tests := []struct {
		name      string
		transport func(*testing.T) (mcp.Transport, *exec.Cmd)
		version   string        // negotiated; "" means Connect must fail
		minTime   time.Duration // the delay the server itself imposes: a lower bound no machine breaks
		exitCode  int
	}{
		{name: "stdio speaks discover", transport: stdio("healthy"), version: "2026-07-28"},
		{name: "stdio legacy refuses discover at once", transport: stdio("legacy"), version: "2025-11-25"},
		{name: "stdio slow handshake", transport: stdio("slow-handshake=300ms"), version: "2026-07-28", minTime: 300 * time.Millisecond},
		{name: "stdio ignores discover", transport: stdio("ignore-discover")},
		{name: "stdio dies on discover", transport: stdio("die-on-discover"), exitCode: 1},
		{name: "stateless HTTP speaks discover", transport: streamable("healthy", true), version: "2026-07-28"},
		{name: "stateful HTTP lists legacy versions", transport: streamable("healthy", false), version: "2025-11-25"},
		{name: "HTTP legacy refuses discover at once", transport: streamable("legacy", true), version: "2025-11-25"},
		{name: "HTTP ignores discover", transport: streamable("ignore-discover", true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			transport, cmd := tt.transport(t)
			// A mode that answers (or dies) ends the handshake by itself: a
			// minute only bounds a hang, so a busy machine's slow start of
			// the server is no failure. A mode that sits on discover never
			// answers it, so any bound ends that handshake in a failure; a
			// short one keeps the test short.
			bound := time.Minute
			if tt.version == "" && tt.exitCode == 0 {
				bound = time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "discover-test", Version: "0"}, nil)
			start := time.Now()
			cs, err := client.Connect(ctx, transport, nil)
			elapsed := time.Since(start)
			if tt.version == "" {
				if err == nil {
					cs.Close()
					t.Fatalf("connected; want the mode to defeat server/discover")
				}
				if cmd != nil && tt.exitCode != 0 {
					_ = cmd.Wait()
					if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != tt.exitCode {
						t.Errorf("process state %v, want exit status %d", cmd.ProcessState, tt.exitCode)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != tt.version {
				t.Errorf("negotiated %q, want %q", got, tt.version)
			}
			if elapsed < tt.minTime {
				t.Errorf("connected in %s, want at least %s", elapsed, tt.minTime)
			}
		})
	}
}
