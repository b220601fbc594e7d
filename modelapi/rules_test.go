package modelapi

import (
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
)

// Every class of the classifier has a rule.
func TestAPIRulesCoverEveryClass(t *testing.T) {
	for _, c := range []Class{UsageLimit, RateLimit, Unavailable, InvalidCredentials, MaxTurns, ContextTooLong} {
		if _, ok := RuleFor(c); !ok {
			t.Errorf("no rule for %s", c)
		}
	}
}

// The night's waits: a test's Waits over the batch's api: block over
// the defaults, field by field.
func TestAPIWaitsOverTheBatch(t *testing.T) {
	batch := jobs.APIWaits{CheckInterval: 2 * time.Second, MaxWait: time.Hour, PauseWithoutReset: time.Minute}
	tests := []struct {
		name  string
		opts  Waits
		batch jobs.APIWaits
		want  Waits
	}{
		{"defaults", Waits{}, jobs.APIWaits{}, DefaultWaits},
		{"the batch", Waits{}, batch, Waits{UsageWait: time.Minute, CheckMin: 2 * time.Second, CheckMax: DefaultWaits.CheckMax,
			RateLimitMin: DefaultWaits.RateLimitMin, RateLimitMax: DefaultWaits.RateLimitMax, MaxOutage: time.Hour}},
		{"the options over the batch", Waits{CheckMin: time.Second}, batch, Waits{UsageWait: time.Minute, CheckMin: time.Second,
			CheckMax: DefaultWaits.CheckMax, RateLimitMin: DefaultWaits.RateLimitMin, RateLimitMax: DefaultWaits.RateLimitMax,
			MaxOutage: time.Hour}},
		{"a check interval past the default maximum raises it", Waits{}, jobs.APIWaits{CheckInterval: 10 * time.Minute},
			Waits{UsageWait: DefaultWaits.UsageWait, CheckMin: 10 * time.Minute, CheckMax: 10 * time.Minute,
				RateLimitMin: DefaultWaits.RateLimitMin, RateLimitMax: DefaultWaits.RateLimitMax, MaxOutage: DefaultWaits.MaxOutage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.opts.Over(tt.batch).WithDefaults(); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
