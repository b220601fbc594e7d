package healthcheck

import (
	"time"
)

// This file is the whole state machine of one server, in the manner of
// sony/gobreaker: the states, the settings whose numbers drive them, the
// gate that answers "may this call go ahead?" from the cache alone, and
// every transition as a pure function of the previous entry and the time.
//
//	CLOSED (healthy)
//	  │  the client's own failure (closed connection, refused, HTTP error)  ──► OPEN   MarkUnhealthy
//	  │  a failed probe                                                       ──► OPEN   MarkUnhealthy
//	  │  an upstream failure (5xx, 429, timed out, …)                         ──► CLOSED CountFailure, count+1
//	  │  the FailureThreshold-th upstream failure in a row                    ──► OPEN   CountFailure (witness calls)
//	  │  a successful call                                                    ──► CLOSED MarkHealthy, count reset
//	  │  TTL over                                                             ──► one probe (GateProbe)
//	OPEN (unhealthy, within backoff): every call blocked                    ──► HALF-OPEN when the backoff is over
//	HALF-OPEN
//	  │  witness probe: one probe (one hook at a time, the probe lock)
//	  │      healthy ──► CLOSED (ProbeHealthy)       failed ──► OPEN, next backoff
//	  │  witness calls: one trial call (one across sessions, StartTrial under the cache lock)
//	  │      works   ──► CLOSED (MarkHealthy)        fails  ──► OPEN, next backoff (CountFailure)
//	  │      a healthy probe changes nothing (ProbeHealthy)

// Status is the state a server is in, as the article's file writes it.
type Status string

const (
	StatusHealthy   Status = "healthy"
	StatusUnhealthy Status = "unhealthy"
)

// State is where a server stands in the breaker at a given time.
type State int

const (
	// StateClosed: healthy; calls go ahead (a probe refreshes the verdict
	// once its TTL is over).
	StateClosed State = iota
	// StateOpen: unhealthy and within its backoff; calls are blocked.
	StateOpen
	// StateHalfOpen: unhealthy and the backoff is over; one probe or one
	// trial call decides.
	StateHalfOpen
)

func (s State) String() string {
	switch s {
	case StateOpen:
		return "open"
	case StateHalfOpen:
		return "half-open"
	default:
		return "closed"
	}
}

// StateOf is e's state at now. A server never seen is closed.
func StateOf(e *Entry, now time.Time) State {
	if e == nil || e.Status != StatusUnhealthy {
		return StateClosed
	}
	if e.NextRetryAt > MillisOf(now) {
		return StateOpen
	}
	return StateHalfOpen
}

// Witness says what saw an outage, and so what can end it.
type Witness string

const (
	// WitnessProbe: the handshake sees the outage (the process is gone,
	// the endpoint answers 503): a healthy probe ends it.
	WitnessProbe Witness = ""
	// WitnessCalls: only real calls see it (an upstream behind a working
	// handshake, a session's own credentials, a server nightwatch has no
	// definition of): only a trial call that works ends it.
	WitnessCalls Witness = "calls"
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
	// FailureThreshold is how many failed calls in a row, each naming a
	// server or upstream condition, open a server (gobreaker's
	// ReadyToTrip, Envoy's consecutive_5xx). 0 means DefaultFailureThreshold.
	FailureThreshold int
	// ClientStartup is how long Claude Code waits for an MCP server to
	// connect (MCP_TIMEOUT, 30 s by default). A stdio probe that ran out of
	// a shorter budget proves nothing against it: the server may only be
	// slow to start, and Claude Code would have waited.
	ClientStartup time.Duration
}

// DefaultClientStartup is Claude Code's MCP_TIMEOUT default.
const DefaultClientStartup = 30 * time.Second

// DefaultFailureThreshold opens a server at its third upstream failure in
// a row: one or two are the noise of a busy upstream, three are a pattern.
const DefaultFailureThreshold = 3

// DefaultSettings returns the article's numbers: TTL 2 min, backoff 30 s
// doubling to 10 min; and three upstream failures in a row open a server.
func DefaultSettings() Settings {
	return Settings{TTL: 2 * time.Minute, Backoff: 30 * time.Second,
		MaxBackoff: 10 * time.Minute, MaxRetryAfter: time.Hour, FailureThreshold: DefaultFailureThreshold,
		ClientStartup: DefaultClientStartup}
}

// withDefaults fills the zero fields, so a Settings built by hand (the
// supervisor's, until it calls New) behaves like DefaultSettings there.
func (s Settings) withDefaults() Settings {
	d := DefaultSettings()
	if s.TTL <= 0 {
		s.TTL = d.TTL
	}
	if s.Backoff <= 0 {
		s.Backoff = d.Backoff
	}
	if s.MaxBackoff < s.Backoff {
		s.MaxBackoff = max(d.MaxBackoff, s.Backoff)
	}
	if s.MaxRetryAfter <= 0 {
		s.MaxRetryAfter = d.MaxRetryAfter
	}
	if s.FailureThreshold <= 0 {
		s.FailureThreshold = d.FailureThreshold
	}
	if s.ClientStartup <= 0 {
		s.ClientStartup = d.ClientStartup
	}
	return s
}

// ReadyToTrip says whether consecutive upstream failures open a server.
func (s Settings) ReadyToTrip(consecutive int) bool {
	return consecutive >= s.withDefaults().FailureThreshold
}

// BackoffFor is the wait after the n-th consecutive failure (n ≥ 1):
// Backoff·2^(n-1), capped at MaxBackoff.
func (s Settings) BackoffFor(failures int) time.Duration {
	s = s.withDefaults()
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
	// GateTrial: half-open after an outage only calls can see: one call
	// may go through as the trial (StartTrial).
	GateTrial
)

func (g Gate) String() string {
	switch g {
	case GateAllow:
		return "allow"
	case GateBlock:
		return "block"
	case GateTrial:
		return "trial"
	default:
		return "probe"
	}
}

// GateOf applies the article's two gates to e at now, and the half-open
// rule: an outage only calls can see is ended by a trial call, not a probe.
// A nil entry (never seen) needs a probe.
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
		if e.Witness == WitnessCalls {
			return GateTrial
		}
	}
	return GateProbe
}

// Stuck reports an entry the article's trap leaves behind: unhealthy with
// the backoff pinned at its cap, so recovery is only seen every MaxBackoff.
func (s Settings) Stuck(e *Entry) bool {
	s = s.withDefaults()
	return e != nil && e.Status == StatusUnhealthy && e.FailureCount > 1 &&
		s.BackoffFor(e.FailureCount) >= s.MaxBackoff
}

// Restore ways, for RestoredBy: the observers that can close an outage.
const (
	RestoredByProbe     = string(ByProbe)
	RestoredByReconnect = string(ByReconnect)
	RestoredByPassive   = string(ByPassive)
)

// MarkHealthy records a verdict that proves the server can be called
// (closed). It returns the new entry; prev may be nil. The consecutive
// count survives a healthy probe of a healthy server (a handshake cannot
// see an upstream); only a change of state or a successful call
// (RestoredByPassive) resets it.
func (s Settings) MarkHealthy(prev *Entry, now time.Time, restoredBy string) Entry {
	var e Entry
	if prev != nil {
		e = *prev
	}
	ms := MillisOf(now)
	wasUnhealthy := prev != nil && prev.Status == StatusUnhealthy
	e.Status = StatusHealthy
	e.CheckedAt = ms
	e.ExpiresAt = MillisOf(now.Add(s.withDefaults().TTL))
	e.FailureCount = 0
	e.LastError = ""
	e.LastFailureCode = ""
	e.articleCode = ""
	e.NextRetryAt = ms
	e.UnhealthySince = 0
	e.TrialAt = 0
	e.HoldGaveUpAt = 0
	e.Witness = WitnessProbe
	if wasUnhealthy || restoredBy == RestoredByPassive {
		e.ConsecutiveFailures = 0
	}
	if wasUnhealthy || prev == nil {
		e.LastRestoredAt = ms
		e.RestoredBy = restoredBy
	}
	return e
}

// ProbeHealthy records a healthy probe. It closes an outage the handshake
// saw; an outage only calls can see (WitnessCalls) stays as it is, since a
// working handshake says nothing about it: its trial call decides.
func (s Settings) ProbeHealthy(prev *Entry, now time.Time, restoredBy string) Entry {
	if prev != nil && prev.Status == StatusUnhealthy && prev.Witness == WitnessCalls {
		e := *prev
		e.CheckedAt = MillisOf(now)
		return e
	}
	return s.MarkHealthy(prev, now, restoredBy)
}

// Failure is what made a server unhealthy.
type Failure struct {
	Code   FailureCode
	Reason string
	// RetryAfter, when the server sent one, replaces the backoff (a
	// rate-limited server says itself when to come back).
	RetryAfter time.Duration
	// Witness says what saw it; see Witness.
	Witness Witness
	// RefusedBy, when set, says what found the server's address refusing
	// connections (ByProbe: the dialer's ECONNREFUSED; ByCallFailure: the
	// client's own "Unable to connect" for a call): nothing listened there.
	RefusedBy By
}

// MarkUnhealthy opens a server: one more consecutive failure, and the
// next retry after the backoff (or the server's Retry-After).
func (s Settings) MarkUnhealthy(prev *Entry, now time.Time, f Failure) Entry {
	var e Entry
	if prev != nil {
		e = *prev
	}
	ms := MillisOf(now)
	if prev == nil || prev.Status != StatusUnhealthy || e.UnhealthySince == 0 {
		e.UnhealthySince = ms
		e.HoldGaveUpAt = 0
		e.RefusedAt, e.RefusedBy = 0, "" // a new outage: only its own refusals count
	}
	e.noteRefused(ms, f.RefusedBy)
	e.Status = StatusUnhealthy
	e.CheckedAt = ms
	e.ExpiresAt = ms
	e.FailureCount = saturatingInc(e.FailureCount)
	e.LastError = f.Reason
	e.LastFailureCode = f.Code
	e.articleCode = ""
	e.ConsecutiveFailures = 0
	e.TrialAt = 0
	e.Witness = f.Witness
	wait := s.BackoffFor(e.FailureCount)
	if f.RetryAfter > 0 {
		wait = min(f.RetryAfter, s.withDefaults().MaxRetryAfter)
	}
	e.NextRetryAt = MillisOf(now.Add(wait))
	return e
}

// CountFailure is a failed call whose text names a server or upstream
// condition but which the client itself did not see fail (passive outlier
// detection). A closed server counts it and opens at the threshold; a
// server in its trial call reopens with the next backoff (half-open →
// open); a server already open stays as it is. opened says whether the
// entry changed to unhealthy or was reopened.
func (s Settings) CountFailure(prev *Entry, now time.Time, f Failure) (e Entry, opened bool) {
	f.Witness = WitnessCalls
	switch {
	case prev == nil || prev.Status != StatusUnhealthy:
		if prev != nil {
			e = *prev
		}
		n := saturatingInc(e.ConsecutiveFailures)
		if s.ReadyToTrip(n) {
			return s.MarkUnhealthy(prev, now, f), true
		}
		if prev == nil {
			// A first sight of the server: not a verdict of health, only
			// the start of a count (expired, so the next call is checked).
			e.Status = StatusHealthy
			e.CheckedAt = MillisOf(now)
			e.ExpiresAt = MillisOf(now)
			e.NextRetryAt = MillisOf(now)
		}
		e.ConsecutiveFailures = n
		return e, false
	case prev.TrialAt != 0:
		return s.MarkUnhealthy(prev, now, f), true
	default:
		return *prev, false
	}
}

// StartTrial lets one call through a half-open server whose outage only
// calls can see. The server stays unhealthy, and its retry time moves one
// backoff ahead, so every other call (in every session) is blocked while
// the trial runs; a trial whose result never comes (the session was
// killed) is followed by another after that backoff.
func (s Settings) StartTrial(prev Entry, now time.Time) Entry {
	prev.CheckedAt = MillisOf(now)
	prev.TrialAt = MillisOf(now)
	prev.NextRetryAt = MillisOf(now.Add(s.BackoffFor(prev.FailureCount)))
	return prev
}

// noteRefused records the first refused connection of an outage.
func (e *Entry) noteRefused(at Millis, by By) {
	if by != "" && e.RefusedAt == 0 {
		e.RefusedAt, e.RefusedBy = at, by
	}
}
