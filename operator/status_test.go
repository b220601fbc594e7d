package operator

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// TestStatusNamesPassiveOnlyServers: a server in the cache that no config
// defines (a session's --mcp-config) is shown as watched by its calls only.
func TestStatusNamesPassiveOnlyServers(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	f := &healthcheck.File{Servers: map[string]*healthcheck.Entry{
		"dyn":   {Status: healthcheck.StatusUnhealthy, FailureCount: 1, NextRetryAt: healthcheck.MillisOf(now.Add(time.Minute)), Witness: healthcheck.WitnessCalls},
		"notes": {Status: healthcheck.StatusHealthy, ExpiresAt: healthcheck.MillisOf(now.Add(time.Minute)), ConsecutiveFailures: 2},
	}}
	r := &mcpconfig.Resolved{Servers: map[string]*mcpconfig.Server{"notes": {Name: "notes", Source: "/p/.mcp.json"}}, Names: []string{"notes"}}
	rows := Status(f, r, healthcheck.DefaultSettings(), now)
	if len(rows) != 2 || !rows[0].PassiveOnly || rows[1].PassiveOnly || rows[1].Consecutive != 2 {
		t.Fatalf("%+v", rows)
	}
	var out bytes.Buffer
	PrintStatus(&out, rows, now)
	if !strings.Contains(out.String(), PassiveOnlyNote) || !strings.Contains(out.String(), "0 (2 in a row)") {
		t.Errorf("table:\n%s", out.String())
	}
}

// status shows what the hook decides by: an entry "healthy until 9999"
// is shown expiring one TTL after its check. Before: until 9999.
func TestStatusShowsTheClampedEntry(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	f := &healthcheck.File{Servers: map[string]*healthcheck.Entry{"a": {Status: healthcheck.StatusHealthy,
		CheckedAt: healthcheck.MillisOf(now), ExpiresAt: healthcheck.MillisOf(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))}}}
	rows := Status(f, nil, healthcheck.DefaultSettings(), now)
	if len(rows) != 1 || !rows[0].Expires.Equal(now.Add(2*time.Minute)) {
		t.Errorf("rows %+v", rows)
	}
}
