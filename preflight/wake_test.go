package preflight

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// Regression (issue 8): preflight's wake-up was a second HTTP client that
// followed any redirect with the config's headers, so a configured
// X-Api-Key reached whatever host the server redirected to. It is now
// probe.Wake, with the probers' redirect rule: nothing reaches the other
// host.
func TestPreflightWakeKeepsCredentialsHome(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range []string{"X-Api-Key", "Authorization"} {
			if v := r.Header.Get(h); v != "" {
				leaked = append(leaked, r.Method+" "+h)
			}
		}
		http.Error(w, "nothing here", http.StatusServiceUnavailable)
	}))
	defer elsewhere.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()

	srv := &jobs.Server{Name: "moved", MCP: mcpconfig.Server{Name: "moved", Transport: mcpconfig.HTTP,
		URL:     redirecting.URL + "/mcp",
		Headers: map[string]string{"X-Api-Key": "key-must-stay-home", "Authorization": "Bearer tok-home"}}}
	b := preflightTestBatch(t, t.TempDir(), srv)
	rep := Run(context.Background(), b, preflightTestOptions(t, nil))
	if len(rep.Rows) != 1 || rep.Rows[0].Verdict != probe.NotMCP {
		t.Fatalf("rows %+v, want the redirect judged not-mcp", rep.Rows)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Errorf("configured credentials reached the redirect target: %v", leaked)
	}
}

// A stdio server that needs 8 s to answer its handshake is usable in a
// session (Claude Code waits MCP_TIMEOUT, 30 s by default), so preflight
// must not call it down, even with a pre-warm timeout shorter than that.
func TestPreflightSlowStdioServer(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 8 s")
	}
	bin := testkit.BuildTestServer(t)
	cwd := t.TempDir()
	b := preflightTestBatch(t, cwd, preflightTestStdio(bin, "slow", "slow-handshake=8s"))
	b.Health.PrewarmTimeout = 2 * time.Second
	store := &healthcheck.Store{Path: filepath.Join(b.StateDir, "cache.json")}
	rep := Run(context.Background(), b, preflightTestOptions(t, store))
	if len(rep.Rows) != 1 || rep.Rows[0].Verdict != probe.Healthy || !rep.Rows[0].Prewarmed || !rep.Healthy {
		t.Fatalf("rows %+v, want the slow server healthy", rep.Rows)
	}
	if lat := rep.Rows[0].Latency; lat < 8*time.Second {
		t.Errorf("latency %s: the server did not take its 8 s", lat)
	}
}

func TestMCPStartupTimeout(t *testing.T) {
	tests := []struct {
		batch, env string
		want       time.Duration
	}{
		{"", "", 30 * time.Second},
		{"5000", "", 5 * time.Second},
		{"", "45000", 45 * time.Second},
		{"5000", "45000", 5 * time.Second}, // the batch's env is the session's
		{"soon", "", 30 * time.Second},
	}
	for _, tt := range tests {
		b := &jobs.Batch{Env: map[string]string{}}
		if tt.batch != "" {
			b.Env["MCP_TIMEOUT"] = tt.batch
		}
		getenv := func(name string) (string, bool) {
			if name == "MCP_TIMEOUT" && tt.env != "" {
				return tt.env, true
			}
			return "", false
		}
		if got := mcpStartupTimeout(b, getenv); got != tt.want {
			t.Errorf("batch %q env %q: %s, want %s", tt.batch, tt.env, got, tt.want)
		}
	}
}
