package journal

import (
	"fmt"
	"time"
)

// RunState is what a resumed or closed run needs of its journal besides
// the night's plan, which folds the journal itself (supervisor's
// plan.apply): when the run started, the attempts a dead supervisor left
// started and never ended, and their processes.
type RunState struct {
	Started time.Time // the run-started line's time; zero without one
	// Done are the jobs that ended done.
	Done     map[string]bool
	Attempts map[string]int  // job-started lines per job: the number of the last attempt started
	Running  map[string]bool // started with no end: the supervisor died during it
	// Sessions are the session-process lines of attempts that never
	// ended: what a dead supervisor may have left running.
	Sessions []Event
}

// Replay reads a run's journal for what a supervisor that takes the run
// over, or closes it, must end or take back: each job-started line is one
// attempt, and one without an end (job-finished, job-retried, job-skipped,
// or job-deferred for the attempt) was running when the supervisor died.
func Replay(events []Event) RunState {
	r := RunState{Done: map[string]bool{}, Attempts: map[string]int{}, Running: map[string]bool{}}
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
		case JobFinished, JobRetried, JobSkipped, JobDeferred:
			if ev.Type == JobDeferred && ev.Attempt == 0 {
				continue // deferred before an attempt: nothing ended
			}
			delete(r.Running, ev.Job)
			delete(open, key(ev))
			if ev.Type == JobFinished && ev.Status == Done {
				r.Done[ev.Job] = true
			}
		}
	}
	for _, k := range order {
		if ev, ok := open[k]; ok {
			r.Sessions = append(r.Sessions, ev)
		}
	}
	return r
}
