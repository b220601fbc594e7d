package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/session"
)

// The night's rules as tables: a plan is driven with events at chosen
// moments, and what it asks for (health checks, launches, journal lines,
// the end) is collected. No process, no file, no clock.

var planT0 = time.Date(2026, 12, 1, 2, 0, 0, 0, time.Local)

// planDriver plays the loop's part: it answers health checks from health
// (job → why its servers are down, "" for healthy) and collects actions.
type planDriver struct {
	t      *testing.T
	p      *Plan
	now    time.Time
	health map[string]string
	// down names the servers of health's text (default: notes).
	down      map[string][]string
	checks    []string
	launches  []string // "job#attempt"
	feedbacks []string // each launch's feedback
	resumes   []string // each launch's session to resume
	records   []journal.Event
	maintains int
	finished  bool
	// apiDown makes the API check fail; apiChecks counts the checks.
	apiDown   bool
	apiChecks int
	notified  []string // NotifyNow's reasons
	// journal is what the loop would append: a job-started line per
	// launch and every record, stamped with the driver's clock.
	journal []journal.Event
}

func newPlanDriver(t *testing.T, b *jobs.Batch) *planDriver {
	return &planDriver{t: t, p: newPlan(b, planT0, 30*time.Second), now: planT0, health: map[string]string{}, down: map[string][]string{}}
}

func (d *planDriver) feed(ev Event) { d.do(d.p.Step(d.now, ev)) }

// last is the job of the latest launch.
func (d *planDriver) last() string {
	if len(d.launches) == 0 {
		d.t.Fatal("nothing was launched")
	}
	job, _, _ := strings.Cut(d.launches[len(d.launches)-1], "#")
	return job
}

func (d *planDriver) do(acts []Action) {
	for len(acts) > 0 {
		a := acts[0]
		acts = acts[1:]
		switch a := a.(type) {
		case CheckHealth:
			d.checks = append(d.checks, a.Job)
			var servers []string
			if d.health[a.Job] != "" {
				servers = []string{"notes"}
				if names, ok := d.down[a.Job]; ok {
					servers = names
				}
			}
			acts = append(d.p.Step(d.now, Health{Job: a.Job, Down: d.health[a.Job], Servers: servers}), acts...)
		case Launch:
			d.launches = append(d.launches, fmt.Sprintf("%s#%d", a.Job, a.Attempt))
			d.feedbacks = append(d.feedbacks, a.Feedback)
			d.resumes = append(d.resumes, a.Resume)
			d.journal = append(d.journal, journal.Event{Time: d.now, Type: journal.JobStarted, Job: a.Job, Attempt: a.Attempt, Resume: a.Resume})
		case Record:
			d.records = append(d.records, a.Event)
			ev := a.Event
			if ev.Time.IsZero() {
				ev.Time = d.now
			}
			d.journal = append(d.journal, ev)
		case Maintain:
			d.maintains++
		case Finish:
			d.finished = true
		case CheckAPI:
			d.apiChecks++
			acts = append(d.p.Step(d.now, APIChecked{OK: !d.apiDown, Why: "refused"}), acts...)
		case NotifyNow:
			d.notified = append(d.notified, a.Reason)
		default:
			d.t.Fatalf("unknown action %T", a)
		}
	}
}

// wake is the loop's turn at d.now+after.
func (d *planDriver) wake(after time.Duration) {
	d.now = d.now.Add(after)
	d.feed(Wake{})
}

// end ends job's running attempt with status (done or failed) and cost,
// then wakes the plan, as the loop does.
func (d *planDriver) end(job, status string, cost float64) {
	d.t.Helper()
	jp := d.p.jobs[job]
	if jp.phase != phaseRunning {
		d.t.Fatalf("end %s: it is %s, not running", job, jp.phase)
	}
	out := session.Outcome{Status: status, CostUSD: cost}
	if status != session.Done {
		out.Reason = "exit 1: error_max_turns"
	}
	d.feed(AttemptEnded{Job: job, Attempt: jp.attempts, Outcome: out})
	d.feed(Wake{})
}

// endWith ends job's running attempt with out, then wakes the plan.
func (d *planDriver) endWith(job string, out session.Outcome) {
	d.t.Helper()
	jp := d.p.jobs[job]
	if jp.phase != phaseRunning {
		d.t.Fatalf("end %s: it is %s, not running", job, jp.phase)
	}
	d.feed(AttemptEnded{Job: job, Attempt: jp.attempts, Outcome: out})
	d.feed(Wake{})
}

// Outcomes of the rules that read more than the status.
var (
	planDenied = session.Outcome{Status: session.Failed, Denied: []string{"mcp__notes__echo"},
		Reason: "permission denied: mcp__notes__echo (not allowed for this job)"}
	planUnusable = session.Outcome{Status: session.Failed, KilledBy: session.KilledAbandoned,
		Unusable: []session.Unusable{{Server: "notes", Why: "failed at start"}},
		Reason:   "stopped early: server notes could not be used (failed at start)"}
	planBudget = session.Outcome{Status: session.Failed, CostUSD: 0.4, NumTurns: 3,
		Budget: &session.BudgetStop{Limit: session.LimitTurns, Max: 3, Spent: 3, ByCLI: true},
		Reason: "budget exceeded: max_turns 3 reached (3 turns)"}
	planRanWithout = session.Outcome{Status: session.Done,
		Unusable: []session.Unusable{{Server: "notes", Why: "failed at start"}}}
	planVerifyFailed = session.Outcome{Status: session.Failed, Reason: "verify failed (exit 1): FAIL x",
		Verify: &session.VerifyResult{Command: []string{"/bin/check"}, ExitCode: 1, Output: "FAIL x"}}
)

func (d *planDriver) phases() map[string]string {
	out := map[string]string{}
	for name, jp := range d.p.jobs {
		out[name] = jp.phase.String()
	}
	return out
}

// recordsOf are the records of one type.
func (d *planDriver) recordsOf(typ journal.Type) []journal.Event {
	var out []journal.Event
	for _, ev := range d.records {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// recorded is "type job: reason" per journal line.
func (d *planDriver) recorded() []string {
	var out []string
	for _, ev := range d.records {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s: %s", ev.Type, ev.Job, ev.Reason)))
	}
	return out
}

func planBatch(mut func(b *jobs.Batch), js ...*jobs.Job) *jobs.Batch {
	b := &jobs.Batch{Name: "t", MaxParallel: 1, Jobs: js, Defaults: jobs.JobDefaults{MaxDefer: time.Hour}}
	if mut != nil {
		mut(b)
	}
	return b
}

func planJob(name string, mut func(j *jobs.Job)) *jobs.Job {
	j := &jobs.Job{Name: name, Servers: []string{"notes"}, OnUnhealthy: jobs.Defer}
	if mut != nil {
		mut(j)
	}
	return j
}

func needs(n ...string) func(*jobs.Job) { return func(j *jobs.Job) { j.Needs = n } }
func retries(n int) func(*jobs.Job)     { return func(j *jobs.Job) { j.Retries = n } }
func onUnhealthy(o jobs.OnUnhealthy) func(*jobs.Job) {
	return func(j *jobs.Job) { j.OnUnhealthy = o }
}

func TestPlanRules(t *testing.T) {
	const down = "server notes is down since 02:00:00 (connect ECONNREFUSED)"
	tests := []struct {
		name   string
		batch  *jobs.Batch
		script func(d *planDriver)
		// Expectations; nil or zero means not checked.
		launches []string
		records  []string
		phases   map[string]string
		finished bool
	}{
		{
			name:  "budget: a job over its own budget fails as budget exceeded, not retried",
			batch: planBatch(nil, planJob("a", retries(2)), planJob("b", needs("a"))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", planBudget)
				last := d.records[0]
				if b := last.Budget; b == nil || b.Limit != journal.BudgetMaxTurns || b.Max != 3 || b.Spent != 3 || b.By != journal.BudgetByClaude {
					d.t.Errorf("job-finished budget = %+v", last.Budget)
				}
				if d.p.cost != 0.4 {
					d.t.Errorf("the night's cost %v: the stopped attempt's cost is spent", d.p.cost)
				}
			},
			launches: []string{"a#1"},
			records:  []string{"job-finished a: budget exceeded: max_turns 3 reached (3 turns)", "job-skipped b: it needs a, which failed"},
			phases:   map[string]string{"a": "failed", "b": "skipped"},
			finished: true,
		},
		{
			name:  "needs: b waits for a, then runs",
			batch: planBatch(nil, planJob("a", nil), planJob("b", needs("a"))),
			script: func(d *planDriver) {
				d.wake(0)
				d.end("a", session.Done, 0.1)
				d.end("b", session.Done, 0.1)
			},
			launches: []string{"a#1", "b#1"},
			records:  []string{"job-finished a:", "job-finished b:"},
			phases:   map[string]string{"a": "done", "b": "done"},
			finished: true,
		},
		{
			name:  "needs: a failed need skips the job and what needs it",
			batch: planBatch(nil, planJob("a", nil), planJob("b", needs("a")), planJob("c", needs("b"))),
			script: func(d *planDriver) {
				d.wake(0)
				d.end("a", session.Failed, 0)
			},
			launches: []string{"a#1"},
			records: []string{"job-finished a: exit 1: error_max_turns", "job-skipped b: it needs a, which failed",
				"job-skipped c: it needs b, which was skipped"},
			phases:   map[string]string{"a": "failed", "b": "skipped", "c": "skipped"},
			finished: true,
		},
		{
			name:  "defer: a job waits for its server, once journaled, and starts when it is back",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.health["a"] = down
				d.wake(0)
				d.wake(10 * time.Second) // same reason: not journaled again
				if jp := d.p.jobs["a"]; jp.phase != phaseDeferred || jp.deferrals != 1 {
					d.t.Errorf("after two wakes: %s, %d deferrals", jp.phase, jp.deferrals)
				}
				if p := d.p.Progress(d.now); !slices.Equal(p.Waiting, []string{"a: " + down}) {
					d.t.Errorf("progress waiting = %q", p.Waiting)
				}
				d.health["a"] = ""
				d.wake(10 * time.Second)
			},
			launches: []string{"a#1"},
			records:  []string{"job-deferred a: " + down},
			phases:   map[string]string{"a": "running"},
		},
		{
			name:  "defer: the same servers still down are the same deferral, whatever their errors say now",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.health["a"] = down + " (reconnect failed: start.sh (45ms): exit status 1)"
				d.wake(0)
				d.health["a"] = down + " (reconnect failed: start.sh (51ms): exit status 1)"
				d.wake(10 * time.Second)
				if jp := d.p.jobs["a"]; jp.phase != phaseDeferred || jp.deferrals != 1 {
					d.t.Errorf("after two wakes: %s, %d deferrals", jp.phase, jp.deferrals)
				}
				if got := d.records[0].Waits; !slices.Equal(got, []string{"notes"}) {
					d.t.Errorf("job-deferred waits = %q, want the server it waits for", got)
				}
				d.health["a"], d.down["a"] = "server notes and search are down", []string{"notes", "search"}
				d.wake(10 * time.Second) // another server down too: a new deferral
				if jp := d.p.jobs["a"]; jp.deferrals != 2 {
					d.t.Errorf("after a second server went down: %d deferrals, want 2", jp.deferrals)
				}
			},
			records: []string{"job-deferred a: " + down + " (reconnect failed: start.sh (45ms): exit status 1)",
				"job-deferred a: server notes and search are down"},
			phases: map[string]string{"a": "deferred"},
		},
		{
			name:  "skip: on_unhealthy skip ends the job with why",
			batch: planBatch(nil, planJob("a", onUnhealthy(jobs.Skip)), planJob("b", nil)),
			script: func(d *planDriver) {
				d.health["a"] = down
				d.wake(0)
				d.end("b", session.Done, 0)
			},
			launches: []string{"b#1"},
			records:  []string{"job-skipped a: " + down, "job-finished b:"},
			phases:   map[string]string{"a": "skipped", "b": "done"},
			finished: true,
		},
		{
			name:  "run anyway: on_unhealthy run starts with a server down",
			batch: planBatch(nil, planJob("a", onUnhealthy(jobs.Run))),
			script: func(d *planDriver) {
				d.health["a"] = down
				d.wake(0)
			},
			launches: []string{"a#1"},
			phases:   map[string]string{"a": "running"},
		},
		{
			name:  "retries: the pause grows with each attempt, then the job fails",
			batch: planBatch(nil, planJob("a", retries(2))),
			script: func(d *planDriver) {
				d.wake(0)
				d.end("a", session.Failed, 0)
				if jp := d.p.jobs["a"]; jp.phase != phaseWaitingRetry || !jp.notBefore.Equal(d.now.Add(30*time.Second)) {
					d.t.Errorf("after attempt 1: %s until %s", jp.phase, jp.notBefore)
				}
				d.wake(29 * time.Second) // too early
				d.wake(time.Second)
				d.end("a", session.Failed, 0)
				d.wake(59 * time.Second) // the second pause is 60 s
				d.wake(time.Second)
				d.end("a", session.Failed, 0)
			},
			launches: []string{"a#1", "a#2", "a#3"},
			records: []string{"job-retried a: exit 1: error_max_turns", "job-retried a: exit 1: error_max_turns",
				"job-finished a: exit 1: error_max_turns"},
			phases:   map[string]string{"a": "failed"},
			finished: true,
		},
		{
			name:  "retries: a retry that is done makes the job done",
			batch: planBatch(nil, planJob("a", retries(1))),
			script: func(d *planDriver) {
				d.wake(0)
				d.end("a", session.Failed, 0)
				d.wake(30 * time.Second)
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#1", "a#2"},
			phases:   map[string]string{"a": "done"},
			finished: true,
		},
		{
			name: "deadline: nothing starts once it passed; a waiting job says what it waited for",
			batch: planBatch(func(b *jobs.Batch) { b.Deadline = &jobs.ClockTime{Hour: 3}; b.MaxParallel = 2 },
				planJob("a", nil), planJob("b", needs("a")), planJob("c", nil)),
			script: func(d *planDriver) {
				d.health["c"] = down
				d.wake(0)
				d.wake(time.Hour) // 03:00
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#1"},
			records: []string{"job-deferred c: " + down, "job-skipped b: the deadline 03:00 passed",
				"job-skipped c: the deadline 03:00 passed; it was waiting: " + down, "job-finished a:"},
			phases:   map[string]string{"a": "done", "b": "skipped", "c": "skipped"},
			finished: true,
		},
		{
			name:  "max_cost_usd: no job starts once the night has spent it",
			batch: planBatch(func(b *jobs.Batch) { b.MaxCostUSD = 5 }, planJob("a", nil), planJob("b", nil), planJob("c", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.end("a", session.Done, 3.5)
				d.end("b", session.Done, 3.5)
			},
			launches: []string{"a#1", "b#1"},
			records:  []string{"job-finished a:", "job-finished b:", "job-skipped c: max_cost_usd reached: $7.00 of $5.00 spent"},
			phases:   map[string]string{"a": "done", "b": "done", "c": "skipped"},
			finished: true,
		},
		{
			name:  "max_defer: a job that waited that long with nothing running is given up",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.health["a"] = down
				d.wake(0)
				d.wake(59 * time.Minute)
				if d.p.jobs["a"].phase != phaseDeferred {
					d.t.Errorf("given up before max_defer")
				}
				d.wake(time.Minute)
			},
			records:  []string{"job-deferred a: " + down, "job-skipped a: waited 1h0m0s for its servers: " + down},
			phases:   map[string]string{"a": "skipped"},
			finished: true,
		},
		{
			name:  "max_defer: not while another job runs",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 2 }, planJob("a", nil), planJob("b", nil)),
			script: func(d *planDriver) {
				d.health["a"] = down
				d.wake(0)
				d.wake(2 * time.Hour)
			},
			launches: []string{"b#1"},
			records:  []string{"job-deferred a: " + down},
			phases:   map[string]string{"a": "deferred", "b": "running"},
		},
		{
			name:  "max_parallel: as many at once as the batch allows, in file order",
			batch: planBatch(func(b *jobs.Batch) { b.MaxParallel = 2 }, planJob("a", nil), planJob("b", nil), planJob("c", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.end("b", session.Done, 0)
			},
			launches: []string{"a#1", "b#1", "c#1"},
			phases:   map[string]string{"a": "running", "b": "done", "c": "running"},
		},
		{
			name:  "an attempt the night stopped leaves the job to a resumed run",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.feed(AttemptEnded{Job: "a", Attempt: 1, Outcome: session.Outcome{Status: session.Failed, KilledBy: "stopped"}})
			},
			launches: []string{"a#1"},
			phases:   map[string]string{"a": "pending"},
		},
		{
			name:  "an attempt that could not be prepared counts, and is retried without maintenance",
			batch: planBatch(nil, planJob("a", retries(1))),
			script: func(d *planDriver) {
				d.wake(0)
				d.feed(AttemptEnded{Job: "a", Attempt: 1, Unstarted: true,
					Outcome: session.Outcome{Status: session.Failed, Reason: "cannot prepare the session: disk full"}})
				if d.maintains != 0 {
					d.t.Errorf("%d maintenance runs after a failed preparation", d.maintains)
				}
			},
			launches: []string{"a#1"},
			records:  []string{"job-retried a: cannot prepare the session: disk full"},
			phases:   map[string]string{"a": "waiting to retry"},
		},
		{
			name:  "denied: a permission denial fails the job at once, retries left or not",
			batch: planBatch(nil, planJob("a", retries(2)), planJob("b", needs("a"))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", planDenied)
			},
			launches: []string{"a#1"},
			records: []string{"job-finished a: permission denied: mcp__notes__echo (not allowed for this job)",
				"job-skipped b: it needs a, which failed"},
			phases:   map[string]string{"a": "failed", "b": "skipped"},
			finished: true,
		},
		{
			name:  "server lost mid-session: the abandoned attempt counts as one whose server was unusable",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.p.Apply(journal.Event{Type: journal.ServerLost, Job: "a", Attempt: 1, Server: "notes", Reason: "exited with code 1"})
				d.health["a"] = down
				d.endWith("a", session.Outcome{Status: session.Failed, KilledBy: session.KilledAbandoned,
					Reason: "stopped early: server notes could not be used (lost mid-session: exited with code 1)"})
				if jp := d.p.jobs["a"]; jp.phase != phaseDeferred || jp.bounces != 1 {
					d.t.Errorf("after the stopped attempt: %s, %d bounces", jp.phase, jp.bounces)
				}
				if r := d.records[0]; !r.Bounce || !slices.Equal(r.Unusable, []string{"notes"}) {
					d.t.Errorf("the attempt's end = %+v", r)
				}
				d.health["a"] = ""
				d.wake(10 * time.Second)
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#1", "a#2"},
			records: []string{"job-deferred a: stopped early: server notes could not be used (lost mid-session: exited with code 1)",
				"job-deferred a: " + down, "job-finished a:"},
			phases:   map[string]string{"a": "done"},
			finished: true,
		},
		{
			name:  "unusable: the job goes back to wait for its server, the attempt not counted against retries",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.health["a"] = down
				d.endWith("a", planUnusable)
				if jp := d.p.jobs["a"]; jp.phase != phaseDeferred || jp.deferrals != 2 {
					d.t.Errorf("after the stopped attempt: %s, %d deferrals", jp.phase, jp.deferrals)
				}
				d.health["a"] = ""
				d.wake(10 * time.Second)
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#1", "a#2"},
			records: []string{"job-deferred a: stopped early: server notes could not be used (failed at start)",
				"job-deferred a: " + down, "job-finished a:"},
			phases:   map[string]string{"a": "done"},
			finished: true,
		},
		{
			name:  "unusable: never done, and failed after MaxBounces stopped attempts",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				for range MaxBounces + 1 {
					d.endWith("a", planUnusable)
				}
			},
			launches: []string{"a#1", "a#2", "a#3", "a#4"},
			phases:   map[string]string{"a": "failed"},
			finished: true,
		},
		{
			name:  "unusable: a bounce the night's probe then found an outage does not count towards MaxBounces",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				for range MaxBounces + 2 {
					d.health["a"] = down // the session said so: the cache has it down
					d.endWith("a", planUnusable)
					d.feed(ServerDown{Server: "other"}) // not the one it could not use
					d.feed(ServerDown{Server: "notes", Reason: "connect ECONNREFUSED"})
					d.feed(ServerDown{Server: "notes"}) // a second probe excuses nothing more
					d.health["a"] = ""
					d.wake(10 * time.Second)
				}
				if jp := d.p.jobs["a"]; jp.bounces != MaxBounces+2 || jp.outages != MaxBounces+2 {
					d.t.Errorf("%d bounces, %d outages", jp.bounces, jp.outages)
				}
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#1", "a#2", "a#3", "a#4", "a#5", "a#6"},
			phases:   map[string]string{"a": "done"},
			finished: true,
		},
		{
			name:  "unusable: only unconfirmed bounces count; a probe during the next attempt confirms nothing",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				d.health["a"] = down
				d.endWith("a", planUnusable)
				d.feed(ServerDown{Server: "notes"})
				d.health["a"] = ""
				d.wake(10 * time.Second)
				for range MaxBounces + 1 {
					d.feed(ServerDown{Server: "notes"}) // it runs: not a bounce's outage
					d.endWith("a", planUnusable)
				}
				if n := len(d.recordsOf(journal.OutageConfirmed)); n != 1 {
					d.t.Errorf("%d outage-confirmed lines, want 1", n)
				}
				last := d.records[len(d.records)-1]
				if !strings.Contains(last.Reason, "4 attempts could not use their servers while the night's probe found them up") ||
					!strings.Contains(last.Reason, "1 more met an outage the probe confirmed") {
					d.t.Errorf("the failure says %q", last.Reason)
				}
			},
			launches: []string{"a#1", "a#2", "a#3", "a#4", "a#5"},
			phases:   map[string]string{"a": "failed"},
			finished: true,
		},
		{
			name:  "unusable: a server that flaps all night fails the job after MaxBouncesInAll bounces",
			batch: planBatch(nil, planJob("a", nil)),
			script: func(d *planDriver) {
				d.wake(0)
				for d.p.jobs["a"].phase == phaseRunning {
					d.health["a"] = down
					d.endWith("a", planUnusable)
					d.feed(ServerDown{Server: "notes"})
					d.health["a"] = ""
					d.wake(10 * time.Second)
				}
				if last := d.records[len(d.records)-1]; last.Attempt != MaxBouncesInAll+1 ||
					!strings.Contains(last.Reason, fmt.Sprintf("%d attempts could not use their servers (%d of them in outages", MaxBouncesInAll+1, MaxBouncesInAll)) {
					d.t.Errorf("the last line: attempt %d, %q", last.Attempt, last.Reason)
				}
			},
			phases:   map[string]string{"a": "failed"},
			finished: true,
		},
		{
			name:  "unusable: on_unhealthy skip skips the job",
			batch: planBatch(nil, planJob("a", onUnhealthy(jobs.Skip))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", planUnusable)
			},
			records:  []string{"job-skipped a: stopped early: server notes could not be used (failed at start)"},
			phases:   map[string]string{"a": "skipped"},
			finished: true,
		},
		{
			name:  "run anyway: a job done without a server says which",
			batch: planBatch(nil, planJob("a", onUnhealthy(jobs.Run))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", planRanWithout)
				if r := d.records[0]; !slices.Equal(r.Unusable, []string{"notes"}) || r.Status != journal.Done {
					d.t.Errorf("job-finished = %+v", r)
				}
			},
			records:  []string{"job-finished a: ran without notes"},
			phases:   map[string]string{"a": "done"},
			finished: true,
		},
		{
			name:  "run anyway: a job started while its server was down says it ran without it",
			batch: planBatch(nil, planJob("a", onUnhealthy(jobs.Run))),
			script: func(d *planDriver) {
				d.health["a"] = down
				d.wake(0)
				d.end("a", session.Done, 0)
			},
			records:  []string{"job-finished a: ran without notes"},
			phases:   map[string]string{"a": "done"},
			finished: true,
		},
		{
			name:  "verify: a failed check is retried, and the retry is told what it said",
			batch: planBatch(nil, planJob("a", retries(1))),
			script: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", planVerifyFailed)
				d.wake(30 * time.Second)
				d.end("a", session.Done, 0)
				if len(d.feedbacks) != 2 || d.feedbacks[0] != "" || !strings.Contains(d.feedbacks[1], "FAIL x") {
					d.t.Errorf("feedbacks = %q", d.feedbacks)
				}
				if v := d.records[0].Verify; v == nil || v.OK || v.Output != "FAIL x" {
					d.t.Errorf("job-retried verify = %+v", v)
				}
			},
			launches: []string{"a#1", "a#2"},
			records:  []string{"job-retried a: verify failed (exit 1): FAIL x", "job-finished a:"},
			phases:   map[string]string{"a": "done"},
			finished: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newPlanDriver(t, tc.batch)
			tc.script(d)
			if tc.launches != nil && !slices.Equal(d.launches, tc.launches) {
				t.Errorf("launches = %q, want %q", d.launches, tc.launches)
			}
			if tc.records != nil && !slices.Equal(d.recorded(), tc.records) {
				t.Errorf("journal =\n  %s\nwant\n  %s", strings.Join(d.recorded(), "\n  "), strings.Join(tc.records, "\n  "))
			}
			for job, want := range tc.phases {
				if got := d.phases()[job]; got != want {
					t.Errorf("%s is %s, want %s", job, got, want)
				}
			}
			if d.finished != tc.finished {
				t.Errorf("finished = %v, want %v", d.finished, tc.finished)
			}
		})
	}
}

// A resumed run keeps what its journal says: done and failed jobs stay,
// a job cut short by the crash runs again with one attempt used.
func TestPlanResume(t *testing.T) {
	b := planBatch(func(b *jobs.Batch) { b.MaxParallel = 2 }, planJob("a", nil), planJob("b", nil), planJob("c", retries(1)), planJob("d", needs("b")))
	d := newPlanDriver(t, b)
	cost := func(c float64) *journal.Result { return &journal.Result{CostUSD: c} }
	d.p.Fold([]journal.Event{
		{Type: journal.RunStarted},
		{Type: journal.JobStarted, Job: "a", Attempt: 1},
		{Type: journal.JobFinished, Job: "a", Attempt: 1, Status: journal.Done, Result: cost(1)},
		{Type: journal.JobStarted, Job: "b", Attempt: 1},
		{Type: journal.JobRetried, Job: "b", Attempt: 1, Reason: "exit 1", Result: cost(0.25)},
		{Type: journal.JobStarted, Job: "b", Attempt: 2},
		{Type: journal.JobFinished, Job: "b", Attempt: 2, Status: journal.Failed, Reason: "exit 1", Result: cost(0.25)},
		{Type: journal.JobStarted, Job: "c", Attempt: 1}, // running when the supervisor died
	})
	d.wake(0)
	if !slices.Equal(d.launches, []string{"c#2"}) {
		t.Errorf("launches = %q, want c#2", d.launches)
	}
	if got := d.phases(); got["a"] != "done" || got["b"] != "failed" || got["d"] != "skipped" {
		t.Errorf("phases = %v", got)
	}
	if d.p.cost != 1.5 || d.p.jobs["b"].reason != "exit 1" || d.p.jobs["b"].attempts != 2 {
		t.Errorf("cost %v, b's reason %q and attempts %d", d.p.cost, d.p.jobs["b"].reason, d.p.jobs["b"].attempts)
	}
	jobsOut, done, failed, skipped := d.p.Summary()
	if len(jobsOut) != 4 || done != 1 || failed != 2 || skipped != 1 { // c is still running: not done
		t.Errorf("summary: %d jobs, %d done, %d failed, %d skipped", len(jobsOut), done, failed, skipped)
	}
}

// The maintenance tick asks for maintenance and nothing else; the servers
// deferred jobs wait for are the ones probed early.
func TestPlanMaintenance(t *testing.T) {
	b := planBatch(func(b *jobs.Batch) { b.MaxParallel = 2 }, planJob("a", nil),
		planJob("b", func(j *jobs.Job) { j.Servers = []string{"search"} }))
	d := newPlanDriver(t, b)
	d.health["a"] = "server notes is down"
	d.wake(0)
	d.feed(Tick{})
	if d.maintains != 1 {
		t.Errorf("maintenance runs = %d, want 1", d.maintains)
	}
	if got := d.p.ServersWaitedFor(); !got["notes"] || got["search"] {
		t.Errorf("servers waited for = %v, want notes only", got)
	}
	d.end("b", session.Done, 0)
	if d.maintains != 2 {
		t.Errorf("no maintenance after an attempt ended (%d)", d.maintains)
	}
}

// A wake while a health check is outstanding (a message arriving while
// the loop asks) starts no second scan.
func TestPlanOneScanAtATime(t *testing.T) {
	p := newPlan(planBatch(nil, planJob("a", nil)), planT0, time.Second)
	first := p.Step(planT0, Wake{})
	if len(first) != 1 {
		t.Fatalf("first wake: %#v", first)
	}
	if again := p.Step(planT0, Wake{}); len(again) != 0 {
		t.Errorf("second wake during a check: %#v", again)
	}
	if stale := p.Step(planT0, Health{Job: "other"}); len(stale) != 0 {
		t.Errorf("an answer for another job: %#v", stale)
	}
	if acts := p.Step(planT0, Health{Job: "a"}); len(acts) != 1 {
		t.Errorf("answer: %#v, want one launch", acts)
	} else if l, ok := acts[0].(Launch); !ok || l.Job != "a" || l.Attempt != 1 {
		t.Errorf("answer: %#v, want a#1", acts[0])
	}
}

func TestDeadlineAfter(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 12, 1, h, m, 0, 0, time.Local) }
	for _, tc := range []struct {
		started time.Time
		clock   jobs.ClockTime
		want    time.Time
	}{
		{at(22, 0), jobs.ClockTime{Hour: 7}, at(7, 0).AddDate(0, 0, 1)},
		{at(2, 0), jobs.ClockTime{Hour: 7}, at(7, 0)},
		{at(7, 0), jobs.ClockTime{Hour: 7}, at(7, 0).AddDate(0, 0, 1)},
	} {
		if got := DeadlineAfter(tc.started, tc.clock); !got.Equal(tc.want) {
			t.Errorf("DeadlineAfter(%s, %v) = %s, want %s", tc.started, tc.clock, got, tc.want)
		}
	}
}

// The counts that spare a wake a look at every job follow every move of
// a job, a job that ended and runs again (a journal that says so)
// included: the wake after it starts that job again, and the night is not
// over.
func TestPlanCountsFollowEveryMove(t *testing.T) {
	p := newPlan(planBatch(nil, planJob("a", nil), planJob("b", nil), planJob("c", nil)), planT0, time.Second)
	for _, ev := range []journal.Event{
		{Type: journal.JobStarted, Job: "a", Attempt: 1},
		{Type: journal.JobFinished, Job: "a", Attempt: 1, Status: journal.Done},
		{Type: journal.JobDeferred, Job: "c", Reason: "notes down"},
		{Type: journal.JobStarted, Job: "b", Attempt: 1},
		{Type: journal.JobFinished, Job: "b", Attempt: 1, Status: journal.Failed},
	} {
		p.Apply(ev)
		if wrong := countsWrong(p); wrong != "" {
			t.Fatalf("after %s %s: %s", ev.Type, ev.Job, wrong)
		}
	}
	if p.firstOpen() != 2 || p.deferred != 1 || p.allEnded() {
		t.Fatalf("first open %d, %d deferred, all ended %v", p.firstOpen(), p.deferred, p.allEnded())
	}
	p.Apply(journal.Event{Type: journal.JobSkipped, Job: "c", Reason: "gave up"})
	if !p.allEnded() || p.deferred != 0 || p.firstOpen() != 3 {
		t.Fatalf("all ended %v, %d deferred, first open %d", p.allEnded(), p.deferred, p.firstOpen())
	}
	// a's line again: it runs, and ends as a retry waiting for its turn.
	p.Apply(journal.Event{Type: journal.JobStarted, Job: "a", Attempt: 2})
	p.Apply(journal.Event{Type: journal.JobRetried, Job: "a", Attempt: 2, Reason: "exit 1"})
	if wrong := countsWrong(p); wrong != "" || p.allEnded() || p.firstOpen() != 0 {
		t.Fatalf("a reopened: %q, all ended %v, first open %d", wrong, p.allEnded(), p.firstOpen())
	}
	if acts := p.Step(planT0, Wake{}); len(acts) != 1 || acts[0] != (CheckHealth{Job: "a"}) {
		t.Errorf("wake: %#v, want a's health asked", acts)
	}
}
