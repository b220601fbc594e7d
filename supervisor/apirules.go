package supervisor

import (
	"fmt"
	"time"

	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/modelapi"
	"github.com/nightwatch-dev/nightwatch/session"
)

// The plan's side of the model's API: how an attempt that failed on the
// API or the CLI's limits (modelapi.Classify) changes its job and the
// night, by the class's rule (modelapi.RuleFor) and the night's waits
// (modelapi.Waits). A job's fate is decided here, beside the job rules of
// plan.go and as pure as they are.

// uncountedNote ends the reason of an attempt that is not counted.
const uncountedNote = " (the attempt is not counted)"

// maxFree bounds the attempts of one job that are not counted (usage
// limits, rate limits, repeated failures in one outage): a limit that
// never lifts ends in the job's retry rules, not in a loop.
const maxFree = 10

// nightPause is the night not starting sessions: the API's wait
// (modelapi.Wait: its class, start, end or next check, interval) and the
// words of the failure that began it.
type nightPause struct {
	modelapi.Wait
	reason string
	// checking: an actCheckAPI is out, its evAPI not yet back.
	checking bool
}

// actCheckAPI: check, spending no model turn, whether the model's API
// answers; answer with evAPI.
type actCheckAPI struct{}

// actNotifyNow: tell the operator now, not only at the end of the night.
type actNotifyNow struct{ reason string }

func (actCheckAPI) isAction()  {}
func (actNotifyNow) isAction() {}

// evAPI answers actCheckAPI: ok when the API answered; why says what the
// check met otherwise.
type evAPI struct {
	ok  bool
	why string
}

func (evAPI) isEvent() {}

// evModelTurn: a running attempt's session got its first answer from the
// model's API.
type evModelTurn struct {
	job     string
	attempt int
}

func (evModelTurn) isEvent() {}

// modelAnswered ends a trial: the API serves real requests.
func (p *plan) modelAnswered(now time.Time, ev evModelTurn) []action {
	if p.trial == nil {
		return nil
	}
	return []action{p.record(now, journal.Event{Type: journal.APITrialEnded, Job: ev.job, Attempt: ev.attempt},
		logInfo, "the API answered a real request: the night goes on")}
}

// apiFailed applies the class's rule (modelapi.RuleFor) to an attempt
// that failed with out.API: the job's next phase, the night's pause or
// stop, and what to record. ok is false for a failure the rule leaves to
// the job rules.
func (p *plan) apiFailed(now time.Time, jp *jobPlan, base journal.Event, out session.Outcome) (acts []action, ok bool) {
	if out.API == nil {
		return nil, false
	}
	rule, known := modelapi.RuleFor(out.API.Class)
	if !known || (rule.Spend == modelapi.SpendAlways && rule.Pause == modelapi.PauseNone) {
		return nil, false
	}
	class := out.API.Class
	base.Class = string(class)
	reason := out.Reason
	if reason == "" {
		reason = out.API.Reason
	}

	if rule.Pause == modelapi.PauseStop {
		base.Type, base.Status, base.Reason = journal.JobFinished, journal.Failed, reason
		acts = append(acts, p.record(now, base, logError, "failed: the agent's login was refused; the night stops"))
		return append(acts, p.stopNight(now, string(class), reason)...), true
	}

	// The outage this failure belongs to: the one the night waits out
	// or tries (a failure during the trial is the same outage), or a new
	// one.
	trial := p.trial
	outage := p.outages
	if rule.Pause == modelapi.PauseUntilAPI && (p.pause == nil || p.pause.Class != modelapi.Unavailable) && trial == nil {
		outage++
	}
	free := rule.Spend == modelapi.SpendNever
	if rule.Spend == modelapi.SpendOncePerOutage {
		// The trial attempt is the night's probe of the API, not the job's.
		free = jp.chargedOutage == outage || trial.Is(jp.job.Name, jp.attempts)
		base.Outage = outage
	}
	if free && jp.free >= maxFree {
		free = false
	}
	switch {
	case free:
		base.Type, base.Reason, base.Uncounted = journal.JobRetried, reason+uncountedNote, true
		acts = append(acts, p.record(now, base, logWarn, "attempt failed on the API; the job waits with the night"))
	case jp.attempts-jp.bounces-jp.free <= jp.job.Retries:
		// The night's wait is the retry's pause.
		base.Type, base.Reason, base.NotBefore = journal.JobRetried, reason, now
		acts = append(acts, p.record(now, base, logWarn, "attempt failed on the API; will retry after the night's wait"))
	default:
		base.Type, base.Status, base.Reason = journal.JobFinished, journal.Failed, reason
		acts = append(acts, p.record(now, base, logError, "failed"))
	}
	return append(acts, p.pauseFor(now, rule.Pause, class, reason, out.API.ResetAt)...), true
}

// pauseFor starts or extends the night's pause after a failure of class,
// by the API's rules (modelapi.Waits.Start); apply keeps the start of a
// pause of the same class.
func (p *plan) pauseFor(now time.Time, rule modelapi.Pause, class modelapi.Class, reason string, resetAt time.Time) []action {
	var cur *modelapi.Wait
	if p.pause != nil {
		cur = &p.pause.Wait
	}
	next, ok := p.rules.waits.Start(now, cur, rule, class, resetAt)
	if !ok {
		return nil
	}
	ev := journal.Event{Type: journal.NightPaused, Class: string(class), Reason: reason}
	msg := "the night waits for the API to answer again"
	if rule != modelapi.PauseUntilAPI {
		ev.Until = next.Until
		msg = "the night pauses until " + next.Until.Local().Format("15:04:05")
	}
	return []action{p.record(now, ev, logWarn, msg)}
}

// stopNight skips every job that has not started and tells the operator
// now; the running ones are let finish.
func (p *plan) stopNight(now time.Time, class, reason string) []action {
	if p.stopped != "" {
		return nil
	}
	acts := []action{p.record(now, journal.Event{Type: journal.NightStopped, Class: class, Reason: reason},
		logError, "the night stops: the agent's login was refused")}
	acts = append(acts, p.skipWaiting(now, p.stopped)...)
	return append(acts, actNotifyNow{reason: reason})
}

// paused says whether the night starts nothing now, ending a pause whose
// time came or asking for a check of the API. It also holds the deadline
// and the outage's bound against the pause: when the pause ends past the
// deadline, or the API stayed away too long, every waiting job is skipped
// and the night goes on with what runs (the pause itself is not ended: a
// retry of what runs would meet it too).
func (p *plan) paused(now time.Time) (acts []action, paused bool) {
	np := p.pause
	if np == nil {
		return nil, false
	}
	if d := p.rules.deadline; !d.IsZero() && np.Class != modelapi.Unavailable && !np.Until.Before(d) {
		return p.skipWaiting(now, fmt.Sprintf("the night paused until %s (%s: %s), past the deadline %s",
			np.Until.Local().Format("15:04"), np.Class, np.reason, d.Format("15:04"))), false
	}
	if np.Class == modelapi.Unavailable {
		if np.TooLong(now, p.rules.waits) {
			return p.skipWaiting(now, fmt.Sprintf("the API did not answer for %s: %s", p.rules.waits.MaxOutage, np.reason)), false
		}
		if np.checking || now.Before(np.Until) {
			return nil, true
		}
		np.checking = true
		return []action{actCheckAPI{}}, true
	}
	if now.Before(np.Until) {
		return nil, true
	}
	return []action{p.record(now, journal.Event{Type: journal.NightResumed, Class: string(np.Class),
		Reason: "the pause ended at " + np.Until.Local().Format("15:04:05")},
		logInfo, "the night goes on after its pause")}, false
}

// apiChecked ends the outage when the API answered, or sets the next
// check further off.
func (p *plan) apiChecked(now time.Time, ev evAPI) []action {
	np := p.pause
	if np == nil || np.Class != modelapi.Unavailable {
		return nil
	}
	np.checking = false
	if !ev.ok {
		np.CheckFailed(now, p.rules.waits)
		return nil
	}
	return []action{p.record(now, journal.Event{Type: journal.NightResumed, Class: string(np.Class),
		Reason: fmt.Sprintf("the API answers again after %s", now.Sub(np.Since).Round(time.Second))},
		logInfo, "the API answers again; the night goes on")}
}
