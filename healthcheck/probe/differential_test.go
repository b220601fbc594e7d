package probe

import (
	"context"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// TestDifferentialGoSDK runs the go-sdk v1.8.0 client (Connect with its
// default, 2026-07-28: server/discover first, like Claude Code 2.1.332) and
// the probe against the same servers and asserts they agree on healthy or
// not. Where they differ on purpose, the case says so and why: the probe
// follows Claude Code, which is more lenient than the go-sdk client.
func TestDifferentialGoSDK(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	everything := serverEverythingBin(t)
	everythingHTTP := startServerEverything(t, "streamableHttp")
	everythingSSE := startServerEverything(t, "sse")
	stdio := func(mode string) *mcpconfig.Server {
		return &mcpconfig.Server{Name: mode, Transport: mcpconfig.Stdio, Command: bin, Args: []string{"--mode", mode}}
	}
	streamable := func(t *testing.T, mode string, opts mcpserver.HTTPOptions) *mcpconfig.Server {
		fs := newFaultServer(t, mode, opts)
		return &mcpconfig.Server{Name: mode, Transport: mcpconfig.HTTP, URL: fs.URL + mcpserver.StreamablePath}
	}
	tests := []struct {
		name string
		srv  func(t *testing.T) *mcpconfig.Server
		// healthy is what both must say, unless exception is set: then
		// the probe says healthy and the go-sdk client does not.
		healthy   bool
		exception string
	}{
		{name: "go-sdk stdio (modern)", healthy: true, srv: func(*testing.T) *mcpconfig.Server { return stdio("healthy") }},
		{name: "go-sdk stdio refusing discover (legacy)", healthy: true, srv: func(*testing.T) *mcpconfig.Server { return stdio("legacy") }},
		{name: "go-sdk stateful HTTP (legacy)", healthy: true,
			srv: func(t *testing.T) *mcpconfig.Server { return streamable(t, "healthy", mcpserver.HTTPOptions{}) }},
		{name: "go-sdk stateless HTTP (modern)", healthy: true,
			srv: func(t *testing.T) *mcpconfig.Server {
				return streamable(t, "healthy", mcpserver.HTTPOptions{Stateless: true})
			}},
		{name: "go-sdk HTTP answering JSON", healthy: true,
			srv: func(t *testing.T) *mcpconfig.Server {
				return streamable(t, "healthy", mcpserver.HTTPOptions{JSONResponse: true})
			}},
		{name: "server-everything stdio", healthy: true, srv: func(*testing.T) *mcpconfig.Server {
			return &mcpconfig.Server{Name: "everything", Transport: mcpconfig.Stdio, Command: everything, Args: []string{"stdio"}}
		}},
		{name: "server-everything streamableHttp", healthy: true, srv: func(*testing.T) *mcpconfig.Server {
			return &mcpconfig.Server{Name: "everything", Transport: mcpconfig.HTTP, URL: everythingHTTP + "/mcp"}
		}},
		{name: "crash at start", srv: func(*testing.T) *mcpconfig.Server { return stdio("exit-at-start") }},
		{name: "crash in the handshake", srv: func(*testing.T) *mcpconfig.Server { return stdio("exit-during-handshake") }},
		{name: "hang", srv: func(*testing.T) *mcpconfig.Server { return stdio("never-answer") }},
		{name: "HTTP hang", srv: func(t *testing.T) *mcpconfig.Server { return streamable(t, "hang", mcpserver.HTTPOptions{}) }},
		{name: "HTTP 503", srv: func(t *testing.T) *mcpconfig.Server { return streamable(t, "503", mcpserver.HTTPOptions{}) }},
		// The probe's verdict is auth-required (reachable, not healthy).
		{name: "HTTP 401", srv: func(t *testing.T) *mcpconfig.Server { return streamable(t, "401", mcpserver.HTTPOptions{}) }},
		{name: "HTTP html page", srv: func(t *testing.T) *mcpconfig.Server { return streamable(t, "html", mcpserver.HTTPOptions{}) }},
		{name: "nothing listening", srv: func(t *testing.T) *mcpconfig.Server {
			return &mcpconfig.Server{Name: "refused", Transport: mcpconfig.HTTP, URL: closedPortURL(t) + "/mcp"}
		}},

		// Intended differences: the probe judges as Claude Code does.
		{name: "garbage on stdout", srv: func(*testing.T) *mcpconfig.Server { return stdio("noisy-stdout") },
			exception: "Claude Code skips a non-JSON stdout line; the go-sdk client ends its session on it"},
		{name: "ignores server/discover", srv: func(*testing.T) *mcpconfig.Server { return stdio("ignore-discover") },
			exception: "Claude Code falls back to initialize after ~2.9 s of silence (the probe after its bounded wait); the go-sdk client waits for discover until its context ends"},
		{name: "dies on server/discover", srv: func(*testing.T) *mcpconfig.Server { return stdio("die-on-discover") },
			exception: "Claude Code respawns a server that exits on discover and initializes it; the go-sdk client has no respawn"},
		{name: "legacy SSE endpoint behind type http", srv: func(*testing.T) *mcpconfig.Server {
			return &mcpconfig.Server{Name: "everything-sse", Transport: mcpconfig.HTTP, URL: everythingSSE + "/sse"}
		}, exception: "Claude Code 2.1.332 falls back from type http to the legacy SSE transport; the go-sdk Streamable client does not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A server that fails fails at any bound; one that works must
			// not be failed by a busy machine's slow start (a node server
			// can take seconds to boot under load), so its bound is wide.
			// In an intended difference the probe must come out healthy
			// (after a respawn or a fallback), so it gets the wide bound;
			// the go-sdk client must fail, and waits out its own.
			probeTimeout, sdkTimeout := 3*time.Second, 3*time.Second
			switch {
			case tt.exception != "":
				probeTimeout, sdkTimeout = 30*time.Second, 10*time.Second
			case tt.healthy:
				probeTimeout, sdkTimeout = 30*time.Second, 30*time.Second
			}
			srv := tt.srv(t)
			// At once: each spawns its own process or opens its own session.
			sdkDone := make(chan error, 1)
			go func() { sdkDone <- sdkConnect(srv, sdkTimeout) }()
			res := Probe(context.Background(), srv, Options{Timeout: probeTimeout})
			sdkErr := <-sdkDone
			probeHealthy, sdkHealthy := res.Verdict == Healthy, sdkErr == nil
			t.Logf("probe: %s %q; go-sdk: %v", res.Verdict, res.Reason, sdkErr)
			if tt.exception != "" {
				if !probeHealthy || sdkHealthy {
					t.Errorf("intended difference (%s) did not show: probe healthy=%v, go-sdk healthy=%v", tt.exception, probeHealthy, sdkHealthy)
				}
				return
			}
			if probeHealthy != tt.healthy || sdkHealthy != tt.healthy {
				t.Errorf("want healthy=%v from both: probe %s (%q), go-sdk error %v", tt.healthy, res.Verdict, res.Reason, sdkErr)
			}
		})
	}
}

// sdkConnect connects the go-sdk client with its defaults, as a 2026-07-28
// client, and closes the session (which ends a stdio server; an error from
// that teardown, such as server-everything's SIGTERM, is no verdict).
func sdkConnect(srv *mcpconfig.Server, timeout time.Duration) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "differential", Version: "0"}, nil)
	var transport mcp.Transport
	if srv.Transport == mcpconfig.Stdio {
		transport = &mcp.CommandTransport{Command: exec.Command(srv.Command, srv.Args...), TerminateDuration: 100 * time.Millisecond}
	} else {
		transport = &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{}, MaxRetries: -1, DisableStandaloneSSE: true}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return err
	}
	_ = cs.Close()
	return nil
}
