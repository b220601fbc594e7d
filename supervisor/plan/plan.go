package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/modelapi"
	"github.com/nightwatch-dev/nightwatch/session"
)

// phase is where a job is in the night.
type phase int

const (
	phasePending phase = iota
	phaseDeferred
	phaseWaitingRetry
	phaseRunning
	phaseDone
	phaseFailed
	phaseSkipped
)

var phaseNames = [...]string{"pending", "deferred", "waiting to retry", "running", "done", "failed", "skipped"}

func (p phase) String() string { return phaseNames[p] }

// waiting is true for the phases of a job that has not ended and is not
// running: it may start when its turn comes.
func (p phase) waiting() bool {
	return p == phasePending || p == phaseDeferred || p == phaseWaitingRetry
}

// ended is true for the final phases.
func (p phase) ended() bool { return p == phaseDone || p == phaseFailed || p == phaseSkipped }

// status is the phase's word in the summary and the journal.
func (p phase) status() string {
	switch p {
	case phaseDone:
		return string(journal.Done)
	case phaseSkipped:
		return string(journal.Skipped)
	case phaseRunning:
		return "running"
	case phaseFailed:
		return string(journal.Failed)
	}
	return "pending"
}

// jobPlan is one job's state.
type jobPlan struct {
	job *jobs.Job
	// phase is set only through Plan.setPhase, which keeps the plan's
	// counts; index is the job's first place in the plan's order.
	phase     phase
	index     int
	attempts  int
	notBefore time.Time // a retry waits until then
	deferring string    // why it waits for its servers; "" when it does not
	// deferringOn are the servers it waits for (job-deferred's Waits).
	deferringOn []string
	// deferredSince is when it was first deferred in this run.
	deferredSince time.Time
	deferrals     int
	reason        string // why it failed or was skipped
	last          *session.Outcome
	startedAt     time.Time
	// queued: the running attempt went to a cluster's queue and no
	// worker has said it runs it yet (its session's process); ranOn is
	// the host whose worker does. What the progress shows, not the job's
	// fate: set by the loop (QueuedOnCluster, RunsOn), never recorded.
	queued bool
	ranOn  string
	// bounces are attempts stopped because a server was unusable: they do
	// not count against retries. outages are those of them the night's
	// probe then found the server down for (outage-confirmed): they do
	// not count towards MaxBounces either. bouncedOn are the servers the
	// last bounce could not use, until a probe confirms one or the next
	// attempt starts.
	bounces, outages int
	bouncedOn        []string
	// free are attempts that failed on the API and do not count against
	// retries (apirules.go); chargedOutage is the last outage one of its
	// attempts was counted in.
	free, chargedOutage int
	// feedback is told the next attempt (what the last verify said).
	feedback string
	// resume is the Claude session the next attempt resumes, and
	// resumeWhy how the last one ended ("" starts fresh).
	resume, resumeWhy string
	// costed is the last attempt whose cost the night counted.
	costed int
	// runsWithout are the servers that were down when its running attempt
	// started anyway (on_unhealthy: run).
	runsWithout []string
	// lost are the stdio servers exec-server could not bring back during
	// the running attempt (server-lost): unusable to it, as if its session
	// had said so.
	lost []string
}

// MaxBounces is how many attempts of a job may be stopped for a server
// that no session could use, and that the night's probe did not then find
// down, before the job fails: a server that probes healthy but that no
// session can use. A bounce whose outage a probe confirmed (a server
// that flaps) is not counted, up to MaxBouncesInAll bounces of a job in
// all.
const MaxBounces = 3

// MaxBouncesInAll bounds the attempts of one job stopped for unusable
// servers, confirmed outages included: a server that flaps all night does
// not start sessions for one job without end.
const MaxBouncesInAll = 12

// Event is what happened, told to the plan.
type Event interface{ isEvent() }

// Wake says: look again at what may start (the loop's turn, a maintenance
// tick, the end of an attempt).
type Wake struct{}

// Health answers CheckHealth: Down is "" when every server of the job
// may be called, else which are down and why.
type Health struct {
	Job  string
	Down string
	// Servers are the names of those down.
	Servers []string
}

// Tick says: the maintenance interval passed.
type Tick struct{}

// AttemptEnded says an attempt's session ended, or could not start
// (Unstarted: its files could not be prepared).
type AttemptEnded struct {
	Job       string
	Attempt   int
	Outcome   session.Outcome
	Unstarted bool
	// Host is the cluster host whose worker ran it ("" on one host).
	Host string
	// TasksLost are the calls a server turned into an MCP task the
	// session could not follow ("server (tool)"): work left running.
	TasksLost []string
}

// ServerDown says the night's own probe found Server down (by
// healthcheck's ConfirmsOutage): the bounces of jobs whose last session
// could not use it were an outage.
type ServerDown struct {
	Server string
	Reason string
}

func (Wake) isEvent()         {}
func (Tick) isEvent()         {}
func (Health) isEvent()       {}
func (AttemptEnded) isEvent() {}
func (ServerDown) isEvent()   {}

// Action is what the loop must do.
type Action interface{ isAction() }

// CheckHealth asks: decide whether Job's servers may be called (a probe when
// a verdict expired) and answer with Health.
type CheckHealth struct{ Job string }

// Launch asks: start Attempt of Job; answer with AttemptEnded when it ends.
type Launch struct {
	Job      string
	Attempt  int
	Feedback string // for the prompt: what the last attempt's verify said
	// Resume is the Claude session to resume and why the last attempt
	// ended; "" starts a fresh session.
	Resume, ResumeWhy string
}

// Record asks: append Event to the journal and log Msg at Level. The
// plan has applied Event already.
type Record struct {
	Event journal.Event
	Level LogLevel
	Msg   string
}

// Maintain asks: run maintenance (re-probe, reconnect) now.
type Maintain struct{}

// Finish says every job has ended and none runs: the night is over.
type Finish struct{}

func (CheckHealth) isAction() {}
func (Launch) isAction()      {}
func (Record) isAction()      {}
func (Maintain) isAction()    {}
func (Finish) isAction()      {}

// LogLevel is how loud a Record is logged.
type LogLevel int

const (
	LogInfo LogLevel = iota
	LogWarn
	LogError
)

// planRules are the batch's limits, resolved.
type planRules struct {
	maxParallel int
	deadline    time.Time // zero: none
	maxCostUSD  float64   // 0: none
	maxDefer    time.Duration
	retryPause  time.Duration
	waits       modelapi.Waits
	// resume: a retry after real work resumes the same Claude session.
	resume bool
}

// Plan is the night's jobs and the rules that move them; see the package
// doc. Only one goroutine may use it.
type Plan struct {
	rules   planRules
	jobs    map[string]*jobPlan
	order   []string
	running int
	cost    float64
	// scan is the next job a wake looks at; asked is the job whose health
	// the plan waits for ("" when none).
	scan  int
	asked string
	// ended and deferred count the jobs in those phases; every job of
	// order before first has ended. With them a wake, the end of a scan
	// and maintenance's question do not look at every job of the batch
	// (setPhase keeps them).
	ended, deferred, first int
	// pause is the night waiting on the API (nil: it is not); outages
	// counts the outages so far; stopped is why the night starts nothing
	// more ("" while it goes on).
	pause   *nightPause
	outages int
	stopped string
	// trial is the half-open state after a check said the API answers
	// again (modelapi.Trial): nil when the night is not in one.
	trial *modelapi.Trial
	// pauses say each pause in words, for the summary.
	pauses []string
}

// newPlan starts every job of b as pending. The deadline is the first
// moment at the batch's deadline time of day after the run started.
func newPlan(b *jobs.Batch, started time.Time, retryPause time.Duration) *Plan {
	p := &Plan{jobs: map[string]*jobPlan{}, rules: planRules{maxParallel: max(b.MaxParallel, 1),
		maxCostUSD: b.MaxCostUSD, maxDefer: b.Defaults.MaxDefer, retryPause: retryPause,
		waits: modelapi.Waits{}.Over(b.API).WithDefaults(), resume: b.Resume}}
	if b.Deadline != nil {
		p.rules.deadline = DeadlineAfter(started, *b.Deadline)
	}
	at := map[string]int{}
	for i, j := range b.Jobs {
		if _, seen := at[j.Name]; !seen {
			at[j.Name] = i
		}
		p.jobs[j.Name] = &jobPlan{job: j, index: at[j.Name]}
		p.order = append(p.order, j.Name)
	}
	return p
}

// New is the plan of a night of b started at started: every job pending,
// a failed attempt's retry paused retryPause more per attempt, the API's
// waits those of waits, then b's api: block, then modelapi's defaults.
func New(b *jobs.Batch, started time.Time, retryPause time.Duration, waits modelapi.Waits) *Plan {
	p := newPlan(b, started, retryPause)
	p.rules.waits = waits.Over(b.API).WithDefaults()
	return p
}

// SetMaxParallel sets how many attempts may run at once (the executor's
// capacity).
func (p *Plan) SetMaxParallel(n int) { p.rules.maxParallel = n }

// Running is how many attempts run.
func (p *Plan) Running() int { return p.running }

// Cost is what the attempts that ended have cost.
func (p *Plan) Cost() float64 { return p.cost }

// Pauses say each pause of the night in words, for the summary.
func (p *Plan) Pauses() []string { return p.pauses }

// Stopped says why the night starts nothing more ("" while it goes on).
func (p *Plan) Stopped() string { return p.stopped }

// Runs says whether attempt of job is the one running.
func (p *Plan) Runs(job string, attempt int) bool {
	jp := p.jobs[job]
	return jp != nil && jp.phase == phaseRunning && jp.attempts == attempt
}

// Resumes says whether job's next attempt resumes a Claude session, and
// how many attempts it has made.
func (p *Plan) Resumes(job string) (resumes bool, attempts int) {
	jp := p.jobs[job]
	if jp == nil {
		return false, 0
	}
	return jp.resume != "", jp.attempts
}

// DeadlineAfter is the first moment at clock (local time of day) after
// started.
func DeadlineAfter(started time.Time, clock jobs.ClockTime) time.Time {
	s := started.Local()
	d := time.Date(s.Year(), s.Month(), s.Day(), clock.Hour, clock.Minute, 0, 0, time.Local)
	if !d.After(s) {
		d = d.AddDate(0, 0, 1)
	}
	return d
}

// Adopt takes attempt of job as running: a resumed coordinator's attempt
// that goes on on a cluster's worker. Its end comes as any other.
func (p *Plan) Adopt(job string, attempt int, now time.Time) {
	jp := p.jobs[job]
	if jp == nil || jp.phase.ended() || jp.phase == phaseRunning {
		return
	}
	p.setPhase(jp, phaseRunning)
	jp.attempts, jp.startedAt = attempt, now
	p.running++
}

// Step applies what happened at now and returns what to do next, in order.
func (p *Plan) Step(now time.Time, ev Event) []Action {
	switch ev := ev.(type) {
	case Wake:
		if p.asked != "" {
			return nil // a scan is under way; it goes on with Health
		}
		acts := p.applyLimits(now)
		more, paused := p.paused(now)
		acts = append(acts, more...)
		if paused {
			if p.running == 0 && p.allEnded() {
				acts = append(acts, Finish{})
			}
			return acts
		}
		p.scan = p.firstOpen()
		return append(acts, p.scanReady(now)...)
	case APIChecked:
		acts := p.apiChecked(now, ev)
		return append(acts, p.Step(now, Wake{})...)
	case Health:
		if ev.Job != p.asked {
			return nil
		}
		p.asked = ""
		acts := p.healthKnown(now, p.jobs[ev.Job], ev.Down, ev.Servers)
		p.scan++
		return append(acts, p.scanReady(now)...)
	case AttemptEnded:
		return p.attemptEnded(now, ev)
	case ServerDown:
		return p.outageConfirmed(now, ev)
	case Tick:
		return []Action{Maintain{}}
	case ModelTurn:
		return p.modelAnswered(now, ev)
	}
	return nil
}

// applyLimits skips every job that has not started once the deadline has
// passed or the night's cost reached max_cost_usd.
func (p *Plan) applyLimits(now time.Time) []Action {
	var acts []Action
	if p.stopped != "" {
		acts = append(acts, p.skipWaiting(now, p.stopped)...)
	}
	if d := p.rules.deadline; !d.IsZero() && !now.Before(d) {
		acts = append(acts, p.skipWaiting(now, fmt.Sprintf("the deadline %s passed", d.Format("15:04")))...)
	}
	if p.rules.maxCostUSD > 0 && p.cost >= p.rules.maxCostUSD {
		acts = append(acts, p.skipWaiting(now, fmt.Sprintf("max_cost_usd reached: $%.2f of $%.2f spent", p.cost, p.rules.maxCostUSD))...)
	}
	return acts
}

// skipWaiting ends every job that has not started with reason, adding what
// it was waiting for.
func (p *Plan) skipWaiting(now time.Time, reason string) []Action {
	var acts []Action
	for _, name := range p.order[p.firstOpen():] {
		jp := p.jobs[name]
		if !jp.phase.waiting() {
			continue
		}
		why := reason
		if jp.deferring != "" {
			why += "; it was waiting: " + jp.deferring
		}
		acts = append(acts, p.skip(now, jp, why))
	}
	return acts
}

func (p *Plan) skip(now time.Time, jp *jobPlan, reason string) Action {
	return p.record(now, journal.Event{Type: journal.JobSkipped, Job: jp.job.Name, Status: journal.Skipped, Reason: reason},
		LogWarn, "skipped")
}

// scanReady goes on through the jobs in file order while slots are free:
// a job whose needs failed is skipped, one whose needs are met is asked
// about its servers (the scan pauses until Health). At the end of the
// scan, deferred jobs that can never run are given up, and the night ends
// when nothing is left.
func (p *Plan) scanReady(now time.Time) []Action {
	var acts []Action
	for ; p.scan < len(p.order) && p.running < p.rules.maxParallel && !p.trial.Out(); p.scan++ {
		jp := p.jobs[p.order[p.scan]]
		if !jp.phase.waiting() || now.Before(jp.notBefore) {
			continue
		}
		ready, blocked := p.needsMet(jp)
		if blocked != "" {
			acts = append(acts, p.skip(now, jp, blocked))
			continue
		}
		if !ready {
			continue
		}
		p.asked = jp.job.Name
		return append(acts, CheckHealth{Job: jp.job.Name})
	}
	acts = append(acts, p.giveUpWaiting(now)...)
	if p.running == 0 && p.allEnded() {
		acts = append(acts, Finish{})
	}
	return acts
}

// needsMet says whether every job jp needs is done; blocked is a reason to
// skip when one of them can no longer be.
func (p *Plan) needsMet(jp *jobPlan) (ready bool, blocked string) {
	for _, need := range jp.job.Needs {
		dep := p.jobs[need]
		switch {
		case dep == nil:
			return false, fmt.Sprintf("it needs %s, which the batch does not define", need)
		case dep.phase == phaseDone:
		case dep.phase == phaseFailed:
			return false, fmt.Sprintf("it needs %s, which failed", need)
		case dep.phase == phaseSkipped:
			return false, fmt.Sprintf("it needs %s, which was skipped", need)
		default:
			return false, ""
		}
	}
	return true, ""
}

// healthKnown starts, defers or skips a job whose needs are met, by its
// servers' health and its on_unhealthy.
func (p *Plan) healthKnown(now time.Time, jp *jobPlan, down string, downServers []string) []Action {
	if down != "" && jp.job.OnUnhealthy != jobs.Run {
		if jp.job.OnUnhealthy == jobs.Skip {
			return []Action{p.skip(now, jp, down)}
		}
		if jp.phase == phaseDeferred && (jp.deferring == down ||
			len(downServers) > 0 && slices.Equal(jp.deferringOn, downServers)) {
			// Deferred already, for the same servers: a reconnect's output
			// or a probe's error changes at every pass, the wait does not.
			return nil
		}
		return []Action{p.record(now, journal.Event{Type: journal.JobDeferred, Job: jp.job.Name, Reason: down,
			Waits: downServers}, LogInfo, "deferred")}
	}
	// The loop journals the start (job-started) once the attempt's files
	// exist; the plan applies the same line now.
	launch := Launch{Job: jp.job.Name, Attempt: jp.attempts + 1, Feedback: jp.feedback,
		Resume: jp.resume, ResumeWhy: jp.resumeWhy}
	var acts []Action
	if t := p.trial; t != nil && t.Job == "" {
		// Recorded before the launch, so that an attempt that never
		// starts ends a trial the journal already names.
		acts = append(acts, p.record(now, journal.Event{Type: journal.APITrialStarted, Job: launch.Job, Attempt: launch.Attempt},
			LogInfo, "this attempt is the API's trial: the others wait for its first answer"))
	}
	p.Apply(journal.Event{Time: now, Type: journal.JobStarted, Job: launch.Job, Attempt: launch.Attempt, Resume: launch.Resume})
	jp.runsWithout = nil
	if down != "" { // on_unhealthy: run, by choice
		jp.runsWithout = downServers
	}
	return append(acts, launch)
}

// attemptEnded judges the end of an attempt: done, another attempt after a
// pause that grows with each (retries), or failed. An attempt the night
// stopped leaves the job as it was before it started, for a resumed run.
func (p *Plan) attemptEnded(now time.Time, ev AttemptEnded) []Action {
	jp := p.jobs[ev.Job]
	if jp == nil || jp.phase != phaseRunning || (ev.Attempt != 0 && ev.Attempt != jp.attempts) {
		// Not the attempt that runs: a cluster's report of an older
		// attempt, told again to a coordinator that resumed.
		return nil
	}
	out := ev.Outcome
	if out.KilledBy == session.KilledStopped {
		p.interrupt(jp)
		return nil
	}
	if out.Status != session.Done {
		out.Unusable = withLost(out.Unusable, jp.lost)
	}
	jp.last = &out
	base := journal.Event{Job: ev.Job, Attempt: ev.Attempt, Result: resultOf(out), Denied: out.Denied,
		Unusable: unusableServers(out.Unusable), Verify: verifyOf(out.Verify), Host: ev.Host}
	if out.Status != session.Done {
		if acts, ok := p.apiFailed(now, jp, base, out); ok {
			if ev.Unstarted {
				return acts
			}
			return append(acts, Maintain{})
		}
	}
	var rec Record
	switch {
	case out.Status == session.Done && len(ev.TasksLost) > 0:
		// The session ended well, but work it started runs on unseen at a
		// server; the same call would start another task: not retried.
		base.Type, base.Status = journal.JobFinished, journal.Failed
		base.Reason = "not done: a task was left running on " + strings.Join(ev.TasksLost, ", ") +
			": the server answered with an MCP task the session does not follow; not retried, the same call would start another"
		rec = p.record(now, base, LogError, "failed: a task was left running on a server")
	case out.Status == session.Done:
		for _, s := range jp.runsWithout {
			if !slices.Contains(base.Unusable, s) {
				base.Unusable = append(base.Unusable, s)
			}
		}
		if len(base.Unusable) > 0 { // on_unhealthy: run, by choice
			base.Reason = "ran without " + strings.Join(base.Unusable, ", ")
		}
		base.Type, base.Status = journal.JobFinished, journal.Done
		rec = p.record(now, base, LogInfo, "done")
	case out.Budget != nil:
		// The job's own budget is spent: another attempt would spend it
		// again. Not retried, and no crash: budget exceeded.
		base.Type, base.Status, base.Reason = journal.JobFinished, journal.Failed, out.Budget.Reason()
		base.Budget = budgetOf(out.Budget)
		rec = p.record(now, base, LogError, "failed: budget exceeded; not retried")
	case len(out.Denied) > 0:
		base.Type, base.Status, base.Reason = journal.JobFinished, journal.Failed, out.Reason
		rec = p.record(now, base, LogError, "failed; not retried: the same permissions deny again")
	case len(out.Unusable) > 0 && jp.job.OnUnhealthy != jobs.Run:
		base.Bounce = true
		// A session that could not use its servers from its start is deaf
		// for good, and a resumed one stays so (reference in-flight §3.1):
		// the next attempt starts a fresh session instead of resuming it.
		base.Fresh = unusableAtStart(out, jp.job)
		if base.Fresh && out.ResumedFrom != "" {
			out.Reason = "resumed without " + strings.Join(base.Unusable, ", ") + " (" + out.Reason +
				"); the next attempt starts a fresh session"
		}
		switch bounces := jp.bounces + 1; {
		case jp.job.OnUnhealthy == jobs.Skip:
			base.Type, base.Status, base.Reason = journal.JobSkipped, journal.Skipped, out.Reason
			rec = p.record(now, base, LogWarn, "skipped")
		case bounces-jp.outages > MaxBounces:
			base.Type, base.Status = journal.JobFinished, journal.Failed
			base.Reason = fmt.Sprintf("%d attempts could not use their servers while the night's probe found them up: %s",
				bounces-jp.outages, out.Reason)
			if jp.outages > 0 {
				base.Reason += fmt.Sprintf(" (%d more met an outage the probe confirmed)", jp.outages)
			}
			rec = p.record(now, base, LogError, "failed")
		case bounces > MaxBouncesInAll:
			base.Type, base.Status = journal.JobFinished, journal.Failed
			base.Reason = fmt.Sprintf("%d attempts could not use their servers (%d of them in outages the night's probe confirmed): %s",
				bounces, jp.outages, out.Reason)
			rec = p.record(now, base, LogError, "failed")
		default:
			base.Type, base.Reason = journal.JobDeferred, out.Reason
			rec = p.record(now, base, LogWarn, "stopped: the session could not use its servers; waits for them")
		}
	case jp.attempts-jp.bounces-jp.free <= jp.job.Retries:
		pause := p.rules.retryPause * time.Duration(jp.attempts-jp.bounces-jp.free)
		base.Type, base.Reason, base.NotBefore = journal.JobRetried, out.Reason, now.Add(pause)
		rec = p.record(now, base, LogWarn, fmt.Sprintf("attempt failed; will retry in %s", pause))
	default:
		base.Type, base.Status, base.Reason = journal.JobFinished, journal.Failed, out.Reason
		rec = p.record(now, base, LogError, "failed")
	}
	if ev.Unstarted {
		return []Action{rec}
	}
	// Between jobs is when maintenance runs.
	return []Action{rec, Maintain{}}
}

// outageConfirmed excuses the last bounce of every job whose session
// could not use ev.Server: the night's probe found it down since, so the
// attempt met an outage, not a server that only sessions cannot use.
func (p *Plan) outageConfirmed(now time.Time, ev ServerDown) []Action {
	var acts []Action
	for _, name := range p.order {
		jp := p.jobs[name]
		if jp.phase != phaseDeferred || !slices.Contains(jp.bouncedOn, ev.Server) {
			continue
		}
		reason := fmt.Sprintf("the night's probe found %s down after attempt %d could not use it", ev.Server, jp.attempts)
		if ev.Reason != "" {
			reason += " (" + ev.Reason + ")"
		}
		acts = append(acts, p.record(now, journal.Event{Type: journal.OutageConfirmed, Job: name, Attempt: jp.attempts,
			Server: ev.Server, Reason: reason}, LogInfo, "an outage, not counted towards the job's bounce limit"))
	}
	return acts
}

// unusableAtStart says whether a server of job was failed or needed auth
// in the session's init: it could not be used from the start.
func unusableAtStart(out session.Outcome, job *jobs.Job) bool {
	for _, s := range out.ServersFailed {
		if slices.Contains(job.Servers, s) {
			return true
		}
	}
	return false
}

// resultOf is the journal's copy of an attempt's result fields.
func resultOf(o session.Outcome) *journal.Result {
	return &journal.Result{Subtype: o.Subtype, IsError: o.IsError, NumTurns: o.NumTurns,
		CostUSD: o.CostUSD, DurationMS: o.DurationMS, SessionID: o.SessionID,
		TerminalReason: o.TerminalReason, ExitCode: o.ExitCode, KilledBy: string(o.KilledBy)}
}

// withLost adds the servers lost mid-session to an attempt's unusable ones.
func withLost(us []session.Unusable, lost []string) []session.Unusable {
	for _, s := range lost {
		if !slices.ContainsFunc(us, func(u session.Unusable) bool { return u.Server == s }) {
			us = append(slices.Clip(us), session.Unusable{Server: s, Why: "lost mid-session"})
		}
	}
	return us
}

// unusableServers are the names of the servers a session could not use.
func unusableServers(us []session.Unusable) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Server)
	}
	return out
}

// budgetOf is the journal's copy of a budget stop.
func budgetOf(b *session.BudgetStop) *journal.Budget {
	limit, by := journal.BudgetMaxCost, journal.BudgetByNightwatch
	if b.Limit == session.LimitTurns {
		limit = journal.BudgetMaxTurns
	}
	if b.ByCLI {
		by = journal.BudgetByClaude
	}
	return &journal.Budget{Limit: limit, Max: b.Max, Spent: b.Spent, By: by}
}

// verifyOf is the journal's copy of a verify result.
func verifyOf(v *session.VerifyResult) *journal.Verify {
	if v == nil {
		return nil
	}
	return &journal.Verify{Command: v.Command, OK: v.OK, ExitCode: v.ExitCode, Output: v.Output, Err: v.Err}
}

// giveUpWaiting skips deferred jobs that can never run: nothing is running
// or startable, and they have waited past the batch's max_defer.
func (p *Plan) giveUpWaiting(now time.Time) []Action {
	limit := p.rules.maxDefer
	if p.running > 0 || limit <= 0 || p.deferred == 0 {
		return nil
	}
	var acts []Action
	for _, name := range p.order[p.firstOpen():] {
		jp := p.jobs[name]
		if jp.phase == phaseDeferred && now.Sub(jp.deferredSince) >= limit {
			acts = append(acts, p.skip(now, jp, fmt.Sprintf("waited %s for its servers: %s", limit, jp.deferring)))
		}
	}
	return acts
}

func (p *Plan) allEnded() bool { return p.ended == len(p.jobs) }

// setPhase moves jp to ph, keeping the counts of ended and deferred jobs
// and the first job not ended.
func (p *Plan) setPhase(jp *jobPlan, ph phase) {
	was := jp.phase
	if was == ph {
		return
	}
	jp.phase = ph
	switch {
	case was.ended() && !ph.ended():
		p.ended--
		p.first = min(p.first, jp.index)
	case !was.ended() && ph.ended():
		p.ended++
	}
	if was == phaseDeferred {
		p.deferred--
	}
	if ph == phaseDeferred {
		p.deferred++
	}
}

// firstOpen is the place in order of the first job that has not ended
// (len(order) when all have): first, moved past the jobs that ended
// since. Over a night it moves through the batch once, however many
// times it is asked.
func (p *Plan) firstOpen() int {
	for p.first < len(p.order) && p.jobs[p.order[p.first]].phase.ended() {
		p.first++
	}
	return p.first
}

// ServersWaitedFor are the servers deferred jobs wait for: maintenance
// probes them early.
func (p *Plan) ServersWaitedFor() map[string]bool {
	out := map[string]bool{}
	if p.deferred == 0 {
		return out
	}
	for _, name := range p.order[p.firstOpen():] {
		jp := p.jobs[name]
		if jp.phase == phaseDeferred {
			for _, s := range jp.job.Servers {
				out[s] = true
			}
		}
	}
	return out
}

// QueuedOnCluster says that job's running attempt waits in a cluster's
// queue for a worker.
func (p *Plan) QueuedOnCluster(job string, attempt int) {
	if jp := p.jobs[job]; jp != nil && jp.phase == phaseRunning && jp.attempts == attempt {
		jp.queued, jp.ranOn = true, ""
	}
}

// RunsOn says that a worker on host runs job's attempt (its session's
// process started there).
func (p *Plan) RunsOn(job string, attempt int, host string) {
	if jp := p.jobs[job]; jp != nil && jp.phase == phaseRunning && jp.attempts == attempt && host != "" {
		jp.queued, jp.ranOn = false, host
	}
}

// Progress is the night at one moment.
type Progress struct {
	Running                      []string // "job (attempt n, 1m20s)"
	Waiting                      []string // "job: reason"
	Done, Failed, Skipped, Total int
}

// JobResult is how one job ended.
type JobResult struct {
	Name      string           `json:"name"`
	Status    string           `json:"status"`
	Reason    string           `json:"reason,omitempty"`
	Attempts  int              `json:"attempts"`
	Deferrals int              `json:"deferrals,omitempty"`
	Outcome   *session.Outcome `json:"outcome,omitempty"`
}

// Progress says the night at now.
func (p *Plan) Progress(now time.Time) Progress {
	pr := Progress{Total: len(p.order)}
	for _, name := range p.order {
		jp := p.jobs[name]
		switch jp.phase {
		case phaseRunning:
			took := now.Sub(jp.startedAt).Round(time.Second)
			switch {
			case jp.queued:
				// In a cluster's queue: waiting for a worker, not running.
				who := "a worker"
				if len(jp.job.Hosts) > 0 {
					who = "a worker carrying " + strings.Join(jp.job.Hosts, " or ")
				}
				pr.Waiting = append(pr.Waiting, fmt.Sprintf("%s: attempt %d queued for %s, waiting for %s", name, jp.attempts, took, who))
			case jp.ranOn != "":
				pr.Running = append(pr.Running, fmt.Sprintf("%s (attempt %d on %s, %s)", name, jp.attempts, jp.ranOn, took))
			default:
				pr.Running = append(pr.Running, fmt.Sprintf("%s (attempt %d, %s)", name, jp.attempts, took))
			}
		case phaseDeferred:
			pr.Waiting = append(pr.Waiting, name+": "+jp.deferring)
		case phaseDone:
			pr.Done++
		case phaseFailed:
			pr.Failed++
		case phaseSkipped:
			pr.Skipped++
		}
	}
	return pr
}

// Summary is how every job ended, in file order.
func (p *Plan) Summary() (jobs []JobResult, done, failed, skipped int) {
	for _, name := range p.order {
		jp := p.jobs[name]
		jobs = append(jobs, JobResult{Name: name, Status: jp.phase.status(), Reason: jp.reason,
			Attempts: jp.attempts, Deferrals: jp.deferrals, Outcome: jp.last})
		switch jp.phase {
		case phaseDone:
			done++
		case phaseSkipped:
			skipped++
		default:
			failed++
		}
	}
	return jobs, done, failed, skipped
}

// endedAfterWork says whether an attempt was cut short while it worked,
// so that its retry resumes the same Claude session rather than paying
// for the work again: killed at its timeout or for a stall, stopped for a
// server lost mid-job, or ended by a usage limit, a rate limit or an
// outage of the API. A job's own failure (a wrong answer, verify, max
// turns, a denial) starts fresh.
func endedAfterWork(out session.Outcome) bool {
	switch out.KilledBy {
	case session.KilledTimeout, session.KilledStall, session.KilledAbandoned:
		return true
	}
	if out.API != nil {
		switch out.API.Class {
		case modelapi.UsageLimit, modelapi.RateLimit, modelapi.Unavailable:
			return true
		}
	}
	return false
}
