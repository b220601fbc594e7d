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
