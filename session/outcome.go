package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
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
	// Budget, when set, is the job's own budget (max_turns, max_cost_usd)
	// that ended the session: the attempt failed, and it is no failure of
	// the API's or the job's work (API is nil).
	Budget *BudgetStop `json:"budget,omitempty"`

	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
}

// Unusable is a server of the job the session could not use, and why
// ("failed at start", "needs-auth at start", "not connected", "its tools
// were missing: mcp__x__y"). Tool is set when a call of the job was lost
// with its server: Tool is the call's tool, Why the CLI's text.
type Unusable struct {
	Server string `json:"server"`
	Why    string `json:"why"`
	Tool   string `json:"tool,omitempty"`
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
	batch         *jobs.Batch // for the transport of a server; nil in unit tests
	sessionID     string
	result        *ResultEvent
	serversFailed []string
	tools         []string
	servers       []Server
	denied        []PermissionDenied
	unusable      []Unusable
	// calls is the attempt's ledger of calls to MCP tools, in the order
	// the model made them; byID indexes it.
	calls []call
	byID  map[string]int
	// meta is 2.1.332's tool_result_meta by call.
	meta map[string]ResultMeta
	// blocked are the calls nightwatch's own hook blocked in this session
	// (from its events file, when the session ended): not a denial by a
	// permission rule.
	blocked map[string]bool
	// refused are the calls it refused as repeats of a side effect an
	// earlier attempt made: done before, neither denied nor lost.
	refused map[string]bool
	// serverAnswered are the calls whose failure the stdio server itself
	// answered (exec-server's call-answered events of this attempt): its
	// own answer, not a call lost with it, whatever the text says.
	serverAnswered map[string]bool
	// answers, when set, is where those events are read while the stream
	// runs (answeredByServer); nil in unit tests that set serverAnswered.
	answers *answerTail
	// rawResult is the result line as parsed JSON, and rateLimits the
	// rate_limit_event lines: what modelapi.Classify reads.
	rawResult  map[string]any
	rateLimits []map[string]any
	// turned: the model's first turn was observed (SawModelTurn).
	turned bool
	// turns counts the model's turns so far (distinct assistant message
	// ids), lastTurn is the id of the last; overBudget is set, and stop
	// called with it, when they went past the job's max_turns.
	turns      int
	lastTurn   string
	overBudget *BudgetStop
	stop       func(cause error)
}

// call is one call of an MCP tool: the assistant's tool_use and, once it
// came, the tool_result of that id.
type call struct {
	id, tool string
	answered bool
	result   ToolResult
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

// goneForSession says whether the CLI's word that server is not connected
// (or has disconnected) is final for the session: a stdio server whose
// respawn failed is never started again (in-flight §1.4), while 2.1.332
// keeps reconnecting a remote server in the background. A server nightwatch
// has no definition of is taken at its word.
func (s *streamState) goneForSession(server string) bool {
	if s.batch == nil {
		return true
	}
	srv := s.batch.Server(server)
	return srv == nil || srv.MCP.Transport == mcpconfig.Stdio
}

// markUnusable records, once per server, that the session cannot use a
// server of its job, and tells the observer (the night stops the attempt).
func (s *streamState) markUnusable(server, why string) {
	if s.addUnusable(Unusable{Server: server, Why: why}) {
		s.obs.Observe(Observation{Kind: SawUnusable, Server: server, Why: why})
	}
}

// addUnusable records u unless its server is not the job's or is already
// recorded, and says whether it did.
func (s *streamState) addUnusable(u Unusable) bool {
	if s.job == nil || !slices.Contains(s.job.Servers, u.Server) {
		return false
	}
	for _, o := range s.unusable {
		if o.Server == u.Server {
			return false
		}
	}
	s.unusable = append(s.unusable, u)
	return true
}

func (s *streamState) line(b []byte) {
	l := ParseLine(b)
	if l.ModelTurn && !s.turned {
		s.turned = true
		s.obs.Observe(Observation{Kind: SawModelTurn})
	}
	if l.Turn != "" && l.Turn != s.lastTurn {
		s.lastTurn = l.Turn
		s.turns++
		if over := turnsOver(s.job, s.turns); over != nil && s.overBudget == nil {
			s.overBudget = over
			if s.stop != nil {
				s.stop(over)
			}
		}
	}
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
	for _, u := range l.ToolUses {
		if s.byID == nil {
			s.byID = map[string]int{}
		}
		if _, dup := s.byID[u.ID]; !dup {
			s.byID[u.ID] = len(s.calls)
			s.calls = append(s.calls, call{id: u.ID, tool: u.Name})
		}
	}
	for _, m := range l.ResultMeta {
		if s.meta == nil {
			s.meta = map[string]ResultMeta{}
		}
		s.meta[m.ID] = m
	}
	for _, r := range l.ToolResults {
		if i, ok := s.byID[r.ID]; ok && !s.calls[i].answered {
			s.calls[i].answered, s.calls[i].result = true, r
		}
		if r.Client != nil && !s.answeredByServer(r.ID) {
			s.clientFailure(*r.Client)
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

// clientFailure acts on a failed call whose whole text is the CLI's own.
// Only the CLI's word that a server is gone for the session stops the
// attempt early; any other failure of a call is judged when the session
// ends (a later call may still be answered: the CLI respawns a stdio
// server that exited, reconnects a remote one, and nightwatch's own
// exec-server restarts its server).
func (s *streamState) clientFailure(c healthcheck.ClientFailure) {
	switch c.Kind {
	case healthcheck.ClientNoSuchTool, healthcheck.ClientConnecting, healthcheck.ClientDisconnected, healthcheck.ClientNotRetried:
		s.obs.Observe(Observation{Kind: SawMissingTool, Tool: c.Tool})
		if !slices.Contains(s.tools, c.Tool) {
			s.tools = append(s.tools, c.Tool)
		}
	}
	switch c.Kind {
	case healthcheck.ClientNoSuchTool, healthcheck.ClientConnecting:
		// A missing tool of a server that connected is the model's
		// mistake (no such tool on it); of a server that did not connect,
		// or that init did not list, the server is what is missing.
		if server, ok := s.own(c.Tool); ok && s.initStatus(server) != ServerConnected {
			s.markUnusable(server, "its tools were missing: "+c.Tool)
		}
	case healthcheck.ClientNotConnected, healthcheck.ClientDisconnected:
		s.obs.Observe(Observation{Kind: SawServer, Server: c.Server, Status: ServerNotConnected})
		if s.goneForSession(c.Server) {
			why := "not connected"
			if c.Kind == healthcheck.ClientDisconnected {
				why = "disconnected"
			}
			s.markUnusable(c.Server, why)
		}
	}
	// ClientNotRetried is transient (2.1.332 tries again in seconds), and
	// the rest are judged by lostCalls when the session ends.
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
	if r := s.result; r != nil {
		out.PermissionDenials = r.PermissionDenials
		out.Subtype, out.IsError, out.NumTurns = r.Subtype, r.IsError, r.NumTurns
		out.CostUSD, out.DurationMS, out.TerminalReason = r.TotalCostUSD, r.DurationMS, r.TerminalReason
		if r.SessionID != "" {
			out.SessionID = r.SessionID
		}
	}
	out.Denied = s.deniedTools()
	if out.KilledBy == "" {
		// A session nightwatch stopped loses its calls in flight to the
		// stop (the CLI answers them "Connection closed"), not to their
		// servers.
		s.lostCalls()
	}
	out.Unusable = s.unusable
}

// deniedTools are the tools of the job's own servers that the session was
// refused by a permission rule, once each, in order. The evidence is
// structural: the result's permission_denials less the calls nightwatch's
// own hook blocked (its server was down, which the health layer answers
// for) and a hook's ask; 2.1.332's system/permission_denied events and
// tool_result_meta rejections that no hook made. The CLI's "not granted"
// text counts only on a failed call that nothing above accounts for, as
// the fallback for a CLI that writes neither.
func (s *streamState) deniedTools() []string {
	var out []string
	seen := map[string]bool{}
	deny := func(tool string) {
		if _, ok := s.own(tool); ok && !seen[tool] {
			seen[tool] = true
			out = append(out, tool)
		}
	}
	byHook := map[string]bool{}
	for id := range s.blocked {
		byHook[id] = true
	}
	for id := range s.refused {
		byHook[id] = true
	}
	for _, d := range s.denied {
		if d.DecisionReasonType == "hook" && d.ToolUseID != "" {
			byHook[d.ToolUseID] = true
		}
	}
	if r := s.result; r != nil {
		for _, d := range r.PermissionDenials {
			if d.ToolUseID == "" || !byHook[d.ToolUseID] {
				deny(d.ToolName)
			}
		}
	}
	for _, d := range s.denied {
		if d.DecisionReasonType != "hook" && !byHook[d.ToolUseID] {
			deny(d.ToolName)
		}
	}
	for _, c := range s.calls {
		m, hasMeta := s.meta[c.id]
		pd := m.PermissionDecision
		switch {
		case hasMeta && pd.Decision == "reject" && pd.Source != "hook" && !byHook[c.id]:
			deny(c.tool)
		case c.result.Client != nil && c.result.Client.Kind == healthcheck.ClientNotGranted && !byHook[c.id] &&
			!(hasMeta && pd.Decision == "accept"):
			deny(c.tool)
		}
	}
	return out
}

// lostCalls records, as unusable, each server of the job a call was lost
// with: the call failed for a reason of its server (the CLI's own text of
// a closed connection, an unreachable, lost or timed-out server, or
// nightwatch's own hook blocked it because the server was down) and no
// later call of the same tool was answered. Such a job did not get its
// work done, whatever the model said after. The attempt is not stopped for
// it (it has ended); the night treats it as it treats a server lost at
// start.
func (s *streamState) lostCalls() {
	for i, c := range s.calls {
		if !c.answered || !c.result.IsError {
			continue
		}
		why := ""
		switch cf := c.result.Client; {
		case s.blocked[c.id]:
			why = blockedWhy
		case s.serverAnswered[c.id]:
			continue // the server answered it: alive, whatever its words
		case cf != nil && cf.Lost:
			why = c.result.Text
		default:
			continue
		}
		server, ok := s.own(c.tool)
		if !ok || s.answeredAfter(i) {
			continue
		}
		s.addUnusable(Unusable{Server: server, Tool: c.tool, Why: why})
	}
}

// blockedWhy is why a call nightwatch's hook blocked was lost.
const blockedWhy = "nightwatch's hook blocked it: the server was down"

// answeredAfter says whether a call of the same tool after calls[i] got a
// real answer.
func (s *streamState) answeredAfter(i int) bool {
	for _, c := range s.calls[i+1:] {
		if c.tool == s.calls[i].tool && c.answered && !c.result.IsError {
			return true
		}
	}
	return false
}

// blockedCalls are the tool_use_ids of the calls nightwatch's hook blocked
// in session (its server was down), and those it refused as repeats of a
// side effect an earlier attempt already made, from the events its hooks
// appended.
func blockedCalls(events []healthcheck.Event, session string) (blocked, refused map[string]bool) {
	blocked, refused = map[string]bool{}, map[string]bool{}
	for _, ev := range events {
		if ev.ToolUseID == "" || session != "" && ev.Session != "" && ev.Session != session {
			continue
		}
		switch ev.Kind {
		case healthcheck.EventBlocked:
			blocked[ev.ToolUseID] = true
		case healthcheck.EventRepeatRefused:
			refused[ev.ToolUseID] = true
		}
	}
	return blocked, refused
}

// answerTail reads exec-server's call-answered events of one attempt
// (run, job, attempt) from the events file while the session runs.
type answerTail struct {
	tail     healthcheck.EventTail
	run, job string
	attempt  int
}

// answeredByServer says whether the stdio server itself answered the call
// id with its failure (serverAnsweredCalls): then the failure is its own,
// whatever the text, and never the CLI's word on the server. exec-server
// writes the event before the answer leaves it, so it is in the events
// file by the time the stream shows the call's result; the file is read
// only for a failure whose text reads as the CLI's own.
func (s *streamState) answeredByServer(id string) bool {
	if id == "" {
		return false
	}
	if a := s.answers; a != nil && !s.serverAnswered[id] {
		for got := range serverAnsweredCalls(a.tail.Next(), a.run, a.job, a.attempt) {
			if s.serverAnswered == nil {
				s.serverAnswered = map[string]bool{}
			}
			s.serverAnswered[got] = true
		}
	}
	return s.serverAnswered[id]
}

// serverAnsweredCalls are the tool_use_ids of the calls of attempt
// (run, job, attempt) that a stdio server itself answered with a failure
// (healthcheck.EventCallAnswered, written by its exec-server).
func serverAnsweredCalls(events []healthcheck.Event, run, job string, attempt int) map[string]bool {
	out := map[string]bool{}
	for _, ev := range events {
		if ev.Kind != healthcheck.EventCallAnswered || ev.ToolUseID == "" {
			continue
		}
		if _, ok := healthcheck.ServerAnswered([]healthcheck.Event{ev}, run, job, attempt, ev.Server, ev.ToolUseID); ok {
			out[ev.ToolUseID] = true
		}
	}
	return out
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
	case out.KilledBy == KilledBudget && out.Budget != nil:
		reason = "stopped: " + out.Budget.Reason()
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
		if u.Tool != "" {
			parts[i] = fmt.Sprintf("call to %s lost with its server %s: %s", u.Tool, u.Server, u.Why)
			continue
		}
		parts[i] = fmt.Sprintf("server %s could not be used (%s)", u.Server, u.Why)
	}
	return strings.Join(parts, "; ")
}
