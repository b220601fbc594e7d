package supervisor

import (
	"fmt"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/session"
)

// The night's rules for an attempt that failed on the model's API or the
// CLI's limits (session.ClassifyAPIFailure), beside the job rules of
// plan.go and as pure as they are:
//
//	class                 attempt spent         the night
//	usage-limit           no                    pauses until the reset time (a bounded wait when none is given)
//	rate-limit            no                    backs off (a pause that doubles, bounded)
//	api-unavailable       once per outage       waits until a cheap check says the API answers (backoff, bounded)
//	invalid-credentials   yes (the job fails)   stops: every remaining job is skipped, the operator told at once
//	max-turns             yes                   nothing: the job's own failure, retried as any
//	context-too-long      yes                   nothing: the job's own failure, retried as any
//
// A pause starts no new session; running ones are let finish. The
// deadline still holds: a pause that ends past it skips the rest.

// spendRule says whether an attempt that failed so counts against retries.
type spendRule int

const (
	spendAlways spendRule = iota
	spendNever
	spendOncePerOutage
)

// pauseRule says what the night does after such a failure.
type pauseRule int

const (
	pauseNone      pauseRule = iota
	pauseUntilTime           // until the reset time, or a bounded wait
	pauseBackoff             // a pause that doubles with each failure in a row
	pauseUntilAPI            // until a check says the API answers
	pauseStop                // the night stops
)

// apiRule is the night's rule for one failure class.
type apiRule struct {
	spend spendRule
	pause pauseRule
}

// apiRules is the table of the night's rules, by failure class. A class
// not listed (and session.NoAPIFailure) is the job's own failure.
var apiRules = map[session.APIFailureClass]apiRule{
	session.FailureUsageLimit:         {spend: spendNever, pause: pauseUntilTime},
	session.FailureRateLimit:          {spend: spendNever, pause: pauseBackoff},
	session.FailureAPIUnavailable:     {spend: spendOncePerOutage, pause: pauseUntilAPI},
	session.FailureInvalidCredentials: {spend: spendAlways, pause: pauseStop},
	session.FailureMaxTurns:           {spend: spendAlways, pause: pauseNone},
	session.FailureContextTooLong:     {spend: spendAlways, pause: pauseNone},
}

// uncountedNote ends the reason of an attempt that is not counted.
const uncountedNote = " (the attempt is not counted)"

// maxFree bounds the attempts of one job that are not counted (usage
// limits, rate limits, repeated failures in one outage): a limit that
// never lifts ends in the job's retry rules, not in a loop.
const maxFree = 10

// APIWaits are the night's times for waiting on the API; zero fields take
// the batch's api: block, then the defaults (DefaultAPIWaits).
type APIWaits struct {
	// UsageWait is how long the night pauses on a usage limit that gave no
	// reset time; a session after it is the probe of the limit.
	UsageWait time.Duration
	// CheckMin and CheckMax bound the interval between checks of an API
	// that stopped answering (it doubles from CheckMin).
	CheckMin, CheckMax time.Duration
	// RateLimitMin and RateLimitMax bound the pause after a rate limit.
	RateLimitMin, RateLimitMax time.Duration
	// MaxOutage is how long the night waits for the API before it skips
	// the rest (the deadline may end it sooner).
	MaxOutage time.Duration
}

// DefaultAPIWaits are the times of a real night.
var DefaultAPIWaits = APIWaits{UsageWait: 30 * time.Minute, CheckMin: 15 * time.Second, CheckMax: 5 * time.Minute,
	RateLimitMin: time.Minute, RateLimitMax: 15 * time.Minute, MaxOutage: 6 * time.Hour}

// over sets w's zero fields from the batch's api: block (b).
func (w APIWaits) over(b jobs.APIWaits) APIWaits {
	for _, f := range []struct{ v, from *time.Duration }{{&w.UsageWait, &b.PauseWithoutReset},
		{&w.CheckMin, &b.CheckInterval}, {&w.CheckMax, &b.MaxCheckInterval}, {&w.RateLimitMin, &b.RateLimitPause},
		{&w.RateLimitMax, &b.MaxRateLimitPause}, {&w.MaxOutage, &b.MaxWait}} {
		if *f.v <= 0 {
			*f.v = *f.from
		}
	}
	return w
}

func (w APIWaits) withDefaults() APIWaits {
	d := DefaultAPIWaits
	for _, f := range []struct{ v, def *time.Duration }{{&w.UsageWait, &d.UsageWait}, {&w.CheckMin, &d.CheckMin},
		{&w.CheckMax, &d.CheckMax}, {&w.RateLimitMin, &d.RateLimitMin}, {&w.RateLimitMax, &d.RateLimitMax},
		{&w.MaxOutage, &d.MaxOutage}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	w.CheckMax = max(w.CheckMax, w.CheckMin)
	w.RateLimitMax = max(w.RateLimitMax, w.RateLimitMin)
	return w
}

// nightPause is the night not starting sessions.
type nightPause struct {
	class  session.APIFailureClass
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

// apiFailed applies the table to an attempt that failed with out.API: the
// job's next phase, the night's pause or stop, and what to record. ok is
// false for a failure the table leaves to the job rules.
func (p *plan) apiFailed(now time.Time, jp *jobPlan, base journal.Event, out session.Outcome) (acts []action, ok bool) {
	if out.API == nil {
		return nil, false
	}
	rule, known := apiRules[out.API.Class]
	if !known || (rule.spend == spendAlways && rule.pause == pauseNone) {
		return nil, false
	}
	class := out.API.Class
	base.Class = string(class)
	reason := out.Reason
	if reason == "" {
		reason = out.API.Reason
	}

	if rule.pause == pauseStop {
		base.Type, base.Status, base.Reason = journal.JobFinished, journal.Failed, reason
		acts = append(acts, p.record(now, base, logError, "failed: the agent's login was refused; the night stops"))
		return append(acts, p.stopNight(now, string(class), reason)...), true
	}

	// The outage this failure belongs to: the one the night waits out,
	// or a new one.
	outage := p.outages
	if rule.pause == pauseUntilAPI && (p.pause == nil || p.pause.class != session.FailureAPIUnavailable) {
		outage++
	}
	free := rule.spend == spendNever
	if rule.spend == spendOncePerOutage {
		free = jp.chargedOutage == outage
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
	return append(acts, p.pauseFor(now, rule.pause, class, reason, out.API.ResetAt)...), true
}

// pauseFor starts or extends the night's pause after a failure of class.
func (p *plan) pauseFor(now time.Time, rule pauseRule, class session.APIFailureClass, reason string, resetAt time.Time) []action {
	w := p.rules.waits
	np := &nightPause{class: class, reason: reason, since: now}
	switch rule {
	case pauseUntilTime:
		np.until = resetAt
		if !resetAt.After(now) {
			np.until, np.backoff = now.Add(w.UsageWait), w.UsageWait
		}
	case pauseBackoff:
		np.backoff = w.RateLimitMin
		if p.pause != nil && p.pause.class == class {
			np.backoff = min(2*p.pause.backoff, w.RateLimitMax)
		}
		np.until = now.Add(np.backoff)
	case pauseUntilAPI:
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
		if old.class == session.FailureUsageLimit && class != session.FailureUsageLimit && old.until.After(np.until) {
			return nil // the usage limit outlasts it
		}
	}
	// apply keeps the start of a pause of the same class.
	ev := journal.Event{Type: journal.NightPaused, Class: string(class), Reason: reason}
	msg := "the night waits for the API to answer again"
	if rule != pauseUntilAPI {
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
	if d := p.rules.deadline; !d.IsZero() && np.class != session.FailureAPIUnavailable && !np.until.Before(d) {
		return p.skipWaiting(now, fmt.Sprintf("the night paused until %s (%s: %s), past the deadline %s",
			np.until.Local().Format("15:04"), np.class, np.reason, d.Format("15:04"))), false
	}
	if np.class == session.FailureAPIUnavailable {
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
	if np == nil || np.class != session.FailureAPIUnavailable {
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
