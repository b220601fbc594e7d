package supervisor

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/report"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// TestPreflightRefusedTokenIsAnOutage is issue 19's proof that preflight
// judges a server by the health check's rule, through the real CLI on every
// supported version: one MCP server over HTTP accepts one bearer token and
// refuses every other. The batch defines it twice, once with the token it
// accepts (its job runs and is done) and once with a token it refuses. The
// 401 to that second definition's own token is not "reachable": the journal
// has the preflight's unhealthy line with the auth code, its job waits and is
// skipped as down, and the morning report shows the outage.
func TestPreflightRefusedTokenIsAnOutage(t *testing.T) {
	testkit.ForEachClaude(t, testPreflightRefusedTokenIsAnOutage)
}

func testPreflightRefusedTokenIsAnOutage(t *testing.T, version string) {
	f := newNightFixture(t)
	api := httptest.NewServer(mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{
		Modes: mcpserver.Fixed(mcpserver.Mode{RequireHeader: "Authorization", RequireValue: "Bearer accepted-token"}),
	}))
	defer api.Close()
	url := api.URL + mcpserver.StreamablePath

	b := f.load(fmt.Sprintf(`version: 1
name: token
state_dir: ./state
max_parallel: 1
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 0, on_unhealthy: defer, max_defer: 3s}
health: {ttl: 10m, backoff: 1s, max_backoff: 2s, probe_timeout: 3s, prewarm_timeout: 10s}
servers:
  good: {type: http, url: %[2]s, headers: {Authorization: "Bearer accepted-token"}}
  revoked: {type: http, url: %[2]s, headers: {Authorization: "Bearer revoked-token"}}
jobs:
  - {name: uses-good, servers: [good], prompt: %[3]s}
  - {name: uses-revoked, servers: [revoked], prompt: %[4]s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(url),
		jsonString(prompt("uses-good", `mcp__good__echo {"message":"good ran"}`)),
		jsonString(prompt("uses-revoked", `mcp__revoked__echo {"message":"must not run"}`))))

	s := f.run(b)
	byName := map[string]plan.JobResult{}
	for _, j := range s.Jobs {
		byName[j.Name] = j
	}
	if j := byName["uses-good"]; j.Status != StatusDone {
		t.Errorf("uses-good: %s (%s), want done: its token is accepted", j.Status, j.Reason)
	}
	if j := byName["uses-revoked"]; j.Status != StatusSkipped || j.Attempts != 0 {
		t.Errorf("uses-revoked: %s after %d attempts (%s), want skipped without starting", j.Status, j.Attempts, j.Reason)
	}

	var preflightDown, preflightUp int
	for _, ev := range readJournalTypes(t, s.Journal) {
		if ev.Type != journal.ServerState || ev.By != "preflight" {
			continue
		}
		switch {
		case ev.Server == "revoked" && ev.Status == journal.Unhealthy && ev.Code == "auth":
			preflightDown++
		case ev.Server == "revoked":
			t.Errorf("revoked: preflight journaled %s (%s): %s; a 401 to its own token is a failure", ev.Status, ev.Code, ev.Reason)
		case ev.Server == "good" && ev.Status == journal.Healthy:
			preflightUp++
		}
	}
	if preflightDown != 1 {
		t.Errorf("revoked: %d unhealthy auth lines by the preflight, want 1", preflightDown)
	}
	if preflightUp != 1 {
		t.Errorf("good: %d healthy lines by the preflight, want 1", preflightUp)
	}

	night, err := report.Build(s.Journal, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range night.Servers {
		switch srv.Name {
		case "revoked":
			if len(srv.Outages) != 1 || !strings.HasPrefix(srv.Outages[0].Reason, "auth") || srv.Status != "unhealthy" {
				t.Errorf("revoked in the report: %+v, want one auth outage from the preflight, unhealthy at the end", srv)
			}
		case "good":
			if len(srv.Outages) != 0 {
				t.Errorf("good in the report: %+v, want no outage", srv)
			}
		}
	}
	var md bytes.Buffer
	if err := night.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "revoked: down since") {
		t.Errorf("the report does not show revoked's outage:\n%s", md.String())
	}
}
