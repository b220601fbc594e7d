package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/modelapi"
)

// Outcome is how one attempt of a job ended.
type Outcome struct {
	Status   string `json:"status"`           // Done or Failed
	Reason   string `json:"reason,omitempty"` // why failed, one line
	ExitCode int    `json:"exit_code"`        // -1: killed by a signal or never started
	// KilledBy is who ended the session early; "" if nobody did.
	KilledBy Killer `json:"killed_by,omitempty"`

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
	// Denied are the tools of the job's own servers that a permission
	// rule refused (not nightwatch's hook), once each, in order.
	Denied []string `json:"denied,omitempty"`
	// Unusable are the job's servers the session could not use.
	Unusable []Unusable `json:"unusable,omitempty"`
	// Verify is the job's check of its work, when it ran.
	Verify *VerifyResult `json:"verify,omitempty"`
	// API is why the session failed when the model's API or the CLI's
	// limits were the cause (modelapi.Classify); nil otherwise.
	API *modelapi.Failure `json:"api,omitempty"`
	// ResumedFrom is the Claude session the attempt resumed (--resume);
	// ResumeFailed, when set, is why it could not, and the attempt ran a
	// fresh session instead.
	ResumedFrom  string `json:"resumed_from,omitempty"`
	ResumeFailed string `json:"resume_failed,omitempty"`

	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
}

// Unusable is a server of the job the session could not use, and why
// ("failed at start", "needs-auth at start", "not connected", "its tools
// were missing: mcp__x__y").
type Unusable struct {
	Server string `json:"server"`
	Why    string `json:"why"`
}

// Abandon is the cause the supervisor cancels a session's context with
// when the attempt cannot do its work (a server it needs is unusable):
// the session ends KilledAbandoned, with Reason as its reason.
type Abandon struct{ Reason string }

func (a Abandon) Error() string { return a.Reason }

// streamState is what the stream said so far.
type streamState struct {
	obs           Observer
	job           *jobs.Job
	sessionID     string
	result        *ResultEvent
	serversFailed []string
	tools         []string
	servers       []Server
	denied        []PermissionDenied
	notGranted    []string
	unusable      []Unusable
	// rawResult is the result line as parsed JSON, and rateLimits the
	// rate_limit_event lines: what modelapi.Classify reads.
	rawResult  map[string]any
	rateLimits []map[string]any
}

// own says whether tool belongs to one of the job's servers.
func (s *streamState) own(tool string) (server string, ok bool) {
	server = jobs.ToolServer(tool)
	return server, server != "" && s.job != nil && slices.Contains(s.job.Servers, server)
}

// initStatus is the status init gave server; "" when init did not list it.
func (s *streamState) initStatus(server string) ServerStatus {
	for _, srv := range s.servers {
		if srv.Name == server {
			return srv.Status
		}
	}
	return ""
}

// markUnusable records, once per server, that the session cannot use a
// server of its job, and tells the observer.
func (s *streamState) markUnusable(server, why string) {
	if s.job == nil || !slices.Contains(s.job.Servers, server) {
		return
	}
	for _, u := range s.unusable {
		if u.Server == server {
			return
		}
	}
	s.unusable = append(s.unusable, Unusable{Server: server, Why: why})
	s.obs.Observe(Observation{Kind: SawUnusable, Server: server, Why: why})
}

func (s *streamState) line(b []byte) {
	l := ParseLine(b)
	if l.Init {
		if l.SessionID != "" {
			s.sessionID = l.SessionID
		}
		s.servers = l.Servers
		for _, srv := range l.Servers {
			if srv.Status.Unusable() {
				s.obs.Observe(Observation{Kind: SawServer, Server: srv.Name, Status: srv.Status})
			}
			if (srv.Status == ServerFailed || srv.Status == ServerNeedsAuth) && !slices.Contains(s.serversFailed, srv.Name) {
				s.serversFailed = append(s.serversFailed, srv.Name)
				s.markUnusable(srv.Name, string(srv.Status)+" at start")
			}
		}
	}
	for _, tool := range l.ToolsUnavailable {
		s.obs.Observe(Observation{Kind: SawMissingTool, Tool: tool})
		if !slices.Contains(s.tools, tool) {
			s.tools = append(s.tools, tool)
		}
		// A missing tool of a server that connected is the model's
		// mistake (no such tool on it); of a server that did not connect,
		// or that init did not list, the server is what is missing.
		if server, ok := s.own(tool); ok && s.initStatus(server) != ServerConnected {
			s.markUnusable(server, "its tools were missing: "+tool)
		}
	}
	for _, server := range l.NotConnected {
		s.obs.Observe(Observation{Kind: SawServer, Server: server, Status: ServerNotConnected})
		s.markUnusable(server, "not connected")
	}
	for _, tool := range l.ToolsNotGranted {
		if !slices.Contains(s.notGranted, tool) {
			s.notGranted = append(s.notGranted, tool)
		}
	}
	if l.PermissionDenied != nil {
		s.denied = append(s.denied, *l.PermissionDenied)
	}
	if l.Result != nil {
		s.result = l.Result // the last one counts
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			s.rawResult = m
		}
	}
	if bytes.Contains(b, []byte("rate_limit_event")) && len(s.rateLimits) < maxRateLimitEvents {
		var m map[string]any
		if json.Unmarshal(b, &m) == nil && m["type"] == "rate_limit_event" {
			s.rateLimits = append(s.rateLimits, m)
		}
	}
}

// maxRateLimitEvents bounds the rate_limit_event lines kept of a session.
const maxRateLimitEvents = 64

// classify sets out.API from the stream, for a failed session that no
// one killed: a kill is the night's own ending, not the API's.
func (s *streamState) classify(out *Outcome, now time.Time) {
	if out.Status == Done || s.rawResult == nil {
		return
	}
	if out.KilledBy != "" {
		return
	}
	if f := modelapi.Classify(s.rawResult, s.rateLimits, now, nil); f.Class != modelapi.NoFailure {
		out.API = &f
	}
}

func (s *streamState) fill(out *Outcome) {
	out.SessionID = s.sessionID
	out.ServersFailed = s.serversFailed
	out.ToolsUnavailable = s.tools
	out.Servers, out.PermissionDenied = s.servers, s.denied
	out.Unusable = s.unusable
	// A denial by a permission rule: the CLI's "not granted" text (both
	// versions), or 2.1.332's permission_denied event unless a hook's ask
	// caused it. A call nightwatch's hook blocked is neither: its server
	// was down, which the health layer, not this, answers for.
	seen := map[string]bool{}
	deny := func(tool string) {
		if _, ok := s.own(tool); ok && !seen[tool] {
			seen[tool] = true
			out.Denied = append(out.Denied, tool)
		}
	}
	for _, tool := range s.notGranted {
		deny(tool)
	}
	for _, d := range s.denied {
		if d.DecisionReasonType != "hook" {
			deny(d.ToolName)
		}
	}
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
	case out.KilledBy == KilledTimeout:
		reason = fmt.Sprintf("killed after %s timeout", shortDuration(job.Timeout))
	case out.KilledBy == KilledStall:
		reason = fmt.Sprintf("no output for %s (stall)", shortDuration(job.StallTimeout))
	case out.KilledBy == KilledAbandoned:
		reason = "stopped early: " + out.Reason
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
	if reason == "" && len(out.Denied) > 0 {
		reason = "permission denied: " + strings.Join(out.Denied, ", ") + " (not allowed for this job)"
	}
	if reason == "" && len(out.Unusable) > 0 && job.OnUnhealthy != jobs.Run {
		reason = unusableReason(out.Unusable)
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
	fh, err := atomicfile.OpenRegular(path)
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

// unusableReason words the servers a session could not use.
func unusableReason(us []Unusable) string {
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = fmt.Sprintf("server %s could not be used (%s)", u.Server, u.Why)
	}
	return strings.Join(parts, "; ")
}
