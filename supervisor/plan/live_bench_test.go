package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// BenchmarkLiveNight is what one `status` (and each `--watch` refresh)
// costs to fold a large night's journal: 10 000 jobs, each started and
// ended, with a deferral and a server change per ten jobs.
func BenchmarkLiveNight(b *testing.B) {
	const n = 10000
	batch := &jobs.Batch{Name: "big", MaxParallel: 4, Defaults: jobs.JobDefaults{MaxDefer: time.Hour}}
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	events := []journal.Event{{Time: t0, Type: journal.RunStarted, Run: "r", Batch: "big"}}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("j%d", i)
		batch.Jobs = append(batch.Jobs, &jobs.Job{Name: name, Servers: []string{"notes"}})
		at := t0.Add(time.Duration(i) * time.Second)
		if i%10 == 0 {
			events = append(events, journal.Event{Time: at, Type: journal.JobDeferred, Job: name, Reason: "server notes is down"},
				journal.Event{Time: at, Type: journal.ServerState, Server: "notes", Status: journal.Unhealthy})
		}
		if i < n-4 {
			events = append(events, journal.Event{Time: at, Type: journal.JobStarted, Job: name, Attempt: 1},
				journal.Event{Time: at.Add(time.Second), Type: journal.JobFinished, Job: name, Attempt: 1, Status: journal.Done,
					Result: &journal.Result{CostUSD: 0.01}})
		}
	}
	now := t0.Add(n * time.Second)
	b.ReportAllocs()
	for b.Loop() {
		lv := LiveNight(batch, events, now)
		if lv.Done != n-4 {
			b.Fatalf("done %d", lv.Done)
		}
	}
}
