package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/supervisor"
)

// agent writes an agent whose every session succeeds at once, and returns
// its path as YAML.
func agent(t *testing.T, dir string) string {
	path := filepath.Join(dir, "agent")
	script := `#!/bin/sh
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0,"session_id":"s"}'
`
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	quoted, _ := json.Marshal(path)
	return string(quoted)
}

func TestDaemonRunsOnScheduleAndStops(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "batch.yaml")
	yaml := fmt.Sprintf("version: 1\nname: sched\nschedule: \"@every 1s\"\nstate_dir: ./state\nagent: {command: %s}\njobs:\n  - {name: a, prompt: a}\n",
		agent(t, dir))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, func() (*jobs.Batch, error) { return jobs.Load(path, os.LookupEnv) },
			supervisor.NightOptions{Binary: "/bin/true", Env: os.Environ(), LogWriter: zerolog.NewTestWriter(t)})
	}()
	deadline := time.Now().Add(2 * time.Minute) // a busy machine; only a daemon that never runs again gets there
	for {
		runs, _ := filepath.Glob(filepath.Join(dir, "state", "runs", "*.jsonl"))
		finished := 0
		for _, r := range runs {
			if b, _ := os.ReadFile(r); strings.Contains(string(b), `"run-finished"`) {
				finished++
			}
		}
		if finished >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never ran a second night (%d finished)", finished)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the daemon hung: it did not stop on the cancel")
	}
}
