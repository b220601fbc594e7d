package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// BenchmarkProbeVsHandshake measures what a cache miss costs the hook (a
// whole Probe: spawn or connect, initialize, teardown) against the server's
// own handshake time, taken as go-sdk's client Connect (spawn or connect,
// server/discover, then initialize and initialized for a legacy server)
// with its default protocol, 2026-07-28, as Claude Code 2.1.332 connects
// and as the probe does. Both run in the same loop; overhead-ms is the
// difference.
//
//	go test -run '^$' -bench ProbeVsHandshake -benchtime 20x ./healthcheck/probe/
func BenchmarkProbeVsHandshake(b *testing.B) {
	goServer := testkit.BuildTestServer(b)
	everything := serverEverythingBin(b)
	goHTTP := httptest.NewServer(mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{}))
	b.Cleanup(goHTTP.Close)
	everythingHTTP := startServerEverything(b, "streamableHttp")

	cases := []struct {
		name string
		srv  *mcpconfig.Server
	}{
		{"stdio-go", &mcpconfig.Server{Name: "go", Transport: mcpconfig.Stdio, Command: goServer}},
		{"stdio-everything", &mcpconfig.Server{Name: "everything", Transport: mcpconfig.Stdio, Command: everything, Args: []string{"stdio"}}},
		{"http-go", &mcpconfig.Server{Name: "go", Transport: mcpconfig.HTTP, URL: goHTTP.URL + mcpserver.StreamablePath}},
		{"http-everything", &mcpconfig.Server{Name: "everything", Transport: mcpconfig.HTTP, URL: everythingHTTP + "/mcp"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var probeTime, sdkTime time.Duration
			for b.Loop() {
				start := time.Now()
				res := Probe(context.Background(), c.srv, Options{Timeout: 10 * time.Second})
				probeTime += time.Since(start)
				if res.Verdict != Healthy {
					b.Fatalf("probe: %+v", res)
				}
				sdkTime += sdkHandshake(b, c.srv)
			}
			n := float64(b.N)
			b.ReportMetric(float64(probeTime.Microseconds())/n/1000, "probe-ms")
			b.ReportMetric(float64(sdkTime.Microseconds())/n/1000, "handshake-ms")
			b.ReportMetric(float64((probeTime-sdkTime).Microseconds())/n/1000, "overhead-ms")
		})
	}
}

// sdkHandshake times go-sdk's Connect; its teardown is not counted.
func sdkHandshake(b *testing.B, srv *mcpconfig.Server) time.Duration {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
	var transport mcp.Transport
	if srv.Transport == mcpconfig.Stdio {
		transport = &mcp.CommandTransport{Command: exec.Command(srv.Command, srv.Args...), TerminateDuration: 50 * time.Millisecond}
	} else {
		transport = &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: http.DefaultClient, MaxRetries: -1, DisableStandaloneSSE: true}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	cs, err := client.Connect(ctx, transport, nil)
	d := time.Since(start)
	if err != nil {
		b.Fatalf("go-sdk connect %s: %v", srv.Name, err)
	}
	_ = cs.Close()
	return d
}
