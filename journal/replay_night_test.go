package journal

import (
	"reflect"
	"testing"
	"time"
)

// TestReplayNightRules: what the night's API rules kept in memory comes
// back from the journal: the pause that had not ended, the attempts that
// were not counted, the outage each job was counted against, the bounces,
// and the last retried attempt of a job that has not started again.
func TestReplayNightRules(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	reset := t0.Add(2 * time.Minute)
	limit := &Result{SessionID: "s-1"}
	paused := Event{Time: t0, Type: NightPaused, Class: "usage-limit", Reason: "You've hit your 5-hour limit", Until: reset}
	outage := Event{Time: t0, Type: NightPaused, Class: "api-unavailable", Reason: "ECONNREFUSED"}
	retried := func(job string, n int, uncounted bool, out int) Event {
		return Event{Type: JobRetried, Job: job, Attempt: n, Class: "usage-limit", Uncounted: uncounted, Outage: out, Result: limit}
	}
	type want struct {
		pause     *Event
		uncounted map[string]int
		bounces   map[string]int
		outage    map[string]int
		outages   int
		retried   []string
	}
	tests := []struct {
		name   string
		events []Event
		want   want
	}{
		{name: "no pause", events: []Event{{Type: JobStarted, Job: "a", Attempt: 1}}, want: want{}},
		{
			name: "paused, not resumed: the pause and the uncounted attempts",
			events: []Event{
				{Type: JobStarted, Job: "a", Attempt: 1}, retried("a", 1, true, 0),
				{Type: JobStarted, Job: "b", Attempt: 1}, retried("b", 1, true, 0),
				paused,
			},
			want: want{pause: &paused, uncounted: map[string]int{"a": 1, "b": 1}, retried: []string{"a", "b"}},
		},
		{
			name: "paused then resumed: no pause",
			events: []Event{
				{Type: JobStarted, Job: "a", Attempt: 1}, retried("a", 1, true, 0), paused,
				{Type: NightResumed, Class: "usage-limit"},
				{Type: JobStarted, Job: "a", Attempt: 2},
			},
			want: want{uncounted: map[string]int{"a": 1}},
		},
		{
			name:   "stopped ends the pause",
			events: []Event{paused, {Type: NightStopped, Class: "invalid-credentials"}},
			want:   want{},
		},
		{
			name:   "the last pause wins",
			events: []Event{paused, outage},
			want:   want{pause: &outage},
		},
		{
			name: "outages: the one each job was counted against",
			events: []Event{
				{Type: JobStarted, Job: "a", Attempt: 1}, retried("a", 1, false, 1), outage,
				{Type: NightResumed}, {Type: JobStarted, Job: "a", Attempt: 2}, retried("a", 2, false, 2),
				{Type: JobStarted, Job: "b", Attempt: 1}, retried("b", 1, true, 2), outage,
			},
			want: want{pause: &outage, uncounted: map[string]int{"b": 1}, outage: map[string]int{"a": 2, "b": 2}, outages: 2,
				retried: []string{"a", "b"}},
		},
		{
			name: "a finished job keeps its outage, not its retry",
			events: []Event{
				{Type: JobStarted, Job: "a", Attempt: 1}, retried("a", 1, false, 1),
				{Type: JobStarted, Job: "a", Attempt: 2}, {Type: JobFinished, Job: "a", Attempt: 2, Status: Failed, Outage: 3},
			},
			want: want{outage: map[string]int{"a": 3}, outages: 3},
		},
		{
			name: "bounces: deferred after an attempt, not before one",
			events: []Event{
				{Type: JobDeferred, Job: "a", Reason: "notes down"},
				{Type: JobStarted, Job: "a", Attempt: 1}, {Type: JobDeferred, Job: "a", Attempt: 1, Reason: "lost notes"},
			},
			want: want{bounces: map[string]int{"a": 1}},
		},
	}
	norm := func(m map[string]int) map[string]int {
		if m == nil {
			return map[string]int{}
		}
		return m
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Replay(tc.events)
			if !reflect.DeepEqual(r.Pause, tc.want.pause) {
				t.Errorf("pause %+v, want %+v", r.Pause, tc.want.pause)
			}
			for _, c := range []struct {
				what      string
				got, want map[string]int
			}{{"uncounted", r.Uncounted, tc.want.uncounted}, {"bounces", r.Bounces, tc.want.bounces}, {"outage", r.Outage, tc.want.outage}} {
				if !reflect.DeepEqual(c.got, norm(c.want)) {
					t.Errorf("%s %v, want %v", c.what, c.got, c.want)
				}
			}
			if r.Outages != tc.want.outages {
				t.Errorf("outages %d, want %d", r.Outages, tc.want.outages)
			}
			if len(r.Retried) != len(tc.want.retried) {
				t.Errorf("retried %v, want %v", r.Retried, tc.want.retried)
			}
			for _, j := range tc.want.retried {
				if ev, ok := r.Retried[j]; !ok || ev.Result == nil || ev.Result.SessionID != "s-1" {
					t.Errorf("retried[%s] = %+v, want the last job-retried line", j, ev)
				}
			}
		})
	}
}
