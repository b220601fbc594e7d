package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/preflight"
)

// The preflight command's table: the probe command's rows, what each job's
// session is allowed, the login, the warnings and the servers down.
func TestPrintPreflight(t *testing.T) {
	rep := preflight.Report{
		Rows: []preflight.Row{
			{Server: "notes", Transport: "stdio", Verdict: probe.Healthy, Latency: 12 * time.Millisecond, Tools: 3, Reason: "answered", Usable: true},
			{Server: "api", Transport: "http", Verdict: probe.AuthRequired, Tools: -1, Reason: "HTTP 401 Unauthorized", Usable: false},
		},
		Warnings: []string{"fail-open is on (fail_open in the batch): the hook lets calls to unhealthy servers through; for debugging only"},
		Jobs: []preflight.Job{{Job: "use-notes", Allowed: []string{"mcp__notes"}, From: "its servers"},
			{Job: "bare", From: "its allowed_tools"}},
		Login: &preflight.Login{Level: "warn", Detail: "cannot ask claude", Fix: "run it\nby hand"},
	}
	var out bytes.Buffer
	printPreflight(&out, rep)
	for _, want := range []string{"SERVER", "TRANSPORT", "VERDICT", "LATENCY", "TOOLS", "REASON", "notes", "api",
		"job use-notes: the session is allowed mcp__notes (from its servers)\n",
		"job bare: the session is allowed no tool rule (from its allowed_tools)\n",
		"agent login (warn): cannot ask claude\n  fix: run it\n  by hand\n",
		"warning: fail-open is on (fail_open in the batch)",
		"unhealthy: api\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	printPreflight(&out, preflight.Report{Healthy: true, Login: &preflight.Login{Level: "ok", Detail: "logged in"}})
	if got := out.String(); got != "no job needs an MCP server\nagent login: logged in\n" {
		t.Errorf("an empty preflight prints %q", got)
	}
}
