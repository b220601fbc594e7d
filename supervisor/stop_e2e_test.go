package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// TestNightStoppedAsAJobFinishesRunsNothingTwice: the night is stopped
// (its context cancelled, as SIGTERM does) just as a job's session
// finished done, before the loop took its end. The stop journals that
// end, and the next `run` resumes the night and runs nothing again: the
// job's MCP tool was called once over both nights, and it started once.
//
// The timing is held, not raced: the loop is busy telling the night's
// progress (Progress runs on the loop's goroutine) from the moment the
// job started until its session has ended and cleaned up, which it does
// just before it hands its end to the loop; only then is the night
// stopped, so the end is taken by the stop path, never by the running
// loop.
func TestNightStoppedAsAJobFinishesRunsNothingTwice(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		f := newNightFixture(t)
		server := testkit.BuildTestServer(t)
		yaml := fmt.Sprintf(`version: 1
name: stopdone
state_dir: ./state
keep_awake: false
agent: {command: %s}
defaults: {timeout: 2m, stall_timeout: 2m, retries: 0}
servers:
  notes: {command: %s}
jobs:
  - {name: a, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(server),
			jsonString(prompt("a", `mcp__notes__echo {"message":"once"}`)))
		b := f.load(yaml)
		bin := testkit.BuildNightwatch(t)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var once sync.Once
		held := false
		hold := func(p plan.Progress) {
			if len(p.Running) == 0 {
				return
			}
			once.Do(func() {
				path, _, err := journal.LatestUnfinished(b.StateDir, b.Name)
				if err != nil || path == "" {
					t.Errorf("no unfinished journal while a runs: %v", err)
					return
				}
				runID := filepath.Base(path[:len(path)-len(filepath.Ext(path))])
				config := filepath.Join(statedir.Attempt(b.StateDir, runID, "a", 1), statedir.AttemptMCPConfig)
				if _, err := os.Stat(config); err != nil {
					t.Errorf("a's session has no MCP config at %s: %v", config, err)
					return
				}
				// The session removes its MCP config once its process
				// ended, just before it hands the end to the loop.
				deadline := time.Now().Add(3 * time.Minute)
				for time.Now().Before(deadline) {
					if _, err := os.Stat(config); errors.Is(err, os.ErrNotExist) {
						held = true
						cancel()
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				t.Errorf("a's session did not end")
			})
		}
		first, err := RunNight(ctx, b, NightOptions{Binary: bin, Env: f.env, LogWriter: zerolog.NewTestWriter(t),
			Maintenance: 200 * time.Millisecond, APIWaits: apiWaitsForTests, Progress: hold})
		if !errors.Is(err, ErrStopped) || !held {
			t.Fatalf("the first night returned %v (held until a ended: %v)", err, held)
		}
		calls := len(f.api.SessionToolResults("a"))
		if calls != 1 {
			t.Fatalf("the first night called a's tool %d times, want once", calls)
		}

		ctx2, cancel2 := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel2()
		s, err := RunNight(ctx2, b, NightOptions{Binary: bin, Env: f.env, LogWriter: zerolog.NewTestWriter(t),
			Maintenance: 200 * time.Millisecond, APIWaits: apiWaitsForTests})
		if err != nil {
			t.Fatal(err)
		}
		if s.RunID != first.RunID || !s.Resumed || s.Done != 1 {
			t.Errorf("the next run: %s resumed %v (the stopped one %s), %+v", s.RunID, s.Resumed, first.RunID, s.Jobs)
		}
		if got := len(f.api.SessionToolResults("a")); got != 1 {
			t.Errorf("a's tool was called %d times over both nights, want once", got)
		}
		if started := startedPer(readJournalTypes(t, s.Journal)); started["a"] != 1 {
			t.Errorf("a started %d times, want once", started["a"])
		}
	})
}
