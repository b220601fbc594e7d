package supervisor

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

// The plan is the night's job state machine: every job's phase, and the
// rules that move it (needs, defer, skip, run anyway, retries with a
// growing pause, the deadline, max_cost_usd, max_defer). It does no I/O
// and reads no clock: the loop (loop.go), its only owner, tells it what
// happened with step and does what step returns. Every change a recorded
// event makes goes through apply (fold.go), so a resumed night folds its
// journal into the plan the dead supervisor had.
//
//	pending ──needs met, servers healthy──► running ──done──► done
//	   │  ▲                                  │  │
//	   │  └──servers back── deferred ◄──down─┘  └─failed, retries left──► waiting to retry ──pause over──► (as pending)
//	   │                      │                 └─failed, none left──► failed
//	   └──need failed/skipped, down+skip, deadline, cost, max_defer──► skipped
//
// How an attempt's failure is judged (attemptEnded):
//   - the job's own budget (max_turns, max_cost_usd) stopped it: failed,
//     "budget exceeded", not retried (the next attempt would spend it
//     again);
//   - a permission rule denied a tool of the job's own servers: failed, not
//     retried (the same settings deny again);
//   - the session could not use a server the job needs: back to deferred,
//     as if the server had been down at the start (skipped for
//     on_unhealthy: skip; failed after maxBounces such attempts, for a
//     server that probes healthy but no session can use);
//   - anything else (verify included): retried while retries last, the
//     next prompt told what verify said.
//
// An attempt that failed on the model's API (a usage or rate limit, an
// outage, a refused login) follows the table in apirules.go first: the
// night pauses, waits for the API or stops. A retry after real work
// resumes the same Claude session (endedAfterWork).

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
		return StatusDone
	case phaseSkipped:
		return StatusSkipped
	case phaseRunning:
		return "running"
	case phaseFailed:
		return StatusFailed
	}
	return "pending"
}

// jobPlan is one job's state.
type jobPlan struct {
	job       *jobs.Job
	phase     phase
	attempts  int
	notBefore time.Time // a retry waits until then
	deferring string    // why it waits for its servers; "" when it does not
	// deferredSince is when it was first deferred in this run.
	deferredSince time.Time
	deferrals     int
	reason        string // why it failed or was skipped
	last          *session.Outcome
	startedAt     time.Time
	// queued: the running attempt went to a cluster's queue and no
	// worker has said it runs it yet (its session's process); ranOn is
	// the host whose worker does. What the progress shows, not the job's
	// fate: set by the loop (queuedOnCluster, runsOn), never recorded.
	queued bool
	ranOn  string
	// bounces are attempts stopped because a server was unusable: they do
	// not count against retries.
	bounces int
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

// maxBounces is how many attempts of a job may be stopped for an unusable
// server before the job fails.
const maxBounces = 3

// event is what happened, told to the plan.
type event interface{ isEvent() }

// evWake: look again at what may start (the loop's turn, a maintenance
// tick, the end of an attempt).
type evWake struct{}

// evHealth answers actCheckHealth: down is "" when every server of the job
// may be called, else which are down and why.
type evHealth struct {
	job  string
	down string
	// servers are the names of those down.
	servers []string
}

// evTick: the maintenance interval passed.
type evTick struct{}

// evAttemptEnded: an attempt's session ended, or could not start
// (unstarted: its files could not be prepared).
type evAttemptEnded struct {
	job       string
	attempt   int
	outcome   session.Outcome
	unstarted bool
	// host is the cluster host whose worker ran it ("" on one host).
	host string
	// tasksLost are the calls a server turned into an MCP task the
	// session could not follow ("server (tool)"): work left running.
	tasksLost []string
}

func (evWake) isEvent()         {}
func (evTick) isEvent()         {}
func (evHealth) isEvent()       {}
func (evAttemptEnded) isEvent() {}

// action is what the loop must do.
type action interface{ isAction() }

// actCheckHealth: decide whether job's servers may be called (a probe when
// a verdict expired) and answer with evHealth.
type actCheckHealth struct{ job string }

// actLaunch: start attempt of job; answer with evAttemptEnded when it ends.
type actLaunch struct {
	job      string
	attempt  int
	feedback string // for the prompt: what the last attempt's verify said
	// resume is the Claude session to resume and why the last attempt
	// ended; "" starts a fresh session.
	resume, resumeWhy string
}

// actRecord: append ev to the journal and log msg at level.
type actRecord struct {
	ev    journal.Event
	level logLevel
	msg   string
}

// actMaintain: run maintenance (re-probe, reconnect) now.
type actMaintain struct{}

// actFinish: every job has ended and none runs: the night is over.
type actFinish struct{}

func (actCheckHealth) isAction() {}
func (actLaunch) isAction()      {}
func (actRecord) isAction()      {}
func (actMaintain) isAction()    {}
func (actFinish) isAction()      {}

type logLevel int

const (
	logInfo logLevel = iota
	logWarn
	logError
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

type plan struct {
	rules   planRules
	jobs    map[string]*jobPlan
	order   []string
	running int
	cost    float64
	// scan is the next job a wake looks at; asked is the job whose health
	// the plan waits for ("" when none).
	scan  int
	asked string
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
func newPlan(b *jobs.Batch, started time.Time, retryPause time.Duration) *plan {
	p := &plan{jobs: map[string]*jobPlan{}, rules: planRules{maxParallel: max(b.MaxParallel, 1),
		maxCostUSD: b.MaxCostUSD, maxDefer: b.Defaults.MaxDefer, retryPause: retryPause,
		waits: modelapi.Waits{}.Over(b.API).WithDefaults(), resume: b.Resume}}
	if b.Deadline != nil {
		p.rules.deadline = deadlineAfter(started, *b.Deadline)
	}
	for _, j := range b.Jobs {
		p.jobs[j.Name] = &jobPlan{job: j}
		p.order = append(p.order, j.Name)
	}
	return p
}

// deadlineAfter is the first moment at clock (local time of day) after
// started.
func deadlineAfter(started time.Time, clock jobs.ClockTime) time.Time {
	s := started.Local()
	d := time.Date(s.Year(), s.Month(), s.Day(), clock.Hour, clock.Minute, 0, 0, time.Local)
	if !d.After(s) {
		d = d.AddDate(0, 0, 1)
	}
	return d
}

// adopt takes attempt of job as running: a resumed coordinator's attempt
// that goes on on a cluster's worker. Its end comes as any other.
func (p *plan) adopt(job string, attempt int, now time.Time) {
	jp := p.jobs[job]
	if jp == nil || jp.phase.ended() || jp.phase == phaseRunning {
		return
	}
	jp.phase, jp.attempts, jp.startedAt = phaseRunning, attempt, now
	p.running++
}

// step applies what happened at now and returns what to do next, in order.
func (p *plan) step(now time.Time, ev event) []action {
	switch ev := ev.(type) {
	case evWake:
		if p.asked != "" {
			return nil // a scan is under way; it goes on with evHealth
		}
		acts := p.applyLimits(now)
		more, paused := p.paused(now)
		acts = append(acts, more...)
		if paused {
			if p.running == 0 && p.allEnded() {
				acts = append(acts, actFinish{})
			}
			return acts
		}
		p.scan = 0
		return append(acts, p.scanReady(now)...)
	case evAPI:
		acts := p.apiChecked(now, ev)
		return append(acts, p.step(now, evWake{})...)
	case evHealth:
		if ev.job != p.asked {
			return nil
		}
		p.asked = ""
		acts := p.healthKnown(now, p.jobs[ev.job], ev.down, ev.servers)
		p.scan++
		return append(acts, p.scanReady(now)...)
	case evAttemptEnded:
		return p.attemptEnded(now, ev)
	case evTick:
		return []action{actMaintain{}}
	case evModelTurn:
		return p.modelAnswered(now, ev)
	}
	return nil
}

// applyLimits skips every job that has not started once the deadline has
// passed or the night's cost reached max_cost_usd.
func (p *plan) applyLimits(now time.Time) []action {
	var acts []action
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
func (p *plan) skipWaiting(now time.Time, reason string) []action {
	var acts []action
	for _, name := range p.order {
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

func (p *plan) skip(now time.Time, jp *jobPlan, reason string) action {
	return p.record(now, journal.Event{Type: journal.JobSkipped, Job: jp.job.Name, Status: journal.Skipped, Reason: reason},
		logWarn, "skipped")
}

// scanReady goes on through the jobs in file order while slots are free:
// a job whose needs failed is skipped, one whose needs are met is asked
// about its servers (the scan pauses until evHealth). At the end of the
// scan, deferred jobs that can never run are given up, and the night ends
// when nothing is left.
func (p *plan) scanReady(now time.Time) []action {
	var acts []action
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
		return append(acts, actCheckHealth{job: jp.job.Name})
	}
	acts = append(acts, p.giveUpWaiting(now)...)
	if p.running == 0 && p.allEnded() {
		acts = append(acts, actFinish{})
	}
	return acts
}

// needsMet says whether every job jp needs is done; blocked is a reason to
// skip when one of them can no longer be.
func (p *plan) needsMet(jp *jobPlan) (ready bool, blocked string) {
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
func (p *plan) healthKnown(now time.Time, jp *jobPlan, down string, downServers []string) []action {
	if down != "" && jp.job.OnUnhealthy != jobs.Run {
		if jp.job.OnUnhealthy == jobs.Skip {
			return []action{p.skip(now, jp, down)}
		}
		if jp.phase == phaseDeferred && jp.deferring == down {
			return nil // deferred already, for the same reason
		}
		return []action{p.record(now, journal.Event{Type: journal.JobDeferred, Job: jp.job.Name, Reason: down},
			logInfo, "deferred")}
	}
	// The loop journals the start (job-started) once the attempt's files
	// exist; the plan applies the same line now.
	launch := actLaunch{job: jp.job.Name, attempt: jp.attempts + 1, feedback: jp.feedback,
		resume: jp.resume, resumeWhy: jp.resumeWhy}
	var acts []action
	if t := p.trial; t != nil && t.Job == "" {
		// Recorded before the launch, so that an attempt that never
		// starts ends a trial the journal already names.
		acts = append(acts, p.record(now, journal.Event{Type: journal.APITrialStarted, Job: launch.job, Attempt: launch.attempt},
			logInfo, "this attempt is the API's trial: the others wait for its first answer"))
	}
	p.apply(journal.Event{Time: now, Type: journal.JobStarted, Job: launch.job, Attempt: launch.attempt, Resume: launch.resume})
	jp.runsWithout = nil
	if down != "" { // on_unhealthy: run, by choice
		jp.runsWithout = downServers
	}
	return append(acts, launch)
}

// attemptEnded judges the end of an attempt: done, another attempt after a
// pause that grows with each (retries), or failed. An attempt the night
// stopped leaves the job as it was before it started, for a resumed run.
func (p *plan) attemptEnded(now time.Time, ev evAttemptEnded) []action {
	jp := p.jobs[ev.job]
	if jp == nil || jp.phase != phaseRunning || (ev.attempt != 0 && ev.attempt != jp.attempts) {
		// Not the attempt that runs: a cluster's report of an older
		// attempt, told again to a coordinator that resumed.
		return nil
	}
	out := ev.outcome
	if out.KilledBy == session.KilledStopped {
		p.interrupt(jp)
		return nil
	}
	if out.Status != session.Done {
		out.Unusable = withLost(out.Unusable, jp.lost)
	}
	jp.last = &out
	base := journal.Event{Job: ev.job, Attempt: ev.attempt, Result: resultOf(out), Denied: out.Denied,
		Unusable: unusableServers(out.Unusable), Verify: verifyOf(out.Verify), Host: ev.host}
	if out.Status != session.Done {
		if acts, ok := p.apiFailed(now, jp, base, out); ok {
			if ev.unstarted {
				return acts
			}
			return append(acts, actMaintain{})
		}
	}
	var rec actRecord
	switch {
	case out.Status == session.Done && len(ev.tasksLost) > 0:
		// The session ended well, but work it started runs on unseen at a
		// server; the same call would start another task: not retried.
		base.Type, base.Status = journal.JobFinished, journal.Failed
		base.Reason = "not done: a task was left running on " + strings.Join(ev.tasksLost, ", ") +
			": the server answered with an MCP task the session cannot follow (Unsupported result type 'task'); not retried, the same call would start another"
		rec = p.record(now, base, logError, "failed: a task was left running on a server")
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
		rec = p.record(now, base, logInfo, "done")
	case out.Budget != nil:
		// The job's own budget is spent: another attempt would spend it
		// again. Not retried, and no crash: budget exceeded.
		base.Type, base.Status, base.Reason = journal.JobFinished, journal.Failed, out.Budget.Reason()
		base.Budget = budgetOf(out.Budget)
		rec = p.record(now, base, logError, "failed: budget exceeded; not retried")
	case len(out.Denied) > 0:
		base.Type, base.Status, base.Reason = journal.JobFinished, journal.Failed, out.Reason
		rec = p.record(now, base, logError, "failed; not retried: the same permissions deny again")
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
			rec = p.record(now, base, logWarn, "skipped")
		case bounces > maxBounces:
			base.Type, base.Status = journal.JobFinished, journal.Failed
			base.Reason = fmt.Sprintf("%d attempts could not use their servers: %s", bounces, out.Reason)
			rec = p.record(now, base, logError, "failed")
		default:
			base.Type, base.Reason = journal.JobDeferred, out.Reason
			rec = p.record(now, base, logWarn, "stopped: the session could not use its servers; waits for them")
		}
	case jp.attempts-jp.bounces-jp.free <= jp.job.Retries:
		pause := p.rules.retryPause * time.Duration(jp.attempts-jp.bounces-jp.free)
		base.Type, base.Reason, base.NotBefore = journal.JobRetried, out.Reason, now.Add(pause)
		rec = p.record(now, base, logWarn, fmt.Sprintf("attempt failed; will retry in %s", pause))
	default:
		base.Type, base.Status, base.Reason = journal.JobFinished, journal.Failed, out.Reason
		rec = p.record(now, base, logError, "failed")
	}
	if ev.unstarted {
		return []action{rec}
	}
	// Between jobs is when maintenance runs.
	return []action{rec, actMaintain{}}
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
func (p *plan) giveUpWaiting(now time.Time) []action {
	limit := p.rules.maxDefer
	if p.running > 0 || limit <= 0 {
		return nil
	}
	var acts []action
	for _, name := range p.order {
		jp := p.jobs[name]
		if jp.phase == phaseDeferred && now.Sub(jp.deferredSince) >= limit {
			acts = append(acts, p.skip(now, jp, fmt.Sprintf("waited %s for its servers: %s", limit, jp.deferring)))
		}
	}
	return acts
}

func (p *plan) allEnded() bool {
	for _, jp := range p.jobs {
		if !jp.phase.ended() {
			return false
		}
	}
	return true
}

// serversWaitedFor are the servers deferred jobs wait for: maintenance
// probes them early.
func (p *plan) serversWaitedFor() map[string]bool {
	out := map[string]bool{}
	for _, jp := range p.jobs {
		if jp.phase == phaseDeferred {
			for _, s := range jp.job.Servers {
				out[s] = true
			}
		}
	}
	return out
}

// queuedOnCluster says that job's running attempt waits in a cluster's
// queue for a worker.
func (p *plan) queuedOnCluster(job string, attempt int) {
	if jp := p.jobs[job]; jp != nil && jp.phase == phaseRunning && jp.attempts == attempt {
		jp.queued, jp.ranOn = true, ""
	}
}

// runsOn says that a worker on host runs job's attempt (its session's
// process started there).
func (p *plan) runsOn(job string, attempt int, host string) {
	if jp := p.jobs[job]; jp != nil && jp.phase == phaseRunning && jp.attempts == attempt && host != "" {
		jp.queued, jp.ranOn = false, host
	}
}

// progress is the night at now.
func (p *plan) progress(now time.Time) Progress {
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

// summary is how every job ended, in file order.
func (p *plan) summary() (jobs []JobResult, done, failed, skipped int) {
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
