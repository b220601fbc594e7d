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

// nightPause is the night not starting sessions.
type nightPause struct {
	class  modelapi.Class
	reason string
	since  time.Time
	// until is when it ends (usage and rate limits) or when the API is
	// checked next (api-unavailable).
	until time.Time
	// backoff is the interval that led to until.
	backoff time.Duration
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

// apiTrial is the breaker's half-open state for the model's API. The
// check is an unauthenticated empty POST; an edge that authenticates
// before it schedules answers it 401 while every real request gets 529.
// So a passing check ends the pause but not the outage: one session is
// the trial and the others wait until the API answers a real request
// (any running attempt's model turn, evModelTurn) or the trial ends on
// its own terms. A trial that fails on the API's outage is that same
// outage (no new charge against any job, the trial's job not charged at
// all): the night waits again, from the outage's start. The trial is
// not journaled: a resumed night folds NightResumed into a trial again,
// and its first session is the trial.
type apiTrial struct {
	since time.Time // the outage's start
	// job and attempt are the trial attempt's; "" until one starts.
	job     string
	attempt int
}

// evModelTurn: a running attempt's session got its first answer from the
// model's API.
type evModelTurn struct {
	job     string
	attempt int
}

func (evModelTurn) isEvent() {}

// trialOut says whether the night starts nothing more until its trial
// session hears from the API.
func (p *plan) trialOut() bool { return p.trial != nil && p.trial.job != "" }

// modelAnswered ends a trial: the API serves real requests.
func (p *plan) modelAnswered() { p.trial = nil }

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
	if rule.Pause == modelapi.PauseUntilAPI && (p.pause == nil || p.pause.class != modelapi.Unavailable) && trial == nil {
		outage++
	}
	free := rule.Spend == modelapi.SpendNever
	if rule.Spend == modelapi.SpendOncePerOutage {
		// The trial attempt is the night's probe of the API, not the job's.
		isTrial := trial != nil && trial.job == jp.job.Name && trial.attempt == jp.attempts
		free = jp.chargedOutage == outage || isTrial
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

// pauseFor starts or extends the night's pause after a failure of class.
func (p *plan) pauseFor(now time.Time, rule modelapi.Pause, class modelapi.Class, reason string, resetAt time.Time) []action {
	w := p.rules.waits
	np := &nightPause{class: class, reason: reason, since: now}
	switch rule {
	case modelapi.PauseUntilTime:
		np.until, np.backoff = resetAt, resetAt.Sub(now)
		switch {
		case resetAt.IsZero():
			np.until, np.backoff = now.Add(w.UsageWait), w.UsageWait
		case !resetAt.After(now):
			// The reset time just passed (modelapi.JustPassed): the limit
			// should be gone; try again soon, and wait longer each time it
			// is not, up to the wait for a limit without a reset time.
			np.backoff = w.CheckMin
			if p.pause != nil && p.pause.class == class && p.pause.backoff > 0 {
				np.backoff = min(2*p.pause.backoff, w.UsageWait)
			}
			np.until = now.Add(np.backoff)
		}
	case modelapi.PauseBackoff:
		np.backoff = w.RateLimitMin
		if p.pause != nil && p.pause.class == class {
			np.backoff = min(2*p.pause.backoff, w.RateLimitMax)
		}
		np.until = now.Add(np.backoff)
	case modelapi.PauseUntilAPI:
		if p.pause != nil && p.pause.class == class {
			return nil // the outage the night already waits out
		}
		np.backoff = w.CheckMin
		np.until = now.Add(np.backoff)
	default:
		return nil
	}
	if old := p.pause; old != nil {
		if old.class == class && !np.until.After(old.until) {
			return nil // already paused at least as long
		}
		if old.class == modelapi.UsageLimit && class != modelapi.UsageLimit && old.until.After(np.until) {
			return nil // the usage limit outlasts it
		}
	}
	// apply keeps the start of a pause of the same class.
	ev := journal.Event{Type: journal.NightPaused, Class: string(class), Reason: reason}
	msg := "the night waits for the API to answer again"
	if rule != modelapi.PauseUntilAPI {
		ev.Until = np.until
		msg = "the night pauses until " + np.until.Local().Format("15:04:05")
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
	if d := p.rules.deadline; !d.IsZero() && np.class != modelapi.Unavailable && !np.until.Before(d) {
		return p.skipWaiting(now, fmt.Sprintf("the night paused until %s (%s: %s), past the deadline %s",
			np.until.Local().Format("15:04"), np.class, np.reason, d.Format("15:04"))), false
	}
	if np.class == modelapi.Unavailable {
		if now.Sub(np.since) >= p.rules.waits.MaxOutage {
			return p.skipWaiting(now, fmt.Sprintf("the API did not answer for %s: %s", p.rules.waits.MaxOutage, np.reason)), false
		}
		if np.checking || now.Before(np.until) {
			return nil, true
		}
		np.checking = true
		return []action{actCheckAPI{}}, true
	}
	if now.Before(np.until) {
		return nil, true
	}
	return []action{p.record(now, journal.Event{Type: journal.NightResumed, Class: string(np.class),
		Reason: "the pause ended at " + np.until.Local().Format("15:04:05")},
		logInfo, "the night goes on after its pause")}, false
}

// apiChecked ends the outage when the API answered, or sets the next
// check further off.
func (p *plan) apiChecked(now time.Time, ev evAPI) []action {
	np := p.pause
	if np == nil || np.class != modelapi.Unavailable {
		return nil
	}
	np.checking = false
	if !ev.ok {
		np.backoff = min(2*np.backoff, p.rules.waits.CheckMax)
		np.until = now.Add(np.backoff)
		return nil
	}
	return []action{p.record(now, journal.Event{Type: journal.NightResumed, Class: string(np.class),
		Reason: fmt.Sprintf("the API answers again after %s", now.Sub(np.since).Round(time.Second))},
		logInfo, "the API answers again; the night goes on")}
}
