// Package operator holds what the operator commands compute (status rows,
// probe tables, resets), so that the commands only print and tests call
// the same code directly.
package operator

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// StatusRow is one server in `nightwatch status`.
type StatusRow struct {
	Server       string                 `json:"server"`
	Status       string                 `json:"status"`
	Failures     int                    `json:"failures"`
	NextRetry    time.Time              `json:"nextRetry,omitzero"`
	Expires      time.Time              `json:"expires,omitzero"`
	LastError    string                 `json:"lastError,omitempty"`
	Code         string                 `json:"lastFailureCode,omitempty"`
	Source       string                 `json:"source,omitempty"`
	Shadowed     []mcpconfig.Definition `json:"shadowed,omitempty"`
	CheckedAt    time.Time              `json:"checkedAt,omitzero"`
	Age          string                 `json:"age,omitempty"`
	Stuck        bool                   `json:"stuck,omitempty"`
	Gate         string                 `json:"gate"`
	InCache      bool                   `json:"inCache"`
	Configured   bool                   `json:"configured"`
	RestoredBy   string                 `json:"restoredBy,omitempty"`
	LastRestored time.Time              `json:"lastRestored,omitzero"`
	// Consecutive is the count of upstream failures in a row, toward the
	// failure threshold.
	Consecutive int `json:"consecutiveFailures,omitempty"`
	// PassiveOnly: nightwatch has no definition of the server (a session's
	// --mcp-config, a plugin, a claude.ai connector), so it cannot probe
	// it; real calls are its only witness.
	PassiveOnly bool `json:"passiveOnly,omitempty"`
}

// PassiveOnlyNote is how status names a server without a definition.
const PassiveOnlyNote = "passive only (no definition found)"

// Status lists every server in the cache and every configured one.
func Status(f *healthcheck.File, r *mcpconfig.Resolved, s healthcheck.Settings, now time.Time) []StatusRow {
	names := map[string]bool{}
	for n := range f.Servers {
		names[n] = true
	}
	if r != nil {
		for _, n := range r.Names {
			names[n] = true
		}
	}
	rows := make([]StatusRow, 0, len(names))
	for n := range names {
		row := StatusRow{Server: n, Status: "unknown", Gate: healthcheck.GateProbe.String()}
		if e := f.Entry(n); e != nil {
			// What the hook decides by: the entry clamped to the settings.
			*e = s.Clamp(*e, now)
			row.InCache = true
			row.Status = string(e.Status)
			row.Failures = e.FailureCount
			row.LastError = e.LastError
			row.Code = string(e.LastFailureCode)
			row.Consecutive = e.ConsecutiveFailures
			row.Source = e.Source
			row.CheckedAt = e.CheckedAt.Time()
			row.Stuck = s.Stuck(e)
			row.Gate = healthcheck.GateOf(e, now).String()
			row.RestoredBy = e.RestoredBy
			row.LastRestored = e.LastRestoredAt.Time()
			if e.Status == healthcheck.StatusUnhealthy {
				row.NextRetry = e.NextRetryAt.Time()
			} else {
				row.Expires = e.ExpiresAt.Time()
			}
			if !row.CheckedAt.IsZero() {
				row.Age = now.Sub(row.CheckedAt).Round(time.Second).String()
			}
		}
		if r != nil {
			if srv := r.Servers[n]; srv != nil {
				row.Configured = true
				if row.Source == "" {
					row.Source = srv.Source
				}
			}
			row.Shadowed = r.Shadowed[n]
		}
		row.PassiveOnly = row.InCache && !row.Configured && row.Source == ""
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Server < rows[j].Server })
	return rows
}

// PrintStatus writes rows as a table.
func PrintStatus(w io.Writer, rows []StatusRow, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATUS\tFAILURES\tNEXT RETRY\tAGE\tLAST ERROR\tSOURCE\tSHADOWS")
	for _, r := range rows {
		status := r.Status
		if r.Stuck {
			status += " (stuck)"
		}
		next := "-"
		if !r.NextRetry.IsZero() {
			if r.NextRetry.After(now) {
				next = "in " + r.NextRetry.Sub(now).Round(time.Second).String()
			} else {
				next = "due"
			}
		}
		age := r.Age
		if age == "" {
			age = "-"
		}
		var shadows []string
		for _, d := range r.Shadowed {
			shadows = append(shadows, d.Source)
		}
		source := dash(r.Source)
		if r.PassiveOnly {
			source = PassiveOnlyNote
		}
		failures := fmt.Sprint(r.Failures)
		if r.Consecutive > 0 {
			failures += fmt.Sprintf(" (%d in a row)", r.Consecutive)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Server, status, failures, next, age,
			dash(text.OneLine(r.LastError, 60)), source, dash(strings.Join(shadows, ", ")))
	}
	_ = tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
