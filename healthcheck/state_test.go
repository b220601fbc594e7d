package healthcheck

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

func TestBackoffDoublesToCap(t *testing.T) {
	s := DefaultSettings()
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{0, 30 * time.Second}, {1, 30 * time.Second}, {2, time.Minute}, {3, 2 * time.Minute},
		{4, 4 * time.Minute}, {5, 8 * time.Minute}, {6, 10 * time.Minute}, {60, 10 * time.Minute},
		{1 << 30, 10 * time.Minute},
	}
	for _, tt := range tests {
		if got := s.BackoffFor(tt.failures); got != tt.want {
			t.Errorf("BackoffFor(%d) = %s, want %s", tt.failures, got, tt.want)
		}
	}
}

func TestGates(t *testing.T) {
	ms := MillisOf(t0)
	tests := []struct {
		name  string
		entry *Entry
		want  Gate
	}{
		{"never seen", nil, GateProbe},
		{"healthy within TTL", &Entry{Status: StatusHealthy, ExpiresAt: ms + 1}, GateAllow},
		{"healthy TTL over", &Entry{Status: StatusHealthy, ExpiresAt: ms}, GateProbe},
		{"unhealthy within backoff", &Entry{Status: StatusUnhealthy, NextRetryAt: ms + 1}, GateBlock},
		{"unhealthy backoff over", &Entry{Status: StatusUnhealthy, NextRetryAt: ms}, GateProbe},
		{"unknown status", &Entry{Status: "weird", ExpiresAt: ms + 1000, NextRetryAt: ms + 1000}, GateProbe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GateOf(tt.entry, t0); got != tt.want {
				t.Errorf("GateOf = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestTransitions(t *testing.T) {
	s := DefaultSettings()
	e := s.MarkUnhealthy(nil, t0, Failure{Code: CodeTransport, Reason: "refused"})
	if e.Status != StatusUnhealthy || e.FailureCount != 1 || e.NextRetryAt != MillisOf(t0.Add(30*time.Second)) ||
		e.UnhealthySince != MillisOf(t0) || e.LastFailureCode != CodeTransport {
		t.Fatalf("first failure: %+v", e)
	}
	t1 := t0.Add(time.Minute)
	e = s.MarkUnhealthy(&e, t1, Failure{Code: CodeUnavailable, Reason: "503"})
	if e.FailureCount != 2 || e.NextRetryAt != MillisOf(t1.Add(time.Minute)) || e.UnhealthySince != MillisOf(t0) {
		t.Fatalf("second failure: %+v", e)
	}
	t2 := t1.Add(time.Minute)
	e = s.MarkUnhealthy(&e, t2, Failure{Code: CodeRateLimited, RetryAfter: 7 * time.Second})
	if e.NextRetryAt != MillisOf(t2.Add(7*time.Second)) {
		t.Fatalf("Retry-After must replace the backoff: %+v", e)
	}
	e = s.MarkUnhealthy(&e, t2, Failure{Code: CodeRateLimited, RetryAfter: 1000 * time.Hour})
	if e.NextRetryAt != MillisOf(t2.Add(time.Hour)) {
		t.Fatalf("Retry-After must be capped: %+v", e)
	}
	t3 := t2.Add(time.Minute)
	h := s.MarkHealthy(&e, t3, RestoredByReconnect)
	if h.Status != StatusHealthy || h.FailureCount != 0 || h.LastError != "" || h.LastFailureCode != "" ||
		h.ExpiresAt != MillisOf(t3.Add(2*time.Minute)) || h.LastRestoredAt != MillisOf(t3) ||
		h.RestoredBy != RestoredByReconnect || h.UnhealthySince != 0 {
		t.Fatalf("restore: %+v", h)
	}
	// A refresh of a healthy server is not a restore.
	h2 := s.MarkHealthy(&h, t3.Add(time.Minute), RestoredByPassive)
	if h2.LastRestoredAt != MillisOf(t3) || h2.RestoredBy != RestoredByReconnect {
		t.Fatalf("refresh changed restore fields: %+v", h2)
	}
}

func TestStuck(t *testing.T) {
	s := DefaultSettings()
	var e *Entry
	for i := 0; i < 8; i++ {
		n := s.MarkUnhealthy(e, t0, Failure{Code: CodeUnavailable})
		e = &n
		if want := i >= 5; s.Stuck(e) != want {
			t.Errorf("after %d failures Stuck = %v, want %v", i+1, s.Stuck(e), want)
		}
	}
}

// TestBreakerTransitions is the state machine as a table: each row is a
// previous entry, one thing that happened at t0, and the state after.
func TestBreakerTransitions(t *testing.T) {
	s := DefaultSettings()
	ms := MillisOf(t0)
	upstream := Failure{Code: CodeUnavailable, Reason: "upstream returned 503"}
	closed := func(count int) *Entry {
		return &Entry{Status: StatusHealthy, ExpiresAt: ms + 60000, ConsecutiveFailures: count}
	}
	open := &Entry{Status: StatusUnhealthy, FailureCount: 1, NextRetryAt: ms + 1000, Witness: WitnessCalls}
	halfOpen := &Entry{Status: StatusUnhealthy, FailureCount: 1, NextRetryAt: ms, Witness: WitnessCalls}
	inTrial := &Entry{Status: StatusUnhealthy, FailureCount: 1, NextRetryAt: ms + 30000, TrialAt: ms, Witness: WitnessCalls}
	tests := []struct {
		name      string
		prev      *Entry
		happen    func(*Entry) Entry
		state     State
		gate      Gate
		count     int
		failures  int
		retryWait time.Duration
	}{
		{"first upstream failure counts", nil, func(p *Entry) Entry { e, _ := s.CountFailure(p, t0, upstream); return e }, StateClosed, GateProbe, 1, 0, 0},
		{"second counts", closed(1), func(p *Entry) Entry { e, _ := s.CountFailure(p, t0, upstream); return e }, StateClosed, GateAllow, 2, 0, 0},
		{"third trips", closed(2), func(p *Entry) Entry { e, _ := s.CountFailure(p, t0, upstream); return e }, StateOpen, GateBlock, 0, 1, 30 * time.Second},
		{"success resets", closed(2), func(p *Entry) Entry { return s.MarkHealthy(p, t0, RestoredByPassive) }, StateClosed, GateAllow, 0, 0, 0},
		{"healthy probe keeps the count", closed(2), func(p *Entry) Entry { return s.MarkHealthy(p, t0, RestoredByProbe) }, StateClosed, GateAllow, 2, 0, 0},
		{"open ignores stragglers", open, func(p *Entry) Entry { e, _ := s.CountFailure(p, t0, upstream); return e }, StateOpen, GateBlock, 0, 1, time.Second},
		{"half-open asks for a trial", halfOpen, func(p *Entry) Entry { return *p }, StateHalfOpen, GateTrial, 0, 1, 0},
		{"trial blocks the others", halfOpen, func(p *Entry) Entry { return s.StartTrial(*p, t0) }, StateOpen, GateBlock, 0, 1, 30 * time.Second},
		{"failed trial reopens with the next backoff", inTrial, func(p *Entry) Entry { e, _ := s.CountFailure(p, t0, upstream); return e }, StateOpen, GateBlock, 0, 2, time.Minute},
		{"working trial closes", inTrial, func(p *Entry) Entry { return s.MarkHealthy(p, t0, RestoredByPassive) }, StateClosed, GateAllow, 0, 0, 0},
		{"the client's own failure opens at once", closed(0), func(p *Entry) Entry {
			return s.MarkUnhealthy(p, t0, Failure{Code: CodeTransport})
		}, StateOpen, GateBlock, 0, 1, 30 * time.Second},
		{"a healthy probe does not clear an outage only calls see", open, func(p *Entry) Entry { return s.ProbeHealthy(p, t0, RestoredByProbe) }, StateOpen, GateBlock, 0, 1, time.Second},
		{"a healthy probe clears an outage the handshake saw", &Entry{Status: StatusUnhealthy, FailureCount: 2, NextRetryAt: ms}, func(p *Entry) Entry { return s.ProbeHealthy(p, t0, RestoredByProbe) }, StateClosed, GateAllow, 0, 0, 0},
		{"probe-witnessed half-open is probed", &Entry{Status: StatusUnhealthy, FailureCount: 1, NextRetryAt: ms}, func(p *Entry) Entry { return *p }, StateHalfOpen, GateProbe, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prev *Entry
			if tt.prev != nil {
				c := *tt.prev
				prev = &c
			}
			e := tt.happen(prev)
			if st := StateOf(&e, t0); st != tt.state {
				t.Errorf("state %s, want %s", st, tt.state)
			}
			if g := GateOf(&e, t0); g != tt.gate {
				t.Errorf("gate %s, want %s", g, tt.gate)
			}
			if e.ConsecutiveFailures != tt.count || e.FailureCount != tt.failures {
				t.Errorf("count %d failures %d, want %d %d", e.ConsecutiveFailures, e.FailureCount, tt.count, tt.failures)
			}
			if tt.retryWait > 0 && e.NextRetryAt != MillisOf(t0.Add(tt.retryWait)) {
				t.Errorf("next retry %s after t0, want %s", e.NextRetryAt.Time().Sub(t0), tt.retryWait)
			}
		})
	}
}

func TestReadyToTrip(t *testing.T) {
	for _, tt := range []struct {
		threshold, count int
		want             bool
	}{{0, 2, false}, {0, 3, true}, {1, 1, true}, {5, 4, false}, {5, 5, true}} {
		if got := (Settings{FailureThreshold: tt.threshold}).ReadyToTrip(tt.count); got != tt.want {
			t.Errorf("threshold %d count %d: %v, want %v", tt.threshold, tt.count, got, tt.want)
		}
	}
}
