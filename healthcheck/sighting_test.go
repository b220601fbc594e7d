package healthcheck

import (
	"testing"
	"time"
)

// TestSighted: a status view shows the newer of the cache's verdict and
// what the night journaled, through the package's own transitions.
func TestSighted(t *testing.T) {
	s := DefaultSettings()
	healthy := s.MarkHealthy(nil, t0, RestoredByProbe) // trusted until t0+TTL
	down := s.MarkUnhealthy(nil, t0, Failure{Code: CodeTransport, Reason: "refused"})
	for _, tc := range []struct {
		name       string
		e          *Entry
		sg         Sighting
		wantStatus Status // "" for a nil entry
		wantGate   Gate
		same       bool // the entry is returned unchanged
	}{
		{name: "no sighting", e: &healthy, same: true, wantStatus: StatusHealthy, wantGate: GateAllow},
		{name: "a server lost 12 s after its healthy probe is down", e: &healthy,
			sg:         Sighting{At: t0.Add(12 * time.Second), Down: true, Code: CodeTransport, Reason: "lost under a attempt 1"},
			wantStatus: StatusUnhealthy, wantGate: GateBlock},
		{name: "an older sighting changes nothing", e: &healthy,
			sg: Sighting{At: t0.Add(-time.Minute), Down: true}, same: true, wantStatus: StatusHealthy, wantGate: GateAllow},
		{name: "a sighting at the verdict's own millisecond changes nothing", e: &down,
			sg: Sighting{At: t0, Down: false}, same: true, wantStatus: StatusUnhealthy, wantGate: GateBlock},
		{name: "back after the cache's outage", e: &down,
			sg: Sighting{At: t0.Add(time.Minute), By: RestoredByReconnect}, wantStatus: StatusHealthy, wantGate: GateAllow},
		{name: "not in the cache, seen down", e: nil,
			sg: Sighting{At: t0.Add(time.Second), Down: true}, wantStatus: StatusUnhealthy, wantGate: GateBlock},
		{name: "not in the cache, no sighting", e: nil, same: true, wantGate: GateProbe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := s.Sighted(tc.e, tc.sg)
			if tc.same && got != tc.e {
				t.Fatalf("the entry was replaced: %+v", got)
			}
			status := Status("")
			if got != nil {
				status = got.Status
			}
			if status != tc.wantStatus {
				t.Errorf("status %q, want %q", status, tc.wantStatus)
			}
			if g := GateOf(got, t0.Add(20*time.Second)); g != tc.wantGate {
				t.Errorf("gate %s, want %s", g, tc.wantGate)
			}
			if got != nil && tc.sg.Down && !tc.same && (got.LastFailureCode == "" || got.LastError != tc.sg.Reason) {
				t.Errorf("failure %q %q", got.LastFailureCode, got.LastError)
			}
		})
	}
}
