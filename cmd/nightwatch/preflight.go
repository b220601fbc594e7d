package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/internal/agentlogin"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/operator"
	"github.com/nightwatch-dev/nightwatch/preflight"
)

// printPreflight writes the report as the probe command's table, then the
// warnings and, when some server is down, their names.
func printPreflight(w io.Writer, r preflight.Report) {
	rows := make([]operator.ProbeRow, len(r.Rows))
	var down []string
	for i, row := range r.Rows {
		rows[i] = operator.ProbeRow{Server: row.Server, Transport: mcpconfig.Transport(row.Transport),
			Result: probe.Result{Verdict: row.Verdict, Latency: row.Latency, Tools: row.Tools, Reason: row.Reason}}
		if !row.Usable {
			down = append(down, row.Server)
		}
	}
	var buf bytes.Buffer
	if len(rows) > 0 {
		operator.PrintProbe(&buf, rows)
	} else {
		buf.WriteString("no job needs an MCP server\n")
	}
	for _, j := range r.Jobs {
		allowed := strings.Join(j.Allowed, ", ")
		if allowed == "" {
			allowed = "no tool rule"
		}
		fmt.Fprintf(&buf, "job %s: the session is allowed %s (from %s)\n", j.Job, allowed, j.From)
	}
	if l := r.Login; l != nil {
		if l.Level == string(agentlogin.OK) {
			fmt.Fprintf(&buf, "agent login: %s\n", l.Detail)
		} else {
			fmt.Fprintf(&buf, "agent login (%s): %s\n  fix: %s\n", l.Level, l.Detail, strings.ReplaceAll(l.Fix, "\n", "\n  "))
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(&buf, "warning: %s\n", warn)
	}
	if len(down) > 0 {
		fmt.Fprintf(&buf, "unhealthy: %s\n", strings.Join(down, ", "))
	}
	_, _ = w.Write(buf.Bytes())
}
