//go:build !windows

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/supervisor"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// TestClusterStoppedAsAJobFinishes: the coordinator is stopped (its
// context cancelled, as SIGTERM does) just as a worker finished a job
// done. The stopping coordinator journals that end (the stop path is the
// same as on one host), and the next `run` finishes the night without
// running the job again.
//
// The timing is held, not raced: the coordinator's loop is busy telling
// its progress from the moment it enqueued the attempt until the worker
// wrote the attempt's end; only then is the night stopped, so the end
// reaches the stop path, never the running loop.
func TestClusterStoppedAsAJobFinishes(t *testing.T) {
	t.Parallel()
	testkit.ForEachClaude(t, testClusterStoppedAsAJobFinishes)
}

func testClusterStoppedAsAJobFinishes(t *testing.T, version string) {
	f := newClusterFixture(t, version)
	f.writeBatch(version, fmt.Sprintf("  - {name: a, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}\n",
		script("a", `mcp__notes__echo {"message":"once"}`)))
	f.start("host-a", "worker", f.batch)
	db := f.db()
	env := append(append([]string{}, f.env...), "NW_STATE="+filepath.Join(f.dir, "state-host-c"))
	b, err := jobs.Load(f.batch, environ.Lookup(env))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	held := false
	hold := func(p plan.Progress) {
		if len(p.Running) == 0 {
			return
		}
		once.Do(func() {
			deadline := time.Now().Add(3 * time.Minute)
			for time.Now().Before(deadline) {
				var state string
				err := db.Pool.QueryRow(context.Background(), `SELECT state FROM nightwatch_attempts WHERE job = 'a' AND attempt = 1`).Scan(&state)
				if err == nil && state == "ended" {
					held = true
					cancel()
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Errorf("a's attempt did not end on the worker")
		})
	}
	opts := supervisor.NightOptions{Binary: f.bin, Env: env, LogWriter: zerolog.NewTestWriter(t),
		Maintenance: 300 * time.Millisecond, RetryPause: 300 * time.Millisecond}
	opts.Progress = hold
	first, err := supervisor.RunNight(ctx, b, opts)
	if !errors.Is(err, supervisor.ErrStopped) || !held {
		t.Fatalf("the first night returned %v (held until a ended: %v)", err, held)
	}
	if e := ends(f.events(db)); e.done["a"] != 1 {
		t.Fatalf("the stopped night journaled a done %d times, want once", e.done["a"])
	}

	opts.Progress = nil
	ctx2, cancel2 := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel2()
	s, err := supervisor.RunNight(ctx2, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.RunID != first.RunID || !s.Resumed || s.Done != 1 {
		t.Errorf("the next run: %s resumed %v (the stopped one %s), %+v", s.RunID, s.Resumed, first.RunID, s.Jobs)
	}
	evs := f.events(db)
	if e := ends(evs); e.done["a"] != 1 || e.endsAt["a"] != 1 {
		t.Errorf("a: done %d times in %d ends over both nights, want once", e.done["a"], e.endsAt["a"])
	}
	started := 0
	for _, ev := range evs {
		if ev.Type == journal.JobStarted && ev.Job == "a" {
			started++
		}
	}
	if started != 1 {
		t.Errorf("a started %d times, want once", started)
	}
	if got := len(f.api.SessionToolResults("a")); got != 1 {
		t.Errorf("a's tool was called %d times over both nights, want once", got)
	}
}
