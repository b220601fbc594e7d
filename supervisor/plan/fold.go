package plan

import (
	"fmt"
	"slices"
	"time"

	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/modelapi"
	"github.com/nightwatch-dev/nightwatch/session"
)

// The plan folds its own journal. Apply is the only place where a
// recorded event changes the plan: a job's phase, attempts, reason,
// bounces, uncounted attempts, the outage it was charged, the feedback and
// the session its next attempt is given, when a retry may start, its
// deferral; the night's cost, pause, outages, API trial and stop. Step
// builds each event it records and applies it through record; the
// job-started line,
// which the loop writes once the attempt's files exist, is applied when
// the plan launches. Resume is the same fold over the journal a dead
// supervisor left (Fold), so there is no second copy of the transitions.
//
// What stays outside is not recorded and not the job's fate: the scan
// cursor and the health answer awaited (scan, asked), the servers a
// running attempt runs without (runsWithout), its outcome for the summary
// (last), and the schedule of the checks of an API that does not answer
// (the pause's checking, and its until and backoff after a failed check).
// One resume step is not an event either: Adopt takes back, as running,
// an attempt the fold ended that a cluster's worker still runs.

// record stamps ev with now, applies it, and returns the action that
// journals it: what the plan records and what it does are one.
func (p *Plan) record(now time.Time, ev journal.Event, level LogLevel, msg string) Record {
	ev.Time = now
	p.Apply(ev)
	return Record{Event: ev, Level: level, Msg: msg}
}

// Apply changes the plan by one recorded event. It reads nothing but ev,
// the batch's rules and the plan itself, so folding what Step recorded
// into a new plan gives the plan Step left. Events of jobs the batch does
// not define, and types that are not the plan's, change nothing.
func (p *Plan) Apply(ev journal.Event) {
	switch ev.Type {
	case journal.NightPaused:
		p.applyPause(ev)
		return
	case journal.NightResumed:
		if np := p.pause; np != nil && np.Class == modelapi.Unavailable && !p.trial.Out() {
			// The check passed; the next session is the trial (unless
			// the last one still runs: it stays the trial).
			p.trial = &modelapi.Trial{Since: np.Since}
		}
		p.pause = nil
		return
	case journal.APITrialStarted:
		if t := p.trial; t != nil {
			t.Job, t.Attempt = ev.Job, ev.Attempt
		}
		return
	case journal.APITrialEnded:
		p.trial = nil
		return
	case journal.NightStopped:
		p.stopped, p.pause, p.trial = "the night stopped: "+ev.Reason, nil, nil
		return
	case journal.RunResumed:
		// The supervisor that ran them died: their attempts ended then.
		for _, name := range p.order {
			p.interrupt(p.jobs[name])
		}
		return
	}
	jp := p.jobs[ev.Job]
	if jp == nil {
		return
	}
	switch ev.Type {
	case journal.JobStarted:
		if jp.phase != phaseRunning {
			p.running++
		}
		// A line per attempt; one whose files could not be prepared has
		// none, and its end carries its number.
		jp.attempts = max(jp.attempts+1, ev.Attempt)
		p.setPhase(jp, phaseRunning)
		jp.startedAt = ev.Time
		jp.deferring, jp.resume, jp.resumeWhy = "", "", ""
		jp.deferringOn, jp.lost, jp.bouncedOn = nil, nil, nil
	case journal.OutageConfirmed:
		if ev.Attempt == jp.attempts && slices.Contains(jp.bouncedOn, ev.Server) {
			jp.outages++
			jp.bouncedOn = nil
		}
	case journal.ServerLost:
		if jp.phase == phaseRunning && ev.Attempt == jp.attempts && !slices.Contains(jp.lost, ev.Server) {
			jp.lost = append(jp.lost, ev.Server)
		}
	case journal.JobRetried:
		p.attemptOver(jp, ev)
		if ev.Uncounted {
			jp.free++
		} else {
			p.setPhase(jp, phaseWaitingRetry)
		}
		if !ev.NotBefore.IsZero() {
			jp.notBefore = ev.NotBefore
		}
		if ev.Class == "" {
			// The job's own failure: the next prompt is told what its
			// verify said. A retry the API's rules decided (Class) keeps
			// what the last one was told.
			jp.feedback = feedbackOf(ev.Verify)
		}
	case journal.JobFinished:
		p.attemptOver(jp, ev)
		switch ev.Status {
		case journal.Done:
			p.setPhase(jp, phaseDone)
			jp.feedback = ""
		case journal.Skipped: // an older journal's word for it
			p.setPhase(jp, phaseSkipped)
		default: // failed, or a status this version does not know
			p.setPhase(jp, phaseFailed)
		}
		jp.reason = ev.Reason
	case journal.JobDeferred:
		if ev.Attempt > 0 {
			p.attemptOver(jp, ev)
		}
		if jp.deferredSince.IsZero() {
			jp.deferredSince = ev.Time
		}
		p.setPhase(jp, phaseDeferred)
		jp.deferring, jp.deferringOn = ev.Reason, ev.Waits
		jp.deferrals++
	case journal.JobSkipped:
		if ev.Attempt > 0 {
			p.attemptOver(jp, ev)
		}
		p.setPhase(jp, phaseSkipped)
		jp.reason = ev.Reason
	}
}

// attemptOver applies what every end of an attempt says: the attempt
// was made (an older journal's end without a number is the last one started),
// its cost (once per attempt, though an older journal may carry it on two
// lines), the outage it was charged, whether it was a bounce, and the
// session a retry resumes (endedAfterWork).
func (p *Plan) attemptOver(jp *jobPlan, ev journal.Event) {
	n := ev.Attempt
	if n == 0 {
		n = jp.attempts
	}
	jp.attempts = max(jp.attempts, n)
	if jp.phase == phaseRunning {
		p.running--
	}
	// The trial ended: on its own terms, the API served it; on the API's
	// outage, the pause that follows takes the trial's place. An attempt
	// that ends before a trial started (one that ran from before, or one
	// whose files could not be prepared, which has no job-started line to
	// fold) ends it too, so that live and folded plans agree.
	if t := p.trial; t != nil && (t.Job == "" || t.Is(jp.job.Name, n)) {
		if ev.Class != string(modelapi.Unavailable) {
			p.trial = nil
		} else {
			t.Job, t.Attempt = "", 0
		}
	}
	// What a start does is done by an end too: an attempt whose files
	// could not be prepared has no job-started line.
	p.setPhase(jp, phasePending)
	jp.startedAt, jp.deferring, jp.deferringOn = time.Time{}, "", nil
	if n > jp.costed {
		jp.costed = n
		p.cost += ev.Cost()
	}
	if ev.Outage > 0 {
		jp.chargedOutage = ev.Outage
		p.outages = max(p.outages, ev.Outage)
	}
	// Only the last attempt's bounce may be found an outage: every end
	// (one whose attempt had no job-started line included) forgets the
	// one before.
	jp.bouncedOn = nil
	if ev.Bounce || ev.Type == journal.JobDeferred {
		jp.bounces++
		jp.bouncedOn = slices.Clone(ev.Unusable)
	}
	jp.resume, jp.resumeWhy = "", ""
	if r := ev.Result; p.rules.resume && r != nil && r.SessionID != "" && !(ev.Type == journal.JobFinished && ev.Status == journal.Done) {
		out := session.Outcome{KilledBy: session.Killer(r.KilledBy)}
		if ev.Class != "" {
			out.API = &modelapi.Failure{Class: modelapi.Class(ev.Class)}
		}
		if endedAfterWork(out) && !ev.Fresh {
			jp.resume, jp.resumeWhy = r.SessionID, resumeWords(out)
		}
	}
}

// applyPause starts or extends the night's pause. A pause of the class
// the night already waits out keeps its start; one of an API that does not
// answer is checked first after the shortest interval.
func (p *Plan) applyPause(ev journal.Event) {
	class := modelapi.Class(ev.Class)
	w, ok := p.rules.waits.Recorded(class, ev.Time, ev.Until)
	if !ok {
		return // a pause without its end: the night goes on
	}
	np := &nightPause{Wait: w, reason: ev.Reason}
	if old := p.pause; old != nil && old.Class == class {
		np.Since = old.Since
	}
	if t := p.trial; t != nil && class == modelapi.Unavailable {
		np.Since = t.Since // the same outage: the check's pass was not its end
	}
	if !p.trial.Out() {
		// A trial attempt that still runs (another attempt met the
		// outage first) stays the trial through the pause.
		p.trial = nil
	}
	p.pause = np
	how := "waits for the API to answer again"
	if !ev.Until.IsZero() {
		how = "pauses until " + ev.Until.Local().Format("15:04:05")
	}
	p.pauses = append(p.pauses, fmt.Sprintf("paused at %s (%s): %s; %s", ev.Time.Local().Format("15:04:05"), class, ev.Reason, how))
}

// interrupt ends jp's running attempt without a verdict: the night
// stopped it, or the supervisor that ran it died. The attempt stays
// used, and the job runs again.
func (p *Plan) interrupt(jp *jobPlan) {
	if jp.phase != phaseRunning {
		return
	}
	p.running--
	p.setPhase(jp, phasePending)
	jp.startedAt = time.Time{}
	if t := p.trial; t != nil && t.Job == jp.job.Name {
		t.Job, t.Attempt = "", 0 // the next session is the trial
	}
}

// Fold rebuilds a run's plan from its journal, for a supervisor that
// takes the run over: done, skipped and failed jobs stay so; a job that
// was running when the last supervisor died has used that attempt and
// runs again; the uncounted attempts, bounces, outages, the feedback and
// the session a retry resumes are what they were; a pause that had not
// ended goes on until its time, and an API that did not answer is checked
// at once.
func (p *Plan) Fold(events []journal.Event) {
	for _, ev := range events {
		p.Apply(ev)
	}
	p.Apply(journal.Event{Type: journal.RunResumed})
	if np := p.pause; np != nil && np.Class == modelapi.Unavailable {
		np.Until = time.Time{}
	}
}

// feedbackOf is what the next attempt is told of a verify that did not
// pass; "" without one.
// resumeWords says in nightwatch's own words how the attempt a resume
// continues ended: the resumed session's prompt (which the model reads
// and `ps` shows) never carries outside text such as an API's or a
// gateway's error message, which can echo a key.
func resumeWords(out session.Outcome) string {
	switch {
	case out.API != nil:
		return "the model's API failed (" + string(out.API.Class) + ")"
	case out.KilledBy == session.KilledTimeout:
		return "it reached its time limit"
	case out.KilledBy == session.KilledStall:
		return "it printed nothing for longer than its stall_timeout"
	case out.KilledBy == session.KilledStopped:
		return "the night was stopped"
	case out.KilledBy == session.KilledAbandoned:
		return "a server it needed could not be used"
	case out.KilledBy == session.KilledCrashed:
		return "the host running it stopped answering"
	}
	return "it ended without finishing"
}

func feedbackOf(v *journal.Verify) string {
	if v == nil {
		return ""
	}
	return (&session.VerifyResult{Command: v.Command, OK: v.OK, ExitCode: v.ExitCode, Output: v.Output, Err: v.Err}).Feedback()
}
