package jobs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The night's fields for a failing API: api_retries, resume, keep_awake.
func TestLoadAPIFields(t *testing.T) {
	sb := newSandbox(t)
	tests := []struct {
		name, yaml        string
		retries           int
		resume, keepAwake bool
		wantErr           bool
	}{
		{"defaults", "", DefaultAPIRetries, true, true, false},
		{"set", "api_retries: 5\nresume: false\nkeep_awake: false\n", 5, false, false, false},
		{"no CLI retries", "api_retries: 0\n", 0, true, true, false},
		{"too many", "api_retries: 1000\n", 0, false, false, true},
		{"negative", "api_retries: -1\n", 0, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, sb.dir, "b.yaml", "version: 1\nname: b\n"+tt.yaml+"jobs:\n  - {name: only, prompt: hi}\n")
			b, err := Load(path, environ(sb.env))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("loaded %+v, want an error", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.APIRetries != tt.retries || b.Resume != tt.resume || b.KeepAwake != tt.keepAwake {
				t.Errorf("api_retries %d resume %v keep_awake %v, want %d %v %v", b.APIRetries, b.Resume, b.KeepAwake,
					tt.retries, tt.resume, tt.keepAwake)
			}
		})
	}
}

// The api: block: the night's waits on the model's API, each a duration,
// strictly decoded (file:line errors).
func TestLoadAPIWaits(t *testing.T) {
	sb := newSandbox(t)
	tests := []struct {
		name, yaml string
		want       APIWaits
		line       int    // of the problem; 0: none
		field, msg string // of the problem
	}{
		{name: "unset: zero, the defaults hold", yaml: ""},
		{name: "all set", yaml: "api:\n  check_interval: 5s\n  max_check_interval: 1m\n  max_wait: 2h\n" +
			"  pause_without_reset: 10m\n  rate_limit_pause: 30s\n  max_rate_limit_pause: 5m\n",
			want: APIWaits{CheckInterval: 5 * time.Second, MaxCheckInterval: time.Minute, MaxWait: 2 * time.Hour,
				PauseWithoutReset: 10 * time.Minute, RateLimitPause: 30 * time.Second, MaxRateLimitPause: 5 * time.Minute}},
		{name: "one set", yaml: "api: {max_wait: 90m}\n", want: APIWaits{MaxWait: 90 * time.Minute}},
		{name: "unknown field", yaml: "api:\n  check_every: 5s\n", line: 4, field: "api.check_every", msg: "unknown field"},
		{name: "no unit", yaml: "api:\n  max_wait: 90\n", line: 4, field: "api.max_wait", msg: "needs a unit"},
		{name: "not a duration", yaml: "api:\n  check_interval: soon\n", line: 4, field: "api.check_interval", msg: "not a duration"},
		{name: "zero", yaml: "api:\n  pause_without_reset: 0s\n", line: 4, field: "api.pause_without_reset", msg: "between"},
		{name: "max below min", yaml: "api:\n  check_interval: 1m\n  max_check_interval: 10s\n", line: 5,
			field: "api.max_check_interval", msg: "less than check_interval"},
		{name: "not a mapping", yaml: "api: 5s\n", line: 3, field: "api", msg: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, sb.dir, "b.yaml", "version: 1\nname: b\n"+tt.yaml+"jobs:\n  - {name: only, prompt: hi}\n")
			b, err := Load(path, environ(sb.env))
			if tt.line != 0 {
				var le *LoadError
				if !errors.As(err, &le) {
					t.Fatalf("loaded %+v (%v), want a problem at line %d", b, err, tt.line)
				}
				for _, p := range le.Problems {
					if p.File == path && p.Line == tt.line && p.Field == tt.field && strings.Contains(p.Message, tt.msg) {
						if !strings.Contains(err.Error(), fmt.Sprintf("%s:%d: ", path, tt.line)) {
							t.Errorf("error text lacks file:line: %v", err)
						}
						return
					}
				}
				t.Fatalf("no problem at line %d field %q with %q; got %v", tt.line, tt.field, tt.msg, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.API != tt.want {
				t.Errorf("api = %+v, want %+v", b.API, tt.want)
			}
		})
	}
}
