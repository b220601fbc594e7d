package journal

import (
	"fmt"
	"time"
)

// RunState is the state of a run rebuilt from its journal.
type RunState struct {
	Done    map[string]bool
	Skipped map[string]string // job → reason
	// Failed jobs are finally failed: their last attempt failed and no
	// retry was announced after it.
	Failed   map[string]bool
	Attempts map[string]int  // attempts started, including one cut short by a crash
	Running  map[string]bool // started with no end: the supervisor died during it
	CostUSD  float64         // total_cost_usd of every attempt that ended
	Started  time.Time       // the run-started line's time; zero without one
	// Sessions are the session-process lines of attempts that never
	// ended: what a dead supervisor may have left running.
	Sessions []Event
	// Uncounted are each job's attempts that did not count against its
	// retries (job-retried with Uncounted); Bounces its attempts stopped
	// for an unusable server (job-deferred with Attempt).
	Uncounted map[string]int
	Bounces   map[string]int
	// Outage is the last outage each job's attempts were counted against;
	// Outages the highest outage of the run.
	Outage  map[string]int
	Outages int
	// Pause is the night-paused line of a pause that had not ended (no
	// night-resumed or night-stopped after it); nil when none.
	Pause *Event
	// Retried is the job-retried line of each job whose last attempt
	// ended with one and that has not started again: its result says
	// which session the next attempt may resume.
	Retried map[string]Event
}

// Replay rebuilds a run's state. Each job-started line is one attempt, so
// a job that was running when the supervisor died has used an attempt and
// is not done: it runs again, with one retry fewer. An attempt ends with
// job-finished, or with job-retried when another follows; its cost counts
// once even if both lines carry the result.
func Replay(events []Event) RunState {
	r := RunState{Done: map[string]bool{}, Skipped: map[string]string{}, Failed: map[string]bool{},
		Attempts: map[string]int{}, Running: map[string]bool{}, Uncounted: map[string]int{}, Bounces: map[string]int{},
		Outage: map[string]int{}, Retried: map[string]Event{}}
	outage := func(ev Event) {
		if ev.Outage > 0 {
			r.Outage[ev.Job] = ev.Outage
			r.Outages = max(r.Outages, ev.Outage)
		}
	}
	type attempt struct {
		job string
		n   int
	}
	costed := map[attempt]bool{}
	addCost := func(ev Event) {
		a := attempt{ev.Job, ev.Attempt}
		if a.n == 0 {
			a.n = r.Attempts[ev.Job]
		}
		if c := ev.Cost(); c > 0 && !costed[a] {
			costed[a] = true
			r.CostUSD += c
		}
	}
	open := map[string]Event{}
	key := func(ev Event) string { return fmt.Sprintf("%s#%d", ev.Job, ev.Attempt) }
	var order []string
	for _, ev := range events {
		switch ev.Type {
		case RunStarted:
			if r.Started.IsZero() {
				r.Started = ev.Time
			}
		case SessionProcess:
			if _, seen := open[key(ev)]; !seen {
				order = append(order, key(ev))
			}
			open[key(ev)] = ev
		case JobStarted:
			r.Attempts[ev.Job]++
			r.Running[ev.Job] = true
			delete(r.Retried, ev.Job)
		case JobDeferred:
			if ev.Attempt > 0 {
				r.Bounces[ev.Job]++
			}
		case NightPaused:
			p := ev
			r.Pause = &p
		case NightResumed, NightStopped:
			r.Pause = nil
		case JobFinished:
			outage(ev)
			delete(r.Retried, ev.Job)
			delete(r.Running, ev.Job)
			delete(open, key(ev))
			addCost(ev)
			switch ev.Status {
			case Done:
				r.Done[ev.Job] = true
				delete(r.Failed, ev.Job)
			case Skipped:
				r.Skipped[ev.Job] = ev.Reason
			default: // failed, or a status this version does not know
				r.Failed[ev.Job] = true
			}
		case JobRetried:
			// The attempt failed and another one is due: not final.
			delete(r.Running, ev.Job)
			delete(r.Failed, ev.Job)
			delete(open, key(ev))
			addCost(ev)
			outage(ev)
			if ev.Uncounted {
				r.Uncounted[ev.Job]++
			}
			r.Retried[ev.Job] = ev
		case JobSkipped:
			delete(r.Running, ev.Job)
			delete(open, key(ev))
			r.Skipped[ev.Job] = ev.Reason
		}
	}
	for _, k := range order {
		if ev, ok := open[k]; ok {
			r.Sessions = append(r.Sessions, ev)
		}
	}
	return r
}
