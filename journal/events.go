// Package journal is the run journal: the closed vocabulary of what a night
// records (one constant per event type, one field per fact), appending it
// with fsync, reading it back (tolerant of a torn last line) and replaying
// what a dead supervisor left (its attempts in flight and their
// processes; the night's plan folds the journal itself). The night, resume, the morning report and the chaos
// test read and write it only through this package.
package journal

import (
	"encoding/json"
	"errors"
	"math"
	"time"
)

// Type names an event. The set is closed: every type the night writes is a
// constant here, and a reader meets no other (a journal from a newer
// release may hold types this one does not know; readers skip them).
type Type string

// The event types, in the order a night writes them.
const (
	// RunStarted opens a journal: Batch, BatchFile, PID.
	RunStarted Type = "run-started"
	// RunResumed: a supervisor (PID) took over an unfinished run.
	RunResumed Type = "run-resumed"
	// JobStarted: one attempt of Job began; Folder holds its files.
	JobStarted Type = "job-started"
	// SessionProcess: the attempt's process group (PID) and the leader's
	// StartID, so that a supervisor started after a crash can end it.
	SessionProcess Type = "session-process"
	// JobDeferred: Job waits for its servers; Reason says which. With
	// Attempt set, that attempt was stopped because the session could not
	// use Unusable, and the job waits for them again.
	JobDeferred Type = "job-deferred"
	// JobRetried: the attempt failed and another follows; Result, Reason.
	JobRetried Type = "job-retried"
	// JobFinished: the job's last attempt ended, Status done or failed.
	JobFinished Type = "job-finished"
	// JobSkipped: the job will not run (Status skipped), Reason why.
	JobSkipped Type = "job-skipped"
	// ToolUnavailable: the model called Tool, which the session lacks.
	ToolUnavailable Type = "tool-unavailable"
	// ServerState: Server changed to Status (healthy, unhealthy, or ""
	// when its entry was removed), seen By, with failure Code.
	ServerState Type = "server-state"
	// CallBlocked: a hook blocked a call of Tool to Server.
	CallBlocked Type = "call-blocked"
	// ServerRestarted: Server, a server of attempt Attempt of Job, was
	// started again while the session ran: By RestartedByNightwatch
	// (exec-server restarted the stdio server after it ended or hung;
	// Reason how), RestartedByClaude (Claude Code started the stdio server
	// again itself) or RestartedOutside (an HTTP server came back as a new
	// process that nobody in the night started; Reason how that was seen).
	ServerRestarted Type = "server-restarted"
	// ServerLost: exec-server could not bring Server back during attempt
	// Attempt of Job (Reason why): the attempt is stopped and the job
	// waits for the server, as for a server lost at the session's start.
	ServerLost Type = "server-lost"
	// OutageConfirmed: the night's own probe found Server down after
	// Attempt of Job had been stopped because its session could not use
	// Server (a job-deferred line with that Attempt): the attempt met an
	// outage, and it does not count towards the attempts a job may lose
	// to a server that probes healthy but that no session can use.
	OutageConfirmed Type = "outage-confirmed"
	// CallHeld: a hook held a call of Tool to Server that was down but
	// being repaired, for Seconds, with Outcome (HeldAnswered, …).
	CallHeld Type = "call-held"
	// Maintenance: the supervisor's Action on Server between jobs.
	Maintenance Type = "maintenance"
	// ServerFinal: Server's state (Status, Code, Reason) at the end of the
	// night, written just before run-finished, so the report shows the
	// night's end and not the cache as it is when the report is read.
	ServerFinal Type = "server-final"
	// NightPaused: no new session starts until Until (zero: until a check
	// says the API answers again); Class is the agent failure that paused
	// it (usage-limit, rate-limit, api-unavailable), Reason its words.
	NightPaused Type = "night-paused"
	// NightResumed: the pause ended (Reason how: the reset time came, the
	// API answered).
	NightResumed Type = "night-resumed"
	// APITrialStarted: after a check said the API answers again (the
	// night-resumed of an api-unavailable pause), Attempt of Job is the
	// trial: no other session starts until the API answers a real request
	// or the trial ends (its job-retried or job-finished line).
	APITrialStarted Type = "api-trial-started"
	// APITrialEnded: the API answered a real request (a running session's
	// first model turn, Attempt of Job): the outage is over and the other
	// sessions may start.
	APITrialEnded Type = "api-trial-ended"
	// NightStopped: the night starts no more jobs (Class, Reason: the
	// agent's login was refused); the remaining jobs are skipped.
	NightStopped Type = "night-stopped"
	// RunClosed closes a run that did not finish and can no longer be
	// resumed (Reason: its window passed); the jobs it had not ended stay
	// unfinished, and a new night begins. Like run-finished, it ends the
	// journal.
	RunClosed Type = "run-closed"
	// RunFinished closes the run; a journal without it is resumed.
	RunFinished Type = "run-finished"
	// NotifyFailed: the end-of-night notification failed, Reason why.
	NotifyFailed Type = "notify-failed"
	// SideEffect: Attempt of Job made a call to Tool of Server that is not
	// read-only and succeeded; Effect numbers it in the job's side-effect
	// ledger (written once per number), Input is a short redacted digest
	// of what it was called with.
	SideEffect Type = "side-effect"
	// TaskLost: Attempt of Job called Tool of Server, which turned the
	// call into an MCP task (Task, ToolUseID) the session could not
	// follow: the task runs on at the server, its end unseen. Effect
	// numbers it in the job's ledger (written once per number).
	TaskLost Type = "task-lost"
)

// Types is every type this release writes.
var Types = []Type{RunStarted, RunResumed, JobStarted, SessionProcess, JobDeferred, JobRetried,
	JobFinished, JobSkipped, ToolUnavailable, ServerState, CallBlocked, CallHeld, ServerRestarted, ServerLost, OutageConfirmed, Maintenance, NightPaused, NightResumed, NightStopped,
	ServerFinal, APITrialStarted, APITrialEnded, RunClosed, RunFinished, NotifyFailed, SideEffect, TaskLost}

// Status is a job's end (done, failed, skipped) or a server's state
// (healthy, unhealthy; "" for an entry that was removed).
type Status string

const (
	Done      Status = "done"
	Failed    Status = "failed"
	Skipped   Status = "skipped"
	Healthy   Status = "healthy"
	Unhealthy Status = "unhealthy"
)

// Who restarted a server mid-session (server-restarted's By).
const (
	RestartedByNightwatch = "nightwatch"
	RestartedByClaude     = "claude-code"
	// RestartedOutside: an HTTP server, started outside the night, came
	// back as a new process (its address refused connections during the
	// outage, then answered; healthcheck.HTTPRestart).
	RestartedOutside = "outside"
)

// The outcomes of a held call (call-held's Outcome).
const (
	// HeldAnswered: the server came back and the call went ahead.
	HeldAnswered = "answered"
	// HeldGaveUp: the server did not come back within the hold; the call
	// was denied.
	HeldGaveUp = "gave-up"
	// HeldDenied: the server's failure became one no hold waits for (a
	// rate limit, a refused login); the call was denied.
	HeldDenied = "denied"
	// HeldCancelled: the hook was stopped while it held the call.
	HeldCancelled = "cancelled"
)

// Action is what a maintenance event did.
type Action string

const (
	// Retry: the server's retry time came and it was probed with the
	// reconnect policy.
	Retry Action = "retry"
	// Reprobe: the supervisor probed early, for a waiting job or a stuck
	// entry, and found it reachable.
	Reprobe Action = "reprobe"
	// Reconnect: the server's reconnect command ran; Reason is the
	// command and, when it failed, why.
	Reconnect Action = "reconnect"
	// Drop: the entry of a server the batch does not define was removed.
	Drop Action = "drop"
)

// Event is one line of a run's journal. Each fact has its own field;
// Reason is prose for people and is never parsed back.
type Event struct {
	Time    time.Time `json:"time"`
	Type    Type      `json:"type"`
	Run     string    `json:"run"`
	Job     string    `json:"job,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Status  Status    `json:"status,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	Server  string    `json:"server,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	// By says who saw a server's change, in healthcheck.By's words:
	// preflight, probe, maintenance, reconnect, passive (a real call),
	// call-failure(s), session-init (a session's init event), reset.
	By string `json:"by,omitempty"`
	// Code is the failure code of an unhealthy server (auth, transport, …).
	Code   string `json:"code,omitempty"`
	Action Action `json:"action,omitempty"`
	// Folder is the attempt's folder (job-started).
	Folder string `json:"folder,omitempty"`
	// StartID identifies the process PID started as (session-process),
	// so that a reused pid is never mistaken for it.
	StartID string  `json:"startId,omitempty"`
	Result  *Result `json:"result,omitempty"`
	// Allowed are the tool rules the attempt's session was allowed
	// (job-started).
	Allowed []string `json:"allowed,omitempty"`
	// Denied are tools of the job's own servers a permission rule refused
	// (job-retried, job-finished).
	Denied []string `json:"denied,omitempty"`
	// RerunOf is the run whose jobs a re-run night (run-started) runs
	// again, and Jobs are those jobs: a resumed re-run runs only them.
	RerunOf string   `json:"rerunOf,omitempty"`
	Jobs    []string `json:"jobs,omitempty"`
	// Unusable are the job's servers the session could not use
	// (job-deferred after an attempt, job-retried, job-finished); for a
	// job that runs anyway (on_unhealthy: run) the servers it ran without.
	Unusable []string `json:"unusable,omitempty"`
	// Waits are the servers a job-deferred job waits for, before an
	// attempt: the deferral is the same while they are, whatever the
	// details of their outages say. A journal older than the field lacks
	// it: there the reason alone says whether a deferral is new.
	Waits []string `json:"waits,omitempty"`
	// Verify is the job's check of the attempt's work, when it ran.
	Verify *Verify `json:"verify,omitempty"`
	// Class is an agent failure class (job-retried, job-finished,
	// night-paused, night-stopped: usage-limit, rate-limit, …).
	Class string `json:"class,omitempty"`
	// Resume is the Claude session a job-started attempt resumes.
	Resume string `json:"resume,omitempty"`
	// Until is when a night-paused pause ends (zero: at a check).
	Until time.Time `json:"until,omitzero"`
	// Uncounted: the attempt (job-retried) does not count against the
	// job's retries (a usage or rate limit, a repeated outage).
	Uncounted bool `json:"uncounted,omitempty"`
	// Outage is the outage of the API (1, 2, …) the attempt (job-retried,
	// job-finished) was counted against; 0 for none.
	Outage int `json:"outage,omitempty"`
	// NotBefore is when the next attempt of a job-retried may start at the
	// earliest (the growing pause between retries). Zero in a journal
	// older than the field: the retry may start at once, as a resumed
	// night always let it.
	NotBefore time.Time `json:"notBefore,omitzero"`
	// Bounce: the attempt (job-deferred, job-skipped, job-finished) was
	// stopped because its session could not use a server the job needs;
	// it counts against the night's bound on such attempts, not against
	// the job's retries. A journal older than the field lacks it: there a
	// job-deferred line with Attempt set is one, as before.
	Bounce    bool   `json:"bounce,omitempty"`
	Batch     string `json:"batch,omitempty"`
	BatchFile string `json:"batchFile,omitempty"`
	PID       int    `json:"pid,omitempty"`
	// Outcome and Seconds are a held call's (call-held).
	Outcome string  `json:"outcome,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	// Host is the cluster host that ran the attempt (its worker), or that
	// coordinated the night (run-started, run-resumed); "" on one host.
	Host string `json:"host,omitempty"`
	// Effect is a side-effect's number in its job's ledger, and Input its
	// redacted digest (side-effect).
	Effect int    `json:"effect,omitempty"`
	Input  string `json:"input,omitempty"`
	// Task is the server's id of the MCP task a call became (task-lost),
	// when its witness read it (exec-server does, for a stdio server);
	// ToolUseID is the CLI's id of that call.
	Task      string `json:"task,omitempty"`
	ToolUseID string `json:"toolUseId,omitempty"`
	// Budget is the job's own limit that stopped the attempt (job-finished:
	// failed, budget exceeded, not retried); nil for any other end.
	Budget *Budget `json:"budget,omitempty"`
	// Fresh: the attempt (job-deferred, job-retried) was a resume whose
	// session could not use the job's servers from its start; the next
	// attempt starts a fresh session instead of resuming it again.
	Fresh bool `json:"fresh,omitempty"`
}

// Result is what an attempt's session reported, as job-retried and
// job-finished carry it. The JSON names are the stream-json result's.
type Result struct {
	Subtype        string  `json:"subtype"`
	IsError        bool    `json:"is_error"`
	NumTurns       int     `json:"num_turns"`
	CostUSD        float64 `json:"total_cost_usd"`
	DurationMS     int64   `json:"duration_ms"`
	SessionID      string  `json:"session_id"`
	TerminalReason string  `json:"terminal_reason"`
	ExitCode       int     `json:"exit_code"`
	KilledBy       string  `json:"killed_by"`
}

// Budget is a job's own limit an attempt went over (job-finished's
// Budget): which limit (BudgetMaxTurns, BudgetMaxCost), its value, and
// what the attempt had spent when it was stopped.
type Budget struct {
	Limit string  `json:"limit"`
	Max   float64 `json:"max"`
	Spent float64 `json:"spent"`
	// By says who stopped the session: BudgetByClaude (Claude Code's own
	// --max-turns / --max-budget-usd) or BudgetByNightwatch (the night
	// counted the stream's turns and stopped it).
	By string `json:"by"`
}

// The limits of a job's budget (Budget.Limit): the batch file's words.
const (
	BudgetMaxTurns = "max_turns"
	BudgetMaxCost  = "max_cost_usd"
)

// Who stopped a session over its budget (Budget.By).
const (
	BudgetByClaude     = "claude-code"
	BudgetByNightwatch = "nightwatch"
)

// Verify is how a job's verify command judged an attempt.
type Verify struct {
	Command  []string `json:"command"`
	OK       bool     `json:"ok"`
	ExitCode int      `json:"exitCode"`
	// Output is the tail of what it printed, redacted.
	Output string `json:"output,omitempty"`
	// Err says why it did not exit by itself (its timeout, it could not
	// start); "" when it exited, and in a journal older than the field.
	Err string `json:"err,omitempty"`
}

// UnmarshalJSON reads a result leniently: a field of an unexpected type is
// left at zero instead of losing the whole line, and a negative count or
// cost reads as zero.
func (r *Result) UnmarshalJSON(data []byte) error {
	type plain Result
	var p plain
	err := json.Unmarshal(data, &p)
	var typeErr *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &typeErr) {
		return err
	}
	*r = Result(p)
	if r.CostUSD < 0 || math.IsNaN(r.CostUSD) || math.IsInf(r.CostUSD, 0) {
		r.CostUSD = 0
	}
	r.NumTurns = max(r.NumTurns, 0)
	r.DurationMS = max(r.DurationMS, 0)
	return nil
}

// Cost is the attempt's cost in USD; 0 without a result.
func (e Event) Cost() float64 {
	if e.Result == nil {
		return 0
	}
	return e.Result.CostUSD
}
