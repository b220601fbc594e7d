package jobs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

func TestHealthSettings(t *testing.T) {
	d := healthcheck.DefaultSettings()
	for _, tc := range []struct {
		name string
		h    Health
		want healthcheck.Settings
	}{
		{"nothing set: the defaults", Health{}, d},
		{"every number", Health{TTL: time.Minute, Backoff: 2 * time.Second, MaxBackoff: time.Minute, FailureThreshold: 5},
			healthcheck.Settings{TTL: time.Minute, Backoff: 2 * time.Second, MaxBackoff: time.Minute, MaxRetryAfter: d.MaxRetryAfter,
				FailureThreshold: 5, ClientStartup: d.ClientStartup}},
		{"the threshold alone", Health{FailureThreshold: 1},
			healthcheck.Settings{TTL: d.TTL, Backoff: d.Backoff, MaxBackoff: d.MaxBackoff, MaxRetryAfter: d.MaxRetryAfter,
				FailureThreshold: 1, ClientStartup: d.ClientStartup}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.Settings(); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A batch file's health section reaches the settings, its failure
// threshold included.
func TestLoadedHealthSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "night.yaml")
	if err := os.WriteFile(path, []byte("version: 1\nname: h\nagent: {command: /bin/true}\n"+
		"health: {ttl: 5m, backoff: 3s, max_backoff: 1m, failure_threshold: 7}\n"+
		"jobs:\n  - {name: a, prompt: a}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := Load(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s := b.Health.Settings()
	if s.TTL != 5*time.Minute || s.Backoff != 3*time.Second || s.MaxBackoff != time.Minute || s.FailureThreshold != 7 {
		t.Errorf("settings %+v, want the batch's numbers and threshold 7", s)
	}
}
