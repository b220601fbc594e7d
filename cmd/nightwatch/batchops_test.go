package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/knobs"
)

// status, probe and reset on a batch file decide with the batch's health
// mapping, its failure threshold included, over the environment's.
func TestWithBatchTakesTheBatchsSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "night.yaml")
	if err := os.WriteFile(path, []byte("version: 1\nname: s\nstate_dir: ./state\n"+
		"health: {ttl: 5m, backoff: 3s, max_backoff: 1m, failure_threshold: 7}\n"+
		"jobs:\n  - {name: a, prompt: a}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NIGHTWATCH_FAILURE_THRESHOLD": "2", "NIGHTWATCH_TTL": "1s"}
	k := knobs.FromEnv(func(name string) (string, bool) { v, ok := env[name]; return v, ok }, dir)
	k, _, b, err := withBatch(path, k, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := k.Settings(), b.Health.Settings(); got != want || got.FailureThreshold != 7 {
		t.Errorf("settings %+v, want the batch's %+v", got, want)
	}
}
