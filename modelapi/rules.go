package modelapi

import (
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
)

// The night's rules for an attempt that failed on the model's API or the
// CLI's limits (Classify), pure; the supervisor's plan applies them:
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

// Spend says whether an attempt that failed so counts against retries.
type Spend int

const (
	SpendAlways Spend = iota
	SpendNever
	SpendOncePerOutage
)

// Pause says what the night does after such a failure.
type Pause int

const (
	PauseNone      Pause = iota
	PauseUntilTime       // until the reset time, or a bounded wait
	PauseBackoff         // a pause that doubles with each failure in a row
	PauseUntilAPI        // until a check says the API answers
	PauseStop            // the night stops
)

// Rule is the night's rule for one failure class.
type Rule struct {
	Spend Spend
	Pause Pause
}

// rules is the table of the night's rules, by failure class. A class not
// listed (and NoFailure) is the job's own failure.
var rules = map[Class]Rule{
	UsageLimit:         {Spend: SpendNever, Pause: PauseUntilTime},
	RateLimit:          {Spend: SpendNever, Pause: PauseBackoff},
	Unavailable:        {Spend: SpendOncePerOutage, Pause: PauseUntilAPI},
	InvalidCredentials: {Spend: SpendAlways, Pause: PauseStop},
	MaxTurns:           {Spend: SpendAlways, Pause: PauseNone},
	ContextTooLong:     {Spend: SpendAlways, Pause: PauseNone},
}

// RuleFor is the night's rule for class; ok is false for a class the
// table does not know (the job's own failure).
func RuleFor(class Class) (rule Rule, ok bool) {
	rule, ok = rules[class]
	return rule, ok
}

// Waits are the night's times for waiting on the API; zero fields take
// the batch's api: block (Over), then the defaults (WithDefaults).
type Waits struct {
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

// DefaultWaits are the times of a real night.
var DefaultWaits = Waits{UsageWait: 30 * time.Minute, CheckMin: 15 * time.Second, CheckMax: 30 * time.Second,
	RateLimitMin: time.Minute, RateLimitMax: 15 * time.Minute, MaxOutage: 6 * time.Hour}

// Over sets w's zero fields from the batch's api: block (b).
func (w Waits) Over(b jobs.APIWaits) Waits {
	for _, f := range []struct{ v, from *time.Duration }{{&w.UsageWait, &b.PauseWithoutReset},
		{&w.CheckMin, &b.CheckInterval}, {&w.CheckMax, &b.MaxCheckInterval}, {&w.RateLimitMin, &b.RateLimitPause},
		{&w.RateLimitMax, &b.MaxRateLimitPause}, {&w.MaxOutage, &b.MaxWait}} {
		if *f.v <= 0 {
			*f.v = *f.from
		}
	}
	return w
}

// WithDefaults sets w's zero fields from DefaultWaits, and raises each
// maximum to at least its minimum.
func (w Waits) WithDefaults() Waits {
	d := DefaultWaits
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
