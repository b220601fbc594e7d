package supervisor

import (
	"os"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/rs/zerolog"
)

// The night's Checker (its checks before a job, maintenance, preflight)
// runs with the batch's health mapping, its failure threshold included.
func TestNightCheckerHasTheBatchsSettings(t *testing.T) {
	dir := t.TempDir()
	b := testkit.LoadBatch(t, dir, "version: 1\nname: s\nstate_dir: ./state\nagent: {command: /bin/true}\n"+
		"health: {ttl: 5m, backoff: 3s, max_backoff: 1m, failure_threshold: 7}\n"+
		"jobs:\n  - {name: a, prompt: a}\n")
	n := newNight(b, NightOptions{Env: os.Environ(), LogWriter: zerolog.NewTestWriter(t)})
	if got, want := n.checker.Settings, b.Health.Settings(); got != want || got.FailureThreshold != 7 {
		t.Errorf("the night's checker has %+v, want %+v", got, want)
	}
}
