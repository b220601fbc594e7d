package healthcheck

import (
	"testing"
	"time"
)

func TestNewerAndMerge(t *testing.T) {
	healthy := func(checked, retry Millis) *Entry {
		return &Entry{Status: StatusHealthy, CheckedAt: checked, ExpiresAt: checked + 120000, NextRetryAt: retry}
	}
	down := func(checked, retry Millis, failures int) *Entry {
		return &Entry{Status: StatusUnhealthy, CheckedAt: checked, ExpiresAt: checked, NextRetryAt: retry, FailureCount: failures}
	}
	tests := []struct {
		name string
		a, b *Entry
		want bool // Newer(a, b)
	}{
		{"nil is never newer", nil, healthy(1, 1), false},
		{"anything is newer than nil", healthy(1, 1), nil, true},
		{"both nil", nil, nil, false},
		{"later check wins", healthy(2000, 2000), down(1000, 31000, 1), true},
		{"earlier check loses", down(1000, 31000, 1), healthy(2000, 2000), false},
		{"same check, later backoff wins", down(1000, 61000, 2), down(1000, 31000, 1), true},
		{"same check, later trial wins", &Entry{Status: StatusUnhealthy, CheckedAt: 5, TrialAt: 9}, &Entry{Status: StatusUnhealthy, CheckedAt: 5, NextRetryAt: 7}, true},
		{"exact tie: unhealthy over healthy", down(1000, 1000, 1), healthy(1000, 1000), true},
		{"exact tie: healthy loses to unhealthy", healthy(1000, 1000), down(1000, 1000, 1), false},
		{"tie: more failures", down(1000, 1000, 3), down(1000, 1000, 2), true},
		{"tie: more consecutive failures", &Entry{Status: StatusHealthy, CheckedAt: 1, ConsecutiveFailures: 2}, &Entry{Status: StatusHealthy, CheckedAt: 1, ConsecutiveFailures: 1}, true},
		{"twins: neither newer", down(1000, 31000, 1), down(1000, 31000, 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Newer(tt.a, tt.b); got != tt.want {
				t.Fatalf("Newer = %v, want %v", got, tt.want)
			}
			// The rule is an order: never both ways.
			if tt.want && Newer(tt.b, tt.a) {
				t.Fatalf("Newer holds both ways")
			}
			want := tt.b
			if tt.want {
				want = tt.a
			}
			if got := Merge(tt.b, tt.a); got != want {
				t.Fatalf("Merge(local b, remote a) = %+v, want %+v", got, want)
			}
		})
	}
}

// Every transition stamps CheckedAt, so the rule sees each as newer than
// the entry it came from, one millisecond later: the whole state machine
// merges in the order it ran.
func TestMergeFollowsTransitions(t *testing.T) {
	s := DefaultSettings()
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	tick := func() { at = at.Add(time.Millisecond) }
	e0 := s.MarkHealthy(nil, at, RestoredByProbe)
	tick()
	e1 := s.MarkUnhealthy(&e0, at, Failure{Code: CodeTransport, Witness: WitnessCalls})
	tick()
	e2 := s.StartTrial(e1, at)
	tick()
	e3, _ := s.CountFailure(&e2, at, Failure{Code: CodeUnavailable})
	tick()
	e4 := s.MarkHealthy(&e3, at, RestoredByPassive)
	chain := []*Entry{&e0, &e1, &e2, &e3, &e4}
	for i := 1; i < len(chain); i++ {
		if !Newer(chain[i], chain[i-1]) || Newer(chain[i-1], chain[i]) {
			t.Fatalf("transition %d is not newer than %d: %+v vs %+v", i, i-1, chain[i], chain[i-1])
		}
	}
}
