package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/modelapi"
	"github.com/nightwatch-dev/nightwatch/session"
)

// TestLiveNight drives a plan as the loop does and reads its journal back
// as `status` in another terminal would: the live view says what the
// night's own plan holds (running with elapsed time, waiting and why,
// counts, cost against max_cost_usd), and estimates the end.
func TestLiveNight(t *testing.T) {
	const down = "server notes is down since 02:00:00 (connect ECONNREFUSED)"
	tests := []struct {
		name  string
		batch *jobs.Batch
		// script drives the plan; the view is taken at d.now+at.
		script func(d *planDriver)
		at     time.Duration
		check  func(t *testing.T, lv Live)
	}{
		{
			name:  "running, queued, needs and deferred",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 1; b.MaxCostUSD = 2 }, planJob("a", nil), planJob("b", nil), planJob("c", needs("b")), planJob("d", nil)),
			script: func(d *planDriver) {
				d.health["a"] = down
				d.wake(0)
			},
			at: 90 * time.Second,
			check: func(t *testing.T, lv Live) {
				if len(lv.Running) != 1 || lv.Running[0].Name != "b" || lv.Running[0].Elapsed != 90*time.Second || lv.Running[0].Attempt != 1 {
					t.Errorf("running = %+v", lv.Running)
				}
				want := map[string]string{"a": "deferred: " + down, "c": "needs b", "d": "queued: max_parallel 1"}
				if len(lv.Waiting) != len(want) {
					t.Errorf("waiting = %+v", lv.Waiting)
				}
				for _, w := range lv.Waiting {
					if want[w.Name] != w.Why {
						t.Errorf("%s waits %q, want %q", w.Name, w.Why, want[w.Name])
					}
				}
				if lv.MaxCostUSD != 2 || !lv.EndEstimate.IsZero() || lv.EndWhy != "unknown until an attempt ends" {
					t.Errorf("max cost %v, end %v (%s)", lv.MaxCostUSD, lv.EndEstimate, lv.EndWhy)
				}
			},
		},
		{
			name:  "counts, cost, a retry's pause and the end at this pace",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 1 }, planJob("a", nil), planJob("b", retries(1)), planJob("c", nil), planJob("d", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.now = d.now.Add(10 * time.Minute)
				d.end("a", session.Done, 0.25)
				d.now = d.now.Add(10 * time.Minute)
				d.end("b", session.Failed, 0.5) // retried after 30 s; c starts meanwhile
			},
			at: 4 * time.Minute,
			check: func(t *testing.T, lv Live) {
				if lv.Done != 1 || lv.Failed != 0 || lv.Total != 4 || lv.CostUSD != 0.75 {
					t.Errorf("done %d failed %d total %d cost %v", lv.Done, lv.Failed, lv.Total, lv.CostUSD)
				}
				if len(lv.Running) != 1 || lv.Running[0].Name != "c" {
					t.Fatalf("running = %+v", lv.Running)
				}
				var b LiveJob
				for _, w := range lv.Waiting {
					if w.Name == "b" {
						b = w
					}
				}
				if !strings.HasPrefix(b.Why, "retry after attempt 1 failed") || b.Attempt != 1 {
					t.Errorf("b waits %+v", b)
				}
				// 3 jobs left (b, c, d), one at a time, at 10 min each, c 4 min in.
				if want := planT0.Add(20*time.Minute + 4*time.Minute + 26*time.Minute); !lv.EndEstimate.Equal(want) {
					t.Errorf("end %v, want %v (%s)", lv.EndEstimate, want, lv.EndWhy)
				}
			},
		},
		{
			name:  "a pause on the model's API",
			batch: planBatch(nil, planJob("a", nil), planJob("b", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", session.Outcome{Status: session.Failed, Reason: "usage limit",
					API: &modelapi.Failure{Class: modelapi.UsageLimit, Reason: "usage limit", ResetAt: planT0.Add(time.Hour)}})
			},
			check: func(t *testing.T, lv Live) {
				if !strings.HasPrefix(lv.Paused, "usage-limit") || !lv.PausedUntil.Equal(planT0.Add(time.Hour)) {
					t.Errorf("paused %q until %v", lv.Paused, lv.PausedUntil)
				}
				for _, w := range lv.Waiting {
					if !strings.Contains(w.Why, "paused") || !w.Until.Equal(planT0.Add(time.Hour)) {
						t.Errorf("%s waits %q until %v", w.Name, w.Why, w.Until)
					}
				}
			},
		},
		{
			name:  "the night ended",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.end("a", session.Done, 0.1)
				d.journal = append(d.journal, journal.Event{Time: d.now, Type: journal.RunFinished})
			},
			check: func(t *testing.T, lv Live) {
				if lv.Ended.IsZero() || lv.Done != 1 || len(lv.Running)+len(lv.Waiting) != 0 || !lv.EndEstimate.IsZero() {
					t.Errorf("ended %v done %d running %v waiting %v end %v", lv.Ended, lv.Done, lv.Running, lv.Waiting, lv.EndEstimate)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newPlanDriver(t, tc.batch)
			tc.script(d)
			events := append([]journal.Event{{Time: planT0, Type: journal.RunStarted, Run: "r1", Batch: tc.batch.Name}}, d.journal...)
			lv := LiveNight(tc.batch, events, d.now.Add(tc.at))
			if lv.RunID != "r1" || lv.Batch != tc.batch.Name || !lv.Started.Equal(planT0) {
				t.Errorf("run %q batch %q started %v", lv.RunID, lv.Batch, lv.Started)
			}
			// The view is the night's own plan: the same phases.
			for name, jp := range d.p.jobs {
				got := "waiting"
				for _, r := range lv.Running {
					if r.Name == name {
						got = "running"
					}
				}
				if jp.phase == phaseRunning && got != "running" || jp.phase != phaseRunning && got == "running" {
					t.Errorf("%s: the plan has it %s, the view %s", name, jp.phase, got)
				}
			}
			tc.check(t, lv)
		})
	}
}

func TestEstimateEnd(t *testing.T) {
	now := planT0
	for _, tc := range []struct {
		name     string
		left, n  int
		took     []time.Duration
		running  []LiveJob
		deadline time.Time
		want     time.Time
	}{
		{name: "nothing left", want: now},
		{name: "no attempt ended, no deadline", left: 3, n: 1},
		{name: "no attempt ended: the deadline", left: 3, n: 1, deadline: now.Add(5 * time.Hour), want: now.Add(5 * time.Hour)},
		{name: "median, in rounds of max_parallel", left: 5, n: 2, took: []time.Duration{time.Minute, 10 * time.Minute, 4 * time.Minute},
			want: now.Add(3 * 4 * time.Minute)},
		{name: "the running attempts are part-way", left: 2, n: 1, took: []time.Duration{10 * time.Minute},
			running: []LiveJob{{Elapsed: 3 * time.Minute}}, want: now.Add(17 * time.Minute)},
		{name: "capped by the deadline", left: 10, n: 1, took: []time.Duration{time.Hour}, deadline: now.Add(2 * time.Hour),
			want: now.Add(2 * time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := estimateEnd(now, tc.left, tc.n, tc.took, tc.running, tc.deadline)
			if !got.Equal(tc.want) || why == "" {
				t.Errorf("end %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}
