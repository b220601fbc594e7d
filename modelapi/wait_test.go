package modelapi

import (
	"testing"
	"time"
)

// The night's waits on the API, rule by rule: how long a pause lasts, when
// a failure extends the wait the night is in, and when it does not.
func TestWaitStart(t *testing.T) {
	w := Waits{UsageWait: 30 * time.Minute, CheckMin: 15 * time.Second, CheckMax: 30 * time.Second,
		RateLimitMin: time.Minute, RateLimitMax: 4 * time.Minute, MaxOutage: time.Hour}
	now := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	tests := []struct {
		name    string
		cur     *Wait
		rule    Pause
		class   Class
		resetAt time.Time
		want    Wait
		ok      bool
	}{
		{"usage limit with its reset time", nil, PauseUntilTime, UsageLimit, at(2 * time.Hour),
			Wait{UsageLimit, now, at(2 * time.Hour), 2 * time.Hour}, true},
		{"usage limit without a reset time", nil, PauseUntilTime, UsageLimit, time.Time{},
			Wait{UsageLimit, now, at(30 * time.Minute), 30 * time.Minute}, true},
		{"a reset time that just passed: soon", nil, PauseUntilTime, UsageLimit, at(-time.Second),
			Wait{UsageLimit, now, at(15 * time.Second), 15 * time.Second}, true},
		{"a reset time that passed again: doubles", &Wait{UsageLimit, at(-time.Minute), at(-time.Second), 20 * time.Second},
			PauseUntilTime, UsageLimit, at(-time.Second), Wait{UsageLimit, now, at(40 * time.Second), 40 * time.Second}, true},
		{"an earlier reset than the pause's end: nothing new", &Wait{UsageLimit, at(-time.Minute), at(time.Hour), time.Hour},
			PauseUntilTime, UsageLimit, at(time.Minute), Wait{}, false},
		{"rate limit", nil, PauseBackoff, RateLimit, time.Time{}, Wait{RateLimit, now, at(time.Minute), time.Minute}, true},
		{"rate limit again: doubles", &Wait{RateLimit, at(-time.Minute), now, time.Minute}, PauseBackoff, RateLimit, time.Time{},
			Wait{RateLimit, now, at(2 * time.Minute), 2 * time.Minute}, true},
		{"rate limit again: capped", &Wait{RateLimit, at(-time.Minute), now, 3 * time.Minute}, PauseBackoff, RateLimit, time.Time{},
			Wait{RateLimit, now, at(4 * time.Minute), 4 * time.Minute}, true},
		{"a usage limit outlasts a rate limit", &Wait{UsageLimit, at(-time.Minute), at(time.Hour), time.Hour},
			PauseBackoff, RateLimit, time.Time{}, Wait{}, false},
		{"API unavailable: checked first after the shortest interval", nil, PauseUntilAPI, Unavailable, time.Time{},
			Wait{Unavailable, now, at(15 * time.Second), 15 * time.Second}, true},
		{"API unavailable again: the same outage", &Wait{Unavailable, at(-time.Minute), now, 30 * time.Second},
			PauseUntilAPI, Unavailable, time.Time{}, Wait{}, false},
		{"no pause", nil, PauseNone, MaxTurns, time.Time{}, Wait{}, false},
		{"a stop is not a wait", nil, PauseStop, InvalidCredentials, time.Time{}, Wait{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := w.Start(now, tt.cur, tt.rule, tt.class, tt.resetAt)
			if got != tt.want || ok != tt.ok {
				t.Errorf("got %+v %v, want %+v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// A failed check doubles the interval up to its cap; the API's absence is
// too long at MaxOutage; a recorded pause stands for the wait it began.
func TestWaitCheckAndRecord(t *testing.T) {
	w := Waits{CheckMin: 15 * time.Second, CheckMax: 30 * time.Second, MaxOutage: time.Hour}
	now := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	wt := Wait{Class: Unavailable, Since: now, Until: now.Add(w.CheckMin), Backoff: w.CheckMin}
	for i, want := range []time.Duration{30 * time.Second, 30 * time.Second} {
		wt.CheckFailed(now, w)
		if wt.Backoff != want || !wt.Until.Equal(now.Add(want)) {
			t.Errorf("check %d failed: next in %s at %s, want %s", i+1, wt.Backoff, wt.Until, want)
		}
	}
	if wt.TooLong(now.Add(59*time.Minute), w) || !wt.TooLong(now.Add(time.Hour), w) {
		t.Error("the outage's bound is MaxOutage")
	}
	if (&Wait{Class: RateLimit, Since: now}).TooLong(now.Add(2*time.Hour), w) {
		t.Error("only an API that does not answer has an outage bound")
	}
	for _, tt := range []struct {
		name   string
		class  Class
		until  time.Time
		want   Wait
		wantOK bool
	}{
		{"an API that does not answer", Unavailable, time.Time{}, Wait{Unavailable, now, now.Add(15 * time.Second), 15 * time.Second}, true},
		{"a pause until a time", UsageLimit, now.Add(time.Hour), Wait{UsageLimit, now, now.Add(time.Hour), time.Hour}, true},
		{"a pause without its end", RateLimit, time.Time{}, Wait{}, false},
	} {
		if got, ok := w.Recorded(tt.class, now, tt.until); got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: got %+v %v, want %+v %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

// The trial: out while its session runs, and only its own attempt is it.
func TestTrial(t *testing.T) {
	var none *Trial
	if none.Out() || none.Is("a", 1) {
		t.Error("no trial is out")
	}
	tr := &Trial{Since: time.Unix(1, 0)}
	if tr.Out() {
		t.Error("a trial without its session is not out")
	}
	tr.Job, tr.Attempt = "a", 2
	if !tr.Out() || !tr.Is("a", 2) || tr.Is("a", 1) || tr.Is("b", 2) {
		t.Errorf("trial %+v", tr)
	}
}
