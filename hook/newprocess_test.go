package hook

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
)

// TestProbedBackAsNewProcess: a call to an HTTP server that is down but
// whose backoff has run out is not held: its own probe finds the server
// back. When the outage saw its address refuse connections, the model is
// told it is back as a new process and the events file gets
// server-restarted (by the probe, Since the first refusal); when it did
// not (a 503, a reset), nothing is said.
func TestProbedBackAsNewProcess(t *testing.T) {
	srv := httptest.NewServer(mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(srv.Close)
	refusedAt := healthcheck.MillisOf(now.Add(-55 * time.Second))
	for _, tt := range []struct {
		name    string
		refused healthcheck.Millis
		want    string
	}{
		{"refused during the outage", refusedAt,
			`MCP server "web" was down and is back as a new process (HTTP: its address refused connections during the outage (seen by Claude Code's call), then a probe's handshake answered). Ids, handles and sessions it returned before are gone`},
		{"no refusal seen", 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "mcp.json")
			writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{
				"web": map[string]any{"type": "http", "url": srv.URL + mcpserver.StreamablePath}}})
			state := filepath.Join(dir, "cache.json")
			events := filepath.Join(dir, "events.jsonl")
			e := &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, LastFailureCode: healthcheck.CodeTransport,
				LastError: "ECONNREFUSED: Unable to connect. Is the computer able to access the url?", FailureCount: 1,
				UnhealthySince: healthcheck.MillisOf(now.Add(-time.Minute)), CheckedAt: healthcheck.MillisOf(now.Add(-50 * time.Second)),
				NextRetryAt: healthcheck.MillisOf(now.Add(-time.Second)), Witness: healthcheck.WitnessProbe, Transport: "http"}
			if tt.refused != 0 {
				e.RefusedAt, e.RefusedBy = tt.refused, healthcheck.ByCallFailure
			}
			seed(t, state, map[string]*healthcheck.Entry{"web": e})
			env := map[string]string{"HOME": dir, "NIGHTWATCH_STATE_PATH": state, "NIGHTWATCH_MCP_CONFIG": cfg, "NIGHTWATCH_EVENTS": events}
			in := strings.Replace(payload("PreToolUse", "mcp__web__echo", `,"tool_use_id":"toolu_1"`), "/nonexistent/project", dir, 1)
			r := invoke(t, in, env)
			if r.code != 0 {
				t.Fatalf("want the call allowed, got %+v", r)
			}
			var out struct {
				HookSpecificOutput struct{ AdditionalContext string } `json:"hookSpecificOutput"`
			}
			if r.stdout != "" {
				if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
					t.Fatalf("stdout %q: %v", r.stdout, err)
				}
			}
			if got := out.HookSpecificOutput.AdditionalContext; tt.want == "" && r.stdout != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("stdout %q, want the context %q", r.stdout, tt.want)
			}
			if strings.Contains(r.stdout, "permissionDecision") {
				t.Errorf("a permission decision was given: %q", r.stdout)
			}
			tail := healthcheck.EventTail{Path: events}
			var restarts []healthcheck.Event
			for _, ev := range tail.Next() {
				if ev.Kind == healthcheck.EventServerRestarted {
					restarts = append(restarts, ev)
				}
			}
			switch {
			case tt.want == "" && len(restarts) != 0:
				t.Errorf("server-restarted without a refusal: %+v", restarts)
			case tt.want != "" && (len(restarts) != 1 || restarts[0].By != healthcheck.ByProbe || !restarts[0].Since.Equal(refusedAt.Time()) ||
				restarts[0].Server != "web" || restarts[0].Session != "s1"):
				t.Errorf("server-restarted events %+v", restarts)
			}
		})
	}
}
