package healthcheck

import (
	"time"
)

// Settings are the numbers of the state machine. The defaults are the
// article's: they were tuned on real nights.
type Settings struct {
	// TTL is how long a healthy verdict is trusted without a new probe.
	TTL time.Duration
	// Backoff is the first wait after a failure; it doubles per failure.
	Backoff time.Duration
	// MaxBackoff caps the doubling.
	MaxBackoff time.Duration
	// MaxRetryAfter caps a server's Retry-After, so a hostile or broken
	// answer ("Retry-After: 99999999") cannot block a server for days.
	MaxRetryAfter time.Duration
}

// DefaultSettings returns the article's numbers: TTL 2 min, backoff 30 s
// doubling to 10 min.
func DefaultSettings() Settings {
	return Settings{TTL: 2 * time.Minute, Backoff: 30 * time.Second,
		MaxBackoff: 10 * time.Minute, MaxRetryAfter: time.Hour}
}

// BackoffFor is the wait after the n-th consecutive failure (n ≥ 1):
// Backoff·2^(n-1), capped at MaxBackoff.
func (s Settings) BackoffFor(failures int) time.Duration {
	if failures < 1 {
		failures = 1
	}
	d := s.Backoff
	for i := 1; i < failures; i++ {
		if d >= s.MaxBackoff/2 {
			return s.MaxBackoff
		}
		d *= 2
	}
	if d > s.MaxBackoff {
		return s.MaxBackoff
	}
	return d
}

// Gate is what the cache alone says about a call.
type Gate int

const (
	// GateProbe: the cache cannot decide (no entry, TTL or backoff over).
	GateProbe Gate = iota
	// GateAllow: healthy and within TTL.
	GateAllow
	// GateBlock: unhealthy and within backoff.
	GateBlock
)

func (g Gate) String() string {
	switch g {
	case GateAllow:
		return "allow"
	case GateBlock:
		return "block"
	default:
		return "probe"
	}
}

// GateOf applies the article's two gates to e at now. A nil entry (never
// seen) needs a probe.
func GateOf(e *Entry, now time.Time) Gate {
	if e == nil {
		return GateProbe
	}
	ms := MillisOf(now)
	switch e.Status {
	case StatusHealthy:
		if e.ExpiresAt > ms {
			return GateAllow
		}
	case StatusUnhealthy:
		if e.NextRetryAt > ms {
			return GateBlock
		}
	}
	return GateProbe
}

// Stuck reports an entry the article's trap leaves behind: unhealthy with
// the backoff pinned at its cap, so recovery is only seen every MaxBackoff.
func (s Settings) Stuck(e *Entry) bool {
	return e != nil && e.Status == StatusUnhealthy && e.FailureCount > 1 &&
		s.BackoffFor(e.FailureCount) >= s.MaxBackoff
}

// Restore ways, for RestoredBy.
const (
	RestoredByProbe     = "probe"
	RestoredByReconnect = "reconnect"
	RestoredByPassive   = "passive"
)

// MarkHealthy records a verdict that proves the server can be called.
// It returns the new entry; prev may be nil.
func (s Settings) MarkHealthy(prev *Entry, now time.Time, restoredBy string) Entry {
	var e Entry
	if prev != nil {
		e = *prev
	}
	ms := MillisOf(now)
	wasUnhealthy := prev != nil && prev.Status == StatusUnhealthy
	e.Status = StatusHealthy
	e.CheckedAt = ms
	e.ExpiresAt = MillisOf(now.Add(s.TTL))
	e.FailureCount = 0
	e.LastError = ""
	e.LastFailureCode = ""
	e.NextRetryAt = ms
	e.UnhealthySince = 0
	e.TrialAt = 0
	if wasUnhealthy || prev == nil {
		e.LastRestoredAt = ms
		e.RestoredBy = restoredBy
	}
	return e
}

// Failure is what made a server unhealthy.
type Failure struct {
	Code   FailureCode
	Reason string
	// RetryAfter, when the server sent one, replaces the backoff (a
	// rate-limited server says itself when to come back).
	RetryAfter time.Duration
}

// MarkUnhealthy records a failure: one more consecutive failure, and the
// next retry after the backoff (or the server's Retry-After).
func (s Settings) MarkUnhealthy(prev *Entry, now time.Time, f Failure) Entry {
	var e Entry
	if prev != nil {
		e = *prev
	}
	ms := MillisOf(now)
	if prev == nil || prev.Status != StatusUnhealthy || e.UnhealthySince == 0 {
		e.UnhealthySince = ms
	}
	e.Status = StatusUnhealthy
	e.CheckedAt = ms
	e.ExpiresAt = ms
	e.FailureCount++
	e.LastError = f.Reason
	e.LastFailureCode = f.Code
	wait := s.BackoffFor(e.FailureCount)
	if f.RetryAfter > 0 {
		wait = min(f.RetryAfter, s.MaxRetryAfter)
	}
	e.NextRetryAt = MillisOf(now.Add(wait))
	return e
}

// Postpone keeps a server unhealthy without counting a new failure: used
// when a probe cannot tell (an auth-guarded server after a failed call) and
// one trial call is let through instead.
func (s Settings) Postpone(prev Entry, now time.Time) Entry {
	prev.CheckedAt = MillisOf(now)
	prev.TrialAt = MillisOf(now)
	prev.NextRetryAt = MillisOf(now.Add(s.BackoffFor(prev.FailureCount)))
	return prev
}
