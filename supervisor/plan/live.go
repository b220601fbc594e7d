package plan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// Live is a night as its journal tells it, for `nightwatch status` in
// another terminal (or under launchd/systemd, where nobody sees the
// night's own output). It is the plan the night's supervisor holds,
// folded from the same journal with the same Apply (fold.go): the view
// never decides a job's fate itself, it reads what the night decided.
type Live struct {
	RunID   string    `json:"run"`
	Batch   string    `json:"batch"`
	Started time.Time `json:"started"`
	// Ended is when the journal's run-finished or run-closed line was
	// written; zero while the night goes on.
	Ended time.Time `json:"ended,omitzero"`
	// Resumed: a supervisor took the run over after another died.
	Resumed bool `json:"resumed,omitempty"`

	Total   int       `json:"total"`
	Done    int       `json:"done"`
	Failed  int       `json:"failed"`
	Skipped int       `json:"skipped"`
	Running []LiveJob `json:"running"`
	Waiting []LiveJob `json:"waiting"`

	// CostUSD is what the attempts that ended have cost; a running
	// attempt's cost is known when it ends. MaxCostUSD is the batch's
	// max_cost_usd (0: none).
	CostUSD    float64 `json:"costUsd"`
	MaxCostUSD float64 `json:"maxCostUsd,omitempty"`
	// Paused says why the night starts no session now, until PausedUntil
	// (zero: until a check says the API answers).
	Paused      string    `json:"paused,omitempty"`
	PausedUntil time.Time `json:"pausedUntil,omitzero"`
	// Stopped says why the night starts nothing more.
	Stopped  string    `json:"stopped,omitempty"`
	Deadline time.Time `json:"deadline,omitzero"`
	// EndEstimate is when the night should end at this pace: the jobs
	// left times the mean attempt so far, over max_parallel, capped by
	// the deadline; zero when no attempt has ended yet. EndWhy says how
	// it was reached.
	EndEstimate time.Time `json:"endEstimate,omitzero"`
	EndWhy      string    `json:"endWhy,omitempty"`
}

// LiveJob is one running or waiting job.
type LiveJob struct {
	Name    string `json:"name"`
	Attempt int    `json:"attempt,omitempty"`
	// Since is when its running attempt started.
	Since time.Time `json:"since,omitzero"`
	// Elapsed is how long it has run, at the view's now.
	Elapsed time.Duration `json:"elapsed,omitempty"`
	// Why says what a waiting job waits for.
	Why string `json:"why,omitempty"`
	// Until is when a waiting job may start at the earliest (a retry's
	// pause, the night's pause); zero when that is not known.
	Until time.Time `json:"until,omitzero"`
}

// LiveNight folds events (one run's journal) over batch b and says what
// the night is doing at now.
func LiveNight(b *jobs.Batch, events []journal.Event, now time.Time) Live {
	var lv Live
	if len(events) > 0 {
		lv.RunID, lv.Started = events[0].Run, events[0].Time
		lv.Batch = events[0].Batch
	}
	if lv.Batch == "" {
		lv.Batch = b.Name
	}
	p := newPlan(b, lv.Started, 0)
	// How long attempts took, for the estimate: from their start line to
	// the line that ended them.
	started := map[string]time.Time{}
	var took []time.Duration
	for _, ev := range events {
		p.Apply(ev)
		switch ev.Type {
		case journal.RunResumed:
			lv.Resumed = true
			clear(started)
		case journal.RunFinished, journal.RunClosed:
			lv.Ended = ev.Time
		case journal.JobStarted:
			started[ev.Job] = ev.Time
		case journal.JobFinished, journal.JobRetried, journal.JobDeferred, journal.JobSkipped:
			if t, ok := started[ev.Job]; ok && ev.Time.After(t) {
				took = append(took, ev.Time.Sub(t))
			}
			delete(started, ev.Job)
		}
	}
	lv.Total, lv.CostUSD, lv.MaxCostUSD = len(p.order), p.cost, p.rules.maxCostUSD
	lv.Deadline, lv.Stopped = p.rules.deadline, p.stopped
	if np := p.pause; np != nil && lv.Ended.IsZero() {
		lv.Paused = fmt.Sprintf("%s: %s", np.Class, np.reason)
		if !np.Until.IsZero() && np.Until.After(now) {
			lv.PausedUntil = np.Until
		}
	}
	left := 0
	for _, name := range p.order {
		jp := p.jobs[name]
		switch {
		case jp.phase == phaseDone:
			lv.Done++
		case jp.phase == phaseFailed:
			lv.Failed++
		case jp.phase == phaseSkipped:
			lv.Skipped++
		case jp.phase == phaseRunning && lv.Ended.IsZero():
			left++
			lv.Running = append(lv.Running, LiveJob{Name: name, Attempt: jp.attempts, Since: jp.startedAt,
				Elapsed: max(now.Sub(jp.startedAt), 0).Round(time.Second)})
		default:
			left++
			if lv.Ended.IsZero() {
				lv.Waiting = append(lv.Waiting, p.waitingWhy(jp, lv, now))
			}
		}
	}
	if lv.Ended.IsZero() {
		lv.EndEstimate, lv.EndWhy = estimateEnd(now, left, p.rules.maxParallel, took, lv.Running, lv.Deadline)
	}
	return lv
}

// waitingWhy says what a job that has not ended and does not run waits
// for, by the plan's state of it.
func (p *Plan) waitingWhy(jp *jobPlan, lv Live, now time.Time) LiveJob {
	w := LiveJob{Name: jp.job.Name, Attempt: jp.attempts}
	var needs []string
	for _, n := range jp.job.Needs {
		if dep := p.jobs[n]; dep != nil && dep.phase != phaseDone {
			needs = append(needs, n)
		}
	}
	switch {
	case jp.phase == phaseDeferred:
		w.Why = "deferred: " + jp.deferring
	case jp.phase == phaseWaitingRetry && now.Before(jp.notBefore):
		w.Why, w.Until = fmt.Sprintf("retry after attempt %d failed", jp.attempts), jp.notBefore
	case len(needs) > 0:
		w.Why = "needs " + strings.Join(needs, ", ")
	case lv.Stopped != "":
		w.Why = lv.Stopped
	case lv.Paused != "":
		w.Why, w.Until = "the night is paused on the model's API ("+lv.Paused+")", lv.PausedUntil
	case jp.phase == phaseWaitingRetry:
		w.Why = fmt.Sprintf("retry after attempt %d failed, when a slot is free", jp.attempts)
	default:
		w.Why = fmt.Sprintf("queued: max_parallel %d", p.rules.maxParallel)
	}
	return w
}

// estimateEnd is when the night should end: the left jobs (running ones
// included) at the median attempt time so far, max_parallel at a time,
// less what the running ones have done; capped by the deadline.
func estimateEnd(now time.Time, left, parallel int, took []time.Duration, running []LiveJob, deadline time.Time) (time.Time, string) {
	if left == 0 {
		return now, "every job has ended"
	}
	if len(took) == 0 {
		if !deadline.IsZero() {
			return deadline, "no attempt has ended yet: the deadline"
		}
		return time.Time{}, "unknown until an attempt ends"
	}
	sorted := append([]time.Duration(nil), took...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	med := sorted[len(sorted)/2]
	parallel = max(parallel, 1)
	rounds := (left + parallel - 1) / parallel
	total := time.Duration(rounds) * med
	// The running attempts are part-way through their round.
	var done time.Duration
	for _, r := range running {
		done = max(done, min(r.Elapsed, med))
	}
	end := now.Add(total - done)
	why := fmt.Sprintf("%d job(s) left at %s per attempt (median of %d), %d at a time", left, med.Round(time.Second), len(took), parallel)
	if !deadline.IsZero() && end.After(deadline) {
		return deadline, why + "; the deadline comes first"
	}
	return end, why
}
