package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/modelapi"
	"github.com/nightwatch-dev/nightwatch/session"
)

// apiOutcome is an attempt that failed on the API with class.
func apiOutcome(class modelapi.Class, reason string, reset time.Time) session.Outcome {
	return session.Outcome{Status: session.Failed, ExitCode: 1, Reason: reason,
		API: &modelapi.Failure{Class: class, Reason: reason, ResetAt: reset}}
}

// testWaits are the API waits of the table: seconds.
var testWaits = modelapi.Waits{UsageWait: 20 * time.Second, CheckMin: 5 * time.Second, CheckMax: 20 * time.Second,
	RateLimitMin: 10 * time.Second, RateLimitMax: 40 * time.Second, MaxOutage: 10 * time.Minute}

func TestAPIRules(t *testing.T) {
	reset := planT0.Add(2 * time.Minute)
	usage := func() session.Outcome {
		return apiOutcome(modelapi.UsageLimit, "You've hit your 5-hour limit · resets 2:02am", reset)
	}
	outage := func() session.Outcome {
		return apiOutcome(modelapi.Unavailable, "API Error: Connection refused (ECONNREFUSED)", time.Time{})
	}
	invalid := apiOutcome(modelapi.InvalidCredentials, "Invalid API key · Fix external API key", time.Time{})
	tests := []struct {
		name     string
		batch    *jobs.Batch
		script   func(d *planDriver)
		launches []string
		records  []string
		phases   map[string]string
		finished bool
		notified int
	}{
		{
			name:  "usage limit: the night pauses until the reset, the attempt is not spent",
			batch: planBatch(nil, planJob("a", retries(0)), planJob("b", retries(0))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", usage())
				d.wake(time.Minute) // still paused: nothing starts
				d.wake(time.Minute) // the reset came
				d.end("a", session.Done, 0)
				d.end("b", session.Done, 0)
			},
			launches: []string{"a#1", "a#2", "b#1"},
			records: []string{"job-retried a: You've hit your 5-hour limit · resets 2:02am (the attempt is not counted)",
				"night-paused : You've hit your 5-hour limit · resets 2:02am",
				"night-resumed : the pause ended at " + reset.Format("15:04:05"),
				"job-finished a:", "job-finished b:"},
			phases:   map[string]string{"a": "done", "b": "done"},
			finished: true,
		},
		{
			name:  "usage limit without a reset time: a bounded wait, then a session probes it",
			batch: planBatch(nil, planJob("a", retries(0))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", apiOutcome(modelapi.UsageLimit, "You've hit your limit", time.Time{}))
				d.wake(19 * time.Second)
				d.wake(time.Second)
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#1", "a#2"},
			phases:   map[string]string{"a": "done"},
			finished: true,
		},
		{
			// The text's reset just passed (modelapi.JustPassed): a short
			// wait (CheckMin), doubled while the limit holds, never the
			// 23 hours of reading it as tomorrow's.
			name:  "usage limit whose reset just passed: a short wait that doubles",
			batch: planBatch(nil, planJob("a", retries(0))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", apiOutcome(modelapi.UsageLimit, "You've hit your limit · resets 1:55am", planT0.Add(-5*time.Minute)))
				d.wake(4 * time.Second) // inside the 5 s wait: nothing starts
				d.wake(time.Second)
				d.endWith("a", apiOutcome(modelapi.UsageLimit, "You've hit your limit · resets 1:55am", planT0.Add(-5*time.Minute)))
				d.wake(9 * time.Second) // the wait doubled to 10 s
				d.wake(time.Second)
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#1", "a#2", "a#3"},
			phases:   map[string]string{"a": "done"},
			finished: true,
		},
		{
			name: "usage limit past the deadline: the rest is skipped with the pause's reason",
			batch: planBatch(func(b *jobs.Batch) { b.Deadline = &jobs.ClockTime{Hour: 2, Minute: 1} },
				planJob("a", nil), planJob("b", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", usage())
			},
			launches: []string{"a#1"},
			records: []string{"job-retried a: You've hit your 5-hour limit · resets 2:02am (the attempt is not counted)",
				"night-paused : You've hit your 5-hour limit · resets 2:02am",
				"job-skipped a: the night paused until 02:02 (usage-limit: You've hit your 5-hour limit · resets 2:02am), past the deadline 02:01",
				"job-skipped b: the night paused until 02:02 (usage-limit: You've hit your 5-hour limit · resets 2:02am), past the deadline 02:01"},
			phases:   map[string]string{"a": "skipped", "b": "skipped"},
			finished: true,
		},
		{
			name:  "usage limit: a running session is let finish",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 2 }, planJob("a", nil), planJob("b", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", usage())
				d.end("b", session.Done, 0) // b ran on
				d.wake(2 * time.Minute)
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#1", "b#1", "a#2"},
			phases:   map[string]string{"a": "done", "b": "done"},
			finished: true,
		},
		{
			name:  "outage: nothing starts until the check says the API answers; counted once per outage",
			batch: planBatch(nil, planJob("a", retries(1)), planJob("b", retries(0))),
			script: func(d *planDriver) {
				d.apiDown = true
				d.wake(0)
				d.endWith("a", outage()) // counted: retry 1 of 1
				d.wake(5 * time.Second)  // check 1: down; next in 10 s
				d.wake(5 * time.Second)  // not yet
				d.wake(5 * time.Second)  // check 2: down; next in 20 s
				d.apiDown = false
				d.wake(20 * time.Second) // check 3: up; a#2 is the trial, b waits for it
				d.endWith("a", outage()) // the trial failed: the same outage, the trial not counted
				d.wake(5 * time.Second)  // check 4: up; a#3 is the trial
				d.feed(ModelTurn{Job: "a", Attempt: 3})
				d.wake(0) // the API answered a real request: b starts
				d.end("a", session.Done, 0)
				d.end("b", session.Done, 0)
			},
			launches: []string{"a#1", "a#2", "a#3", "b#1"},
			records: []string{"job-retried a: API Error: Connection refused (ECONNREFUSED)",
				"night-paused : API Error: Connection refused (ECONNREFUSED)",
				"night-resumed : the API answers again after 35s",
				"api-trial-started a:",
				"job-retried a: API Error: Connection refused (ECONNREFUSED) (the attempt is not counted)",
				"night-paused : API Error: Connection refused (ECONNREFUSED)",
				"night-resumed : the API answers again after 40s",
				"api-trial-started a:", "api-trial-ended a:",
				"job-finished a:", "job-finished b:"},
			phases:   map[string]string{"a": "done", "b": "done"},
			finished: true,
		},
		{
			// The check is an unauthenticated POST: an edge that
			// authenticates before it schedules answers it 401 while
			// every real request gets 529. One session is the trial
			// (half-open), the others wait for its first model turn, and
			// a 5xx right after a passing check is the same outage.
			name:  "outage: a check that passes while real requests still fail: one trial, the rest wait, no new charge",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 3 }, planJob("a", retries(1)), planJob("b", retries(1)), planJob("c", retries(1))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", outage()) // each job's first failure in the outage is counted
				d.endWith("b", outage())
				d.endWith("c", outage())
				for range 3 {
					d.wake(5 * time.Second) // the check passes (the edge's 401): one trial
					d.endWith(d.last(), outage())
				}
				d.wake(5 * time.Second)
				d.feed(ModelTurn{Job: "a", Attempt: 5})
				d.wake(0) // the API answered: b and c start
				d.end("a", session.Done, 0)
				d.end("b", session.Done, 0)
				d.end("c", session.Done, 0)
			},
			launches: []string{"a#1", "b#1", "c#1", "a#2", "a#3", "a#4", "a#5", "b#2", "c#2"},
			phases:   map[string]string{"a": "done", "b": "done", "c": "done"},
			finished: true,
		},
		{
			// Sessions that ran from before the outage fail during the
			// trial: the night waits again, and the check's next pass
			// starts no second trial while the first runs.
			name: "outage: an older session failing during the trial: one trial still",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 3 }, planJob("a", retries(1)), planJob("b", retries(1)),
				planJob("c", retries(1))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", outage())
				d.wake(5 * time.Second) // a#2 is the trial; b and c run on from before
				d.endWith("b", outage())
				d.wake(5 * time.Second) // the check passes again; a#2 still runs
				d.endWith("a", outage())
				d.wake(5 * time.Second) // a#3 is the trial
				d.endWith("c", outage())
				d.wake(5 * time.Second)
				d.feed(ModelTurn{Job: "a", Attempt: 3})
				d.wake(0)
				d.end("a", session.Done, 0)
				d.end("b", session.Done, 0)
				d.end("c", session.Done, 0)
			},
			launches: []string{"a#1", "b#1", "c#1", "a#2", "a#3", "b#2", "c#2"},
			phases:   map[string]string{"a": "done", "b": "done", "c": "done"},
			finished: true,
		},
		{
			name:  "outage: a trial that ends on its own terms lets the others start",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 2 }, planJob("a", retries(1)), planJob("b", retries(1))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", outage())
				d.endWith("b", outage())
				d.wake(5 * time.Second) // a#2 is the trial
				d.wake(time.Second)     // b still waits
				d.end("a", session.Done, 0)
				d.end("b", session.Done, 0)
			},
			launches: []string{"a#1", "b#1", "a#2", "b#2"},
			phases:   map[string]string{"a": "done", "b": "done"},
			finished: true,
		},
		{
			name:  "outage: a trial whose job fails on its own ends the trial",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 2 }, planJob("a", retries(0)), planJob("b", retries(1))),
			script: func(d *planDriver) {
				d.apiDown = true
				d.wake(0)
				d.endWith("b", outage())
				d.apiDown = false
				d.wake(5 * time.Second) // a runs on from before; b#2 is the trial
				d.end("b", session.Failed, 1)
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#1", "b#1", "b#2"},
			phases:   map[string]string{"a": "done", "b": "failed"},
			finished: true,
		},
		{
			name:  "outage: each job's first failure in an outage is counted",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 2 }, planJob("a", retries(1)), planJob("b", retries(0))),
			script: func(d *planDriver) {
				d.apiDown = true
				d.wake(0)
				d.endWith("a", outage())
				d.endWith("b", outage()) // b's first in this outage: counted, b fails (retries 0)
				d.wake(5 * time.Second)
				d.apiDown = false
				d.wake(10 * time.Second)
				d.feed(ModelTurn{Job: "a", Attempt: 2}) // the API answers real requests again
				d.endWith("a", outage())                // a new outage: a's second counted attempt, none left
			},
			launches: []string{"a#1", "b#1", "a#2"},
			phases:   map[string]string{"a": "failed", "b": "failed"},
			finished: true,
		},
		{
			name:  "outage: the same job failing twice in one outage spends one attempt",
			batch: planBatch(nil, planJob("a", retries(1)), planJob("b", nil)),
			script: func(d *planDriver) {
				d.apiDown = true
				d.wake(0)
				d.endWith("a", outage())
				d.p.pause = nil          // as if a check had let it start while the outage went on
				d.wake(30 * time.Second) // a#2 starts
				d.p.pause = &nightPause{Wait: modelapi.Wait{Class: modelapi.Unavailable, Since: d.now, Until: d.now.Add(time.Hour)}}
				d.endWith("a", outage()) // the same outage: not counted
				d.apiDown = false
				d.p.pause.Until = d.now
				d.wake(time.Second)
				d.end("a", session.Done, 0)
				d.end("b", session.Done, 0)
			},
			launches: []string{"a#1", "a#2", "a#3", "b#1"},
			phases:   map[string]string{"a": "done", "b": "done"},
			finished: true,
		},
		{
			name:  "outage longer than the bound: the rest is skipped",
			batch: planBatch(nil, planJob("a", retries(3))),
			script: func(d *planDriver) {
				d.apiDown = true
				d.wake(0)
				d.endWith("a", outage())
				for range 40 {
					d.wake(20 * time.Second)
				}
			},
			launches: []string{"a#1"},
			phases:   map[string]string{"a": "skipped"},
			finished: true,
		},
		{
			name:  "invalid credentials: the night stops at once, the rest skipped, the operator told now",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 2 }, planJob("a", retries(2)), planJob("b", nil), planJob("c", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", invalid)
				d.endWith("b", invalid) // running when it stopped: let finish, then failed
			},
			launches: []string{"a#1", "b#1"},
			records: []string{"job-finished a: Invalid API key · Fix external API key",
				"night-stopped : Invalid API key · Fix external API key",
				"job-skipped c: the night stopped: Invalid API key · Fix external API key",
				"job-finished b: Invalid API key · Fix external API key"},
			phases:   map[string]string{"a": "failed", "b": "failed", "c": "skipped"},
			finished: true,
			notified: 1,
		},
		{
			name:  "rate limit: the night backs off, doubling, and the attempt is not spent",
			batch: planBatch(nil, planJob("a", retries(0))),
			script: func(d *planDriver) {
				rl := apiOutcome(modelapi.RateLimit, "API Error: Request rejected (429)", time.Time{})
				d.wake(0)
				d.endWith("a", rl)
				d.wake(10 * time.Second)
				d.endWith("a", rl)
				d.wake(10 * time.Second) // paused 20 s this time
				d.wake(10 * time.Second)
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#1", "a#2", "a#3"},
			phases:   map[string]string{"a": "done"},
			finished: true,
		},
		{
			name:  "max turns: the job's own failure, retried as any",
			batch: planBatch(nil, planJob("a", retries(1))),
			script: func(d *planDriver) {
				mt := apiOutcome(modelapi.MaxTurns, "exit 1: error_max_turns", time.Time{})
				d.wake(0)
				d.endWith("a", mt)
				d.wake(30 * time.Second)
				d.endWith("a", mt)
			},
			launches: []string{"a#1", "a#2"},
			records:  []string{"job-retried a: exit 1: error_max_turns", "job-finished a: exit 1: error_max_turns"},
			phases:   map[string]string{"a": "failed"},
			finished: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newPlanDriver(t, tt.batch)
			d.p.rules.waits = testWaits.WithDefaults()
			tt.script(d)
			if tt.launches != nil && !slices.Equal(d.launches, tt.launches) {
				t.Errorf("launches = %q, want %q", d.launches, tt.launches)
			}
			if tt.records != nil && !slices.Equal(d.recorded(), tt.records) {
				t.Errorf("records =\n%q\nwant\n%q", d.recorded(), tt.records)
			}
			for job, want := range tt.phases {
				if got := d.phases()[job]; got != want {
					t.Errorf("%s is %s, want %s", job, got, want)
				}
			}
			if d.finished != tt.finished {
				t.Errorf("finished = %v, want %v", d.finished, tt.finished)
			}
			if len(d.notified) != tt.notified {
				t.Errorf("notified %q, want %d notification(s)", d.notified, tt.notified)
			}
		})
	}
}

// Which retries resume the last attempt's Claude session.
func TestPlanResumeRules(t *testing.T) {
	timeout := session.Outcome{Status: session.Failed, KilledBy: "timeout", SessionID: "s-1", Reason: "killed after 1m timeout"}
	tests := []struct {
		name   string
		resume bool
		out    session.Outcome
		want   string // the second launch's resume
	}{
		{"timeout resumes", true, timeout, "s-1"},
		{"stall resumes", true, session.Outcome{Status: session.Failed, KilledBy: "stall", SessionID: "s-1"}, "s-1"},
		{"a server lost mid-job resumes", true, session.Outcome{Status: session.Failed, KilledBy: session.KilledAbandoned, SessionID: "s-1", Reason: "x"}, "s-1"},
		{"an outage resumes", true, func() session.Outcome {
			o := apiOutcome(modelapi.Unavailable, "refused", time.Time{})
			o.SessionID = "s-1"
			return o
		}(), "s-1"},
		{"a usage limit resumes", true, func() session.Outcome {
			o := apiOutcome(modelapi.UsageLimit, "limit", time.Time{})
			o.SessionID = "s-1"
			return o
		}(), "s-1"},
		{"max turns starts fresh", true, func() session.Outcome {
			o := apiOutcome(modelapi.MaxTurns, "max turns", time.Time{})
			o.SessionID = "s-1"
			return o
		}(), ""},
		{"the job's own failure starts fresh", true, session.Outcome{Status: session.Failed, SessionID: "s-1", Reason: "exit 1"}, ""},
		{"no session id starts fresh", true, session.Outcome{Status: session.Failed, KilledBy: "timeout"}, ""},
		{"resume: false starts fresh", false, timeout, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := planBatch(func(b *jobs.Batch) { b.Resume = tt.resume }, planJob("a", retries(1)))
			b.Jobs[0].Servers = nil
			d := newPlanDriver(t, b)
			d.p.rules.waits = testWaits.WithDefaults()
			d.wake(0)
			if !d.p.Runs("a", 1) || d.p.Runs("a", 2) || d.p.Runs("b", 1) {
				t.Fatalf("Runs: a#1 %v, a#2 %v, b#1 %v; want only a#1", d.p.Runs("a", 1), d.p.Runs("a", 2), d.p.Runs("b", 1))
			}
			d.endWith("a", tt.out)
			// What the loop asks before the retry's servers are checked.
			if resumes, attempts := d.p.Resumes("a"); resumes != (tt.want != "") || attempts != 1 {
				t.Errorf("Resumes(a) = %v, %d; want %v, 1", resumes, attempts, tt.want != "")
			}
			for range 10 {
				if len(d.launches) > 1 {
					break
				}
				d.apiDown = false
				d.wake(30 * time.Second)
			}
			if len(d.resumes) != 2 || d.resumes[1] != tt.want {
				t.Fatalf("launches %q resumes %q, want the second to resume %q", d.launches, d.resumes, tt.want)
			}
			if !d.p.Runs("a", 2) || d.p.Runs("a", 1) {
				t.Errorf("after the second launch, Runs: a#1 %v, a#2 %v; want only a#2", d.p.Runs("a", 1), d.p.Runs("a", 2))
			}
		})
	}
}

// The plan's waits are the batch's api: block over the defaults.
func TestAPIWaitsOfThePlan(t *testing.T) {
	batch := jobs.APIWaits{CheckInterval: 2 * time.Second, MaxWait: time.Hour, PauseWithoutReset: time.Minute}
	b := planBatch(func(b *jobs.Batch) { b.API = batch }, planJob("a", nil))
	if got := newPlan(b, planT0, time.Second).rules.waits; got.CheckMin != 2*time.Second || got.MaxOutage != time.Hour {
		t.Errorf("the plan's waits %+v, want the batch's", got)
	}
	// The night's own waits (NightOptions.APIWaits) come before the batch's.
	got := New(b, planT0, time.Second, modelapi.Waits{CheckMin: 3 * time.Second}).rules.waits
	if got.CheckMin != 3*time.Second || got.MaxOutage != time.Hour {
		t.Errorf("New's waits %+v, want the night's check interval over the batch's", got)
	}
}

// A resumed session that cannot use the job's servers from its start
// (init: failed) is stopped, and the next attempt starts a fresh session
// instead of resuming the deaf one again; a resumed night folds the same.
// A server lost mid-job (not at init) still resumes.
func TestPlanDeafResumeRunsFresh(t *testing.T) {
	timeout := session.Outcome{Status: session.Failed, KilledBy: "timeout", SessionID: "s-1", Reason: "killed after 1m timeout"}
	deaf := session.Outcome{Status: session.Failed, KilledBy: session.KilledAbandoned, SessionID: "s-1", ResumedFrom: "s-1",
		ServersFailed: []string{"notes"}, Unusable: []session.Unusable{{Server: "notes", Why: "failed at start"}},
		Reason: "stopped early: server notes could not be used (failed at start)"}
	lostMidJob := deaf
	lostMidJob.ServersFailed = nil
	lostMidJob.Unusable = []session.Unusable{{Server: "notes", Why: "not connected"}}
	for _, tt := range []struct {
		name string
		out  session.Outcome
		want string
	}{
		{"failed at init: fresh", deaf, ""},
		{"lost mid-job: resumes", lostMidJob, "s-1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := planBatch(func(b *jobs.Batch) { b.Resume = true }, planJob("a", retries(2)))
			d := newPlanDriver(t, b)
			d.wake(0)
			d.endWith("a", timeout)
			d.wake(time.Minute)
			if len(d.resumes) != 2 || d.resumes[1] != "s-1" {
				t.Fatalf("launches %q resumes %q, want the second to resume s-1", d.launches, d.resumes)
			}
			d.endWith("a", tt.out)
			d.wake(time.Minute)
			if len(d.resumes) != 3 || d.resumes[2] != tt.want {
				t.Fatalf("launches %q resumes %q, want the third to resume %q", d.launches, d.resumes, tt.want)
			}
			var said bool
			for _, ev := range d.records {
				said = said || ev.Type == journal.JobDeferred && ev.Fresh && strings.HasPrefix(ev.Reason, "resumed without notes")
			}
			if said != (tt.want == "") {
				t.Errorf("a fresh-marked job-deferred line saying \"resumed without notes\": %v, want %v", said, tt.want == "")
			}
			// The journal up to the deaf attempt's end folds into the same
			// next attempt.
			var upTo []journal.Event
			for _, ev := range d.journal {
				if ev.Type == journal.JobStarted && ev.Attempt == 3 {
					break
				}
				upTo = append(upTo, ev)
			}
			folded := newPlan(b, planT0, 30*time.Second)
			folded.Fold(upTo)
			if got := folded.jobs["a"].resume; got != tt.want {
				t.Errorf("folded: the next attempt resumes %q, want %q", got, tt.want)
			}
		})
	}
}
