package modelapi

import "time"

// Wait is the night waiting on the model's API, as the rules see it: the
// class it waits out, since when, until when (the pause's end, or the
// next check of an API that does not answer) and the interval that led to
// Until. Which jobs wait, and what a failure costs them, is the
// supervisor's plan's.
type Wait struct {
	Class   Class
	Since   time.Time
	Until   time.Time
	Backoff time.Duration
}

// Start is the wait after an attempt failed at now with class, whose rule
// pauses the night (rule; resetAt is the limit's reset time, zero when none
// was given), while the night waits cur (nil: it does not). ok is false
// when no new wait starts: the rule does not pause, the night already
// waits out this outage, or cur ends as late or outlasts it (a usage limit
// outlasts any other pause).
func (w Waits) Start(now time.Time, cur *Wait, rule Pause, class Class, resetAt time.Time) (next Wait, ok bool) {
	next = Wait{Class: class, Since: now}
	same := cur != nil && cur.Class == class
	switch rule {
	case PauseUntilTime:
		next.Until, next.Backoff = resetAt, resetAt.Sub(now)
		switch {
		case resetAt.IsZero():
			next.Until, next.Backoff = now.Add(w.UsageWait), w.UsageWait
		case !resetAt.After(now):
			// The reset time just passed (JustPassed): the limit should
			// be gone; try again soon, and wait longer each time it is
			// not, up to the wait for a limit without a reset time.
			next.Backoff = w.CheckMin
			if same && cur.Backoff > 0 {
				next.Backoff = min(2*cur.Backoff, w.UsageWait)
			}
			next.Until = now.Add(next.Backoff)
		}
	case PauseBackoff:
		next.Backoff = w.RateLimitMin
		if same {
			next.Backoff = min(2*cur.Backoff, w.RateLimitMax)
		}
		next.Until = now.Add(next.Backoff)
	case PauseUntilAPI:
		if same {
			return Wait{}, false // the outage the night already waits out
		}
		next.Backoff = w.CheckMin
		next.Until = now.Add(next.Backoff)
	default:
		return Wait{}, false
	}
	if cur != nil {
		if same && !next.Until.After(cur.Until) {
			return Wait{}, false // already paused at least as long
		}
		if cur.Class == UsageLimit && class != UsageLimit && cur.Until.After(next.Until) {
			return Wait{}, false // the usage limit outlasts it
		}
	}
	return next, true
}

// Recorded is the wait a journaled pause stands for: of class, from at,
// until until (zero for an API that does not answer, which is first
// checked after CheckMin). ok is false for a pause without its end, which
// the night does not wait for.
func (w Waits) Recorded(class Class, at, until time.Time) (Wait, bool) {
	switch {
	case class == Unavailable:
		return Wait{Class: class, Since: at, Until: at.Add(w.CheckMin), Backoff: w.CheckMin}, true
	case until.IsZero():
		return Wait{}, false
	}
	return Wait{Class: class, Since: at, Until: until, Backoff: until.Sub(at)}, true
}

// CheckFailed sets the next check of an API that did not answer the one
// at now: the interval doubles, up to CheckMax (about 30 s by default, so
// the night goes on within seconds of the API's return).
func (wt *Wait) CheckFailed(now time.Time, w Waits) {
	wt.Backoff = min(2*wt.Backoff, w.CheckMax)
	wt.Until = now.Add(wt.Backoff)
}

// TooLong says whether the API stayed away longer than the night waits
// for it (MaxOutage).
func (wt *Wait) TooLong(now time.Time, w Waits) bool {
	return wt.Class == Unavailable && now.Sub(wt.Since) >= w.MaxOutage
}

// Trial is the breaker's half-open state for the model's API. The check
// is an unauthenticated empty POST; an edge that authenticates before it
// schedules answers it 401 while every real request gets 529. So a
// passing check ends the pause but not the outage: one session is the
// trial and the others wait until the API answers a real request (any
// running session's first model turn) or the trial ends on its own terms.
// A trial that fails on the API's outage is that same outage (the night
// waits again, from the outage's Since).
type Trial struct {
	Since time.Time // the outage's start
	// Job and Attempt are the trial attempt's; "" until one starts.
	Job     string
	Attempt int
}

// Out says whether the trial's session runs: the night starts nothing
// more until it hears from the API.
func (t *Trial) Out() bool { return t != nil && t.Job != "" }

// Is says whether attempt of job is the trial.
func (t *Trial) Is(job string, attempt int) bool {
	return t != nil && t.Job == job && t.Attempt == attempt
}
