package healthcheck

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// Entries are clamped to what the settings allow: no verdict of health
// outlives its TTL, no backoff outlives max(MaxBackoff, MaxRetryAfter),
// no time is in the future, and counts saturate instead of wrapping.
func TestClampBoundsEveryEntry(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	ms := MillisOf(now)
	s := DefaultSettings() // TTL 2m, MaxBackoff 10m, MaxRetryAfter 1h
	far := MillisOf(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	tests := []struct {
		name string
		in   Entry
		want func(e Entry) bool
		gate Gate
	}{
		{"healthy until 9999 lasts one TTL", Entry{Status: StatusHealthy, CheckedAt: ms - 1000, ExpiresAt: far},
			func(e Entry) bool { return e.ExpiresAt == ms-1000+120000 }, GateAllow},
		{"healthy checked in the future", Entry{Status: StatusHealthy, CheckedAt: far, ExpiresAt: far},
			func(e Entry) bool { return e.CheckedAt == ms && e.ExpiresAt == ms+120000 }, GateAllow},
		{"healthy long expired stays expired", Entry{Status: StatusHealthy, CheckedAt: ms - 600000, ExpiresAt: far},
			func(e Entry) bool { return e.ExpiresAt == ms-600000+120000 }, GateProbe},
		{"unhealthy until 9999 blocks one hour at most", Entry{Status: StatusUnhealthy, CheckedAt: ms, NextRetryAt: far},
			func(e Entry) bool { return e.NextRetryAt == ms+3600000 }, GateBlock},
		{"a fair backoff is kept", Entry{Status: StatusUnhealthy, CheckedAt: ms, NextRetryAt: ms + 30000},
			func(e Entry) bool { return e.NextRetryAt == ms+30000 }, GateBlock},
		{"negative counts", Entry{Status: StatusUnhealthy, FailureCount: -5, ConsecutiveFailures: -1},
			func(e Entry) bool { return e.FailureCount == 0 && e.ConsecutiveFailures == 0 }, GateProbe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.Clamp(tt.in, now)
			if !tt.want(got) {
				t.Errorf("Clamp = %+v", got)
			}
			if g := GateOf(&got, now); g != tt.gate {
				t.Errorf("gate %v, want %v", g, tt.gate)
			}
		})
	}
	// An hour and a minute later the 9999 backoff is over.
	got := s.Clamp(Entry{Status: StatusUnhealthy, NextRetryAt: far}, now)
	if g := GateOf(&got, now.Add(61*time.Minute)); g != GateProbe {
		t.Errorf("the clamped backoff still blocks after its cap: %v", g)
	}
}

func TestFailureCountSaturates(t *testing.T) {
	s := DefaultSettings()
	now := time.Now()
	prev := &Entry{Status: StatusUnhealthy, FailureCount: math.MaxInt, ConsecutiveFailures: math.MaxInt}
	e := s.MarkUnhealthy(prev, now, Failure{Code: "unavailable", Reason: "x"})
	if e.FailureCount != math.MaxInt {
		t.Errorf("failureCount wrapped: %d", e.FailureCount)
	}
	if GateOf(&e, now) != GateBlock {
		t.Errorf("a saturated count does not block: %+v", e)
	}
	h := &Entry{Status: StatusHealthy, ConsecutiveFailures: math.MaxInt, ExpiresAt: MillisOf(now.Add(time.Minute))}
	c, _ := s.CountFailure(h, now, Failure{Code: "unavailable", Reason: "x"})
	if c.ConsecutiveFailures < 0 {
		t.Errorf("consecutiveFailures wrapped: %d", c.ConsecutiveFailures)
	}
}

// One unreadable entry costs only itself: the rest of the cache is kept
// and the bad entry is reported.
func TestUnreadableEntryCostsOnlyItself(t *testing.T) {
	for _, bad := range []string{`{"status":"healthy","expiresAt":1e300}`, `{"failureCount":1e30}`, `"x"`,
		`{"failureCount":"many"}`, `{"checkedAt":[1]}`} {
		in := `{"version":1,"servers":{"good":{"status":"healthy","checkedAt":1,"expiresAt":2},"bad":` + bad + `}}`
		f, err := parseFile("c.json", []byte(in))
		if err != nil {
			t.Errorf("%s: the whole cache was discarded: %v", bad, err)
			continue
		}
		if f.Servers["good"] == nil || f.Servers["bad"] != nil || len(f.Dropped) != 1 || !strings.Contains(f.Dropped[0], `"bad"`) {
			t.Errorf("%s: servers %v, dropped %v", bad, f.Servers, f.Dropped)
		}
	}
}

// FuzzClampedCache: any bytes parse or are corrupt, never panic; what parses
// and is clamped never lets a healthy verdict outlive the TTL or a backoff
// outlive its cap, and writes back to a file that parses again.
func FuzzClampedCache(f *testing.F) {
	f.Add([]byte(`{"version":1,"servers":{"a":{"status":"healthy","checkedAt":1,"expiresAt":253370764800000,"failureCount":9223372036854775807}}}`))
	f.Add([]byte(`{"servers":{"a":{"status":"unhealthy","nextRetryAt":"1e18"},"b":{"failureCount":1e30}}}`))
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	s := DefaultSettings()
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := parseFile("c.json", data)
		if err != nil {
			return
		}
		file.Clamp(s, now)
		for name, e := range file.Servers {
			if e.ExpiresAt > MillisOf(now.Add(s.TTL)) || e.NextRetryAt > MillisOf(now.Add(s.MaxRetryAfter)) ||
				e.FailureCount < 0 || e.CheckedAt > MillisOf(now) {
				t.Fatalf("%s not clamped: %+v", name, e)
			}
		}
		out, err := json.Marshal(file)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := parseFile("c.json", out); err != nil {
			t.Fatalf("written file does not parse: %v\n%s", err, out)
		}
	})
}
