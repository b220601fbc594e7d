package plan

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
	// checking: an CheckAPI is out, its APIChecked not yet back.
	checking bool
}

// CheckAPI asks: check, spending no model turn, whether the model's API
// answers; answer with APIChecked.
type CheckAPI struct{}

// NotifyNow asks: tell the operator now, not only at the end of the night.
type NotifyNow struct{ Reason string }

func (CheckAPI) isAction()  {}
func (NotifyNow) isAction() {}

// APIChecked answers CheckAPI: OK when the API answered; Why says what the
// check met otherwise.
type APIChecked struct {
	OK  bool
	Why string
}

func (APIChecked) isEvent() {}

// ModelTurn says a running attempt's session got its first answer from the
// model's API.
type ModelTurn struct {
	Job     string
	Attempt int
}

func (ModelTurn) isEvent() {}

// modelAnswered ends a trial: the API serves real requests.
func (p *Plan) modelAnswered(now time.Time, ev ModelTurn) []Action {
	if p.trial == nil {
		return nil
	}
	return []Action{p.record(now, journal.Event{Type: journal.APITrialEnded, Job: ev.Job, Attempt: ev.Attempt},
		LogInfo, "the API answered a real request: the night goes on")}
}

// apiFailed applies the class's rule (modelapi.RuleFor) to an attempt
// that failed with out.API: the job's next phase, the night's pause or
// stop, and what to record. ok is false for a failure the rule leaves to
// the job rules.
func (p *Plan) apiFailed(now time.Time, jp *jobPlan, base journal.Event, out session.Outcome) (acts []Action, ok bool) {
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
		acts = append(acts, p.record(now, base, LogError, "failed: the agent's login was refused; the night stops"))
		return append(acts, p.StopNight(now, string(class), reason)...), true
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
		acts = append(acts, p.record(now, base, LogWarn, "attempt failed on the API; the job waits with the night"))
	case jp.attempts-jp.bounces-jp.free <= jp.job.Retries:
		// The night's wait is the retry's pause.
		base.Type, base.Reason, base.NotBefore = journal.JobRetried, reason, now
		acts = append(acts, p.record(now, base, LogWarn, "attempt failed on the API; will retry after the night's wait"))
	default:
		base.Type, base.Status, base.Reason = journal.JobFinished, journal.Failed, reason
		acts = append(acts, p.record(now, base, LogError, "failed"))
	}
	return append(acts, p.pauseFor(now, rule.Pause, class, reason, out.API.ResetAt)...), true
}

// pauseFor starts or extends the night's pause after a failure of class,
// by the API's rules (modelapi.Waits.Start); Apply keeps the start of a
// pause of the same class.
func (p *Plan) pauseFor(now time.Time, rule modelapi.Pause, class modelapi.Class, reason string, resetAt time.Time) []Action {
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
	return []Action{p.record(now, ev, LogWarn, msg)}
}

// StopNight skips every job that has not started and tells the operator
// now; the running ones are let finish.
func (p *Plan) StopNight(now time.Time, class, reason string) []Action {
	if p.stopped != "" {
		return nil
	}
	acts := []Action{p.record(now, journal.Event{Type: journal.NightStopped, Class: class, Reason: reason},
		LogError, "the night stops: the agent's login was refused")}
	acts = append(acts, p.skipWaiting(now, p.stopped)...)
	return append(acts, NotifyNow{Reason: reason})
}

// paused says whether the night starts nothing now, ending a pause whose
// time came or asking for a check of the API. It also holds the deadline
// and the outage's bound against the pause: when the pause ends past the
// deadline, or the API stayed away too long, every waiting job is skipped
// and the night goes on with what runs (the pause itself is not ended: a
// retry of what runs would meet it too).
func (p *Plan) paused(now time.Time) (acts []Action, paused bool) {
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
		return []Action{CheckAPI{}}, true
	}
	if now.Before(np.Until) {
		return nil, true
	}
	return []Action{p.record(now, journal.Event{Type: journal.NightResumed, Class: string(np.Class),
		Reason: "the pause ended at " + np.Until.Local().Format("15:04:05")},
		LogInfo, "the night goes on after its pause")}, false
}

// apiChecked ends the outage when the API answered, or sets the next
// check further off.
func (p *Plan) apiChecked(now time.Time, ev APIChecked) []Action {
	np := p.pause
	if np == nil || np.Class != modelapi.Unavailable {
		return nil
	}
	np.checking = false
	if !ev.OK {
		np.CheckFailed(now, p.rules.waits)
		return nil
	}
	return []Action{p.record(now, journal.Event{Type: journal.NightResumed, Class: string(np.Class),
		Reason: fmt.Sprintf("the API answers again after %s", now.Sub(np.Since).Round(time.Second))},
		LogInfo, "the API answers again; the night goes on")}
}
