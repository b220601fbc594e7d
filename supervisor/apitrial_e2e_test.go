package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/modelapi"
)

// TestNightTrialsTheAPIAfterALyingCheck is issue 21's "the API outage
// check can lie": every real request gets 529 while the check (an
// unauthenticated empty POST) is answered 401 by an edge that
// authenticates before it schedules, so every check passes. Two jobs
// run side by side, each with one retry. The night pauses, its check
// passes, and one session at a time tries the API (the breaker's
// half-open state) while the others wait; a 529 right after a passing
// check is the same outage, so no job is charged more than once for it,
// and once the overload ends the night finishes every job.
func TestNightTrialsTheAPIAfterALyingCheck(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		f := newNightFixture(t)
		yaml := strings.Replace(f.apiBatch(version, 2, ""), "max_parallel: 1", "max_parallel: 2", 1)
		// Five sessions or more, on a shared 2-core machine.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		watched := make(chan struct{})
		defer func() { cancel(); <-watched }()
		s, err := f.runAPINight(ctx, yaml, func() {
			overload := fakeapi.Overloaded()
			overload.EdgeAuth = true
			f.api.Inject(overload)
			go func() {
				defer close(watched)
				// The overload outlasts a trial, however slow the
				// machine: it ends once a trial attempt failed on it
				// uncounted (a night that charged it ends with its jobs
				// failed).
				clearAfterFreeFailures(ctx, f.api, filepath.Join(f.dir, "state"), 1)
			}()
		})
		if err != nil {
			t.Fatal(err)
		}
		events := readJournalTypes(t, s.Journal)
		charged := map[string]int{}
		var paused, resumed int
		running := map[string]bool{}
		for _, ev := range events {
			switch ev.Type {
			case journal.NightPaused:
				paused++
			case journal.NightResumed:
				resumed++
			case journal.JobStarted:
				running[ev.Job] = true
			case journal.JobRetried, journal.JobFinished:
				delete(running, ev.Job)
				if ev.Class == string(modelapi.Unavailable) && !ev.Uncounted {
					charged[ev.Job]++
				}
			}
			t.Logf("%s %s#%d %s %s uncounted=%v", ev.Type, ev.Job, ev.Attempt, ev.Class, ev.Reason, ev.Uncounted)
		}
		if s.Done != 2 {
			t.Errorf("want every job done after the overload, got %+v", s.Jobs)
			logs, _ := filepath.Glob(filepath.Join(f.dir, "state", "runs", "*", "*", "*", "*"))
			for _, l := range logs {
				if b, err := os.ReadFile(l); err == nil && (strings.HasSuffix(l, ".log") || strings.HasSuffix(l, ".jsonl")) {
					t.Logf("--- %s\n%s", l, tail(b, 3000))
				}
			}
		}
		for job, n := range charged {
			if n > 1 {
				t.Errorf("%s was charged %d attempts for one overload", job, n)
			}
		}
		if paused < 2 || resumed < 2 {
			t.Errorf("paused %d and resumed %d times: the checks did not pass while real requests failed", paused, resumed)
		}
	})
}

// clearAfterFreeFailures ends the fake's fault once the night's journal
// holds n attempts that failed on the API's outage and were not counted.
func clearAfterFreeFailures(ctx context.Context, api *fakeapi.Server, stateDir string, n int) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		paths, _ := filepath.Glob(statedir.Journals(stateDir))
		for _, p := range paths {
			events, _ := journal.Read(p)
			free := 0
			for _, ev := range events {
				if ev.Type == journal.JobRetried && ev.Uncounted && ev.Class == string(modelapi.Unavailable) {
					free++
				}
			}
			if free >= n {
				api.Clear()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
