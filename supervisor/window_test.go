package supervisor

import (
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
)

func TestPastWindow(t *testing.T) {
	started := time.Date(2026, 12, 1, 1, 0, 0, 0, time.Local)
	deadline := &jobs.ClockTime{Hour: 6}
	tests := []struct {
		name     string
		deadline *jobs.ClockTime
		schedule string
		now      time.Time
		want     string // a part of the reason; "" = still its window
	}{
		{"no window: always resumed", nil, "", started.Add(48 * time.Hour), ""},
		{"before the deadline", deadline, "", started.Add(4 * time.Hour), ""},
		{"after the deadline", deadline, "", started.Add(5 * time.Hour), "deadline"},
		{"before the next scheduled start", nil, "0 1 * * *", started.Add(23 * time.Hour), ""},
		{"at the next scheduled start", nil, "0 1 * * *", started.Add(24 * time.Hour), "next scheduled start"},
		{"the next night, both set", deadline, "0 1 * * *", started.Add(24 * time.Hour), "deadline"},
		{"never started", deadline, "", time.Time{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &jobs.Batch{Deadline: tt.deadline, Schedule: tt.schedule}
			st := started
			if tt.now.IsZero() {
				st, tt.now = time.Time{}, started
			}
			got := pastWindow(b, st, tt.now)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("pastWindow = %q, want %q", got, tt.want)
			}
		})
	}
}
