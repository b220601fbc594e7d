package session

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// Outcome is how one attempt of a job ended.
type Outcome struct {
	Status   string `json:"status"`           // Done or Failed
	Reason   string `json:"reason,omitempty"` // why failed, one line
	ExitCode int    `json:"exit_code"`        // -1: killed by a signal or never started
	// KilledBy is who ended the session early: "timeout", "stall",
	// "stopped" (ctx cancelled by the supervisor), or "" if nobody did.
	KilledBy string `json:"killed_by,omitempty"`

	// From the result event.
	Subtype        string  `json:"subtype,omitempty"`
	IsError        bool    `json:"is_error,omitempty"`
	NumTurns       int     `json:"num_turns,omitempty"`
	CostUSD        float64 `json:"cost_usd,omitempty"`
	DurationMS     int64   `json:"duration_ms,omitempty"`
	SessionID      string  `json:"session_id,omitempty"` // from the result, else from init
	TerminalReason string  `json:"terminal_reason,omitempty"`

	ServersFailed    []string `json:"servers_failed,omitempty"` // failed / needs-auth in init
	ToolsUnavailable []string `json:"tools_unavailable,omitempty"`
	// Servers is the init event's list, with each server's source.
	Servers []Server `json:"servers,omitempty"`
	// PermissionDenials are the result event's: calls the session was
	// refused. Recorded, not yet judged.
	PermissionDenials []Denial `json:"permission_denials,omitempty"`
	// PermissionDenied are the system/permission_denied events, in order.
	PermissionDenied []PermissionDenied `json:"permission_denied,omitempty"`

	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
}

// streamState is what the stream said so far.
type streamState struct {
	obs           Observer
	sessionID     string
	result        *ResultEvent
	serversFailed []string
	tools         []string
	servers       []Server
	denied        []PermissionDenied
}

func (s *streamState) line(b []byte) {
	l := ParseLine(b)
	if l.Init {
		if l.SessionID != "" {
			s.sessionID = l.SessionID
		}
		s.servers = l.Servers
		for _, srv := range l.Servers {
			s.obs.ServerStatus(srv.Name, srv.Status)
			if (srv.Status == "failed" || srv.Status == "needs-auth") && !slices.Contains(s.serversFailed, srv.Name) {
				s.serversFailed = append(s.serversFailed, srv.Name)
			}
		}
	}
	for _, tool := range l.ToolsUnavailable {
		s.obs.ToolUnavailable(tool)
		if !slices.Contains(s.tools, tool) {
			s.tools = append(s.tools, tool)
		}
	}
	if l.PermissionDenied != nil {
		s.denied = append(s.denied, *l.PermissionDenied)
	}
	if l.Result != nil {
		s.result = l.Result // the last one counts
	}
}

func (s *streamState) fill(out *Outcome) {
	out.SessionID = s.sessionID
	out.ServersFailed = s.serversFailed
	out.ToolsUnavailable = s.tools
	out.Servers, out.PermissionDenied = s.servers, s.denied
	if r := s.result; r != nil {
		out.PermissionDenials = r.PermissionDenials
		out.Subtype, out.IsError, out.NumTurns = r.Subtype, r.IsError, r.NumTurns
		out.CostUSD, out.DurationMS, out.TerminalReason = r.TotalCostUSD, r.DurationMS, r.TerminalReason
		if r.SessionID != "" {
			out.SessionID = r.SessionID
		}
	}
}

// judge decides done or failed. The exit code alone is not enough
// (SIGINT exits 0 with error_during_execution; an API error is a
// "success" subtype with is_error), and neither is the result: after
// SIGTERM Claude Code still prints a success result, and a session
// nightwatch stopped is never done.
func judge(out *Outcome, r *ResultEvent, job *jobs.Job, waitErr error, stderrLine string) {
	exit := fmt.Sprintf("exit %d", out.ExitCode)
	if out.ExitCode < 0 {
		exit = proc.ExitDescription(waitErr)
	}
	withStderr := func(s string) string {
		if stderrLine != "" {
			s += ": " + stderrLine
		}
		return s
	}
	var reason string
	switch {
	case out.KilledBy == "timeout":
		reason = fmt.Sprintf("killed after %s timeout", shortDuration(job.Timeout))
	case out.KilledBy == "stall":
		reason = fmt.Sprintf("no output for %s (stall)", shortDuration(job.StallTimeout))
	case out.KilledBy != "":
		reason = "stopped by the supervisor"
	case r == nil:
		reason = withStderr(exit + ": no result event")
	case r.IsError && r.APIErrorStatus != 0:
		reason = fmt.Sprintf("api error %d: %s", r.APIErrorStatus, r.Result)
	case r.Subtype != "success":
		reason = exit + ": " + r.Subtype
		if len(r.Errors) > 0 {
			reason += ": " + r.Errors[0]
		} else if r.TerminalReason != "" {
			reason += " (" + r.TerminalReason + ")"
		}
	case r.IsError:
		reason = exit + ": the result is an error: " + r.Result
	case out.ExitCode != 0:
		reason = withStderr(exit + " after a success result")
	}
	if reason == "" {
		out.Status, out.Reason = Done, ""
		return
	}
	out.Status, out.Reason = Failed, text.OneLine(reason, 300)
}

// shortDuration prints 45m rather than 45m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// lastLine is the last non-empty line of the file's last 4 KiB: the CLI's
// own error ("Error: Invalid MCP configuration: …") when it exits early.
func lastLine(path string) string {
	fh, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer fh.Close()
	const tail = 4 << 10
	if fi, err := fh.Stat(); err == nil && fi.Size() > tail {
		_, _ = fh.Seek(-tail, io.SeekEnd)
	}
	data, _ := io.ReadAll(io.LimitReader(fh, tail))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return text.OneLine(lines[len(lines)-1], 200)
}
