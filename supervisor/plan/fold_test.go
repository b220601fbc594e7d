package plan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/modelapi"
	"github.com/nightwatch-dev/nightwatch/session"
)

// The plan folds its own journal: for random batches driven through step
// by random events (health answers, attempt ends of every kind, ticks,
// wakes, API checks, time passing, a stop), folding what Step recorded
// (and the job-started lines the loop writes), read back from JSON, into a
// new plan gives the live plan, field by field, after every step; and a
// stopped night resumed from its journal is the stopped plan resumed.
func TestPlanFoldsItsJournal(t *testing.T) {
	iterations := 400
	if testing.Short() {
		iterations = 100
	}
	for seed := range uint64(iterations) {
		rng := rand.New(rand.NewPCG(seed, 19))
		b := randomBatch(rng)
		d := &foldDriver{t: t, rng: rng, now: planT0, health: map[string]string{},
			live: newPlan(b, planT0, 30*time.Second), folded: newPlan(b, planT0, 30*time.Second)}
		for _, p := range []*Plan{d.live, d.folded} {
			p.rules.waits = testWaits.WithDefaults()
		}
		for step := range 60 + rng.IntN(60) {
			d.randomStep()
			if got, want := journalFacts(d.folded), journalFacts(d.live); !got.equal(want) {
				t.Fatalf("seed %d, step %d: the folded plan differs from the live one:\n%s\njournal:\n%s",
					seed, step, factsDiff(got, want), d.journalText())
			}
			for what, p := range map[string]*Plan{"live": d.live, "folded": d.folded} {
				if wrong := countsWrong(p); wrong != "" {
					t.Fatalf("seed %d, step %d: the %s plan's counts are wrong: %s\njournal:\n%s", seed, step, what, wrong, d.journalText())
				}
			}
		}
		if rng.IntN(2) == 0 {
			continue
		}
		// The night is stopped: its running attempts end as stopped, and
		// a new supervisor folds the journal.
		for _, name := range d.live.order {
			if jp := d.live.jobs[name]; jp.phase == phaseRunning {
				d.do(d.live.Step(d.now, AttemptEnded{Job: name, Attempt: jp.attempts,
					Outcome: session.Outcome{Status: session.Failed, KilledBy: "stopped", Reason: "stopped with the night"}}))
			}
		}
		resumed := newPlan(b, planT0, 30*time.Second)
		resumed.rules.waits = testWaits.WithDefaults()
		resumed.Fold(d.journal)
		d.live.Fold(nil)
		if got, want := journalFacts(resumed), journalFacts(d.live); !got.equal(want) {
			t.Fatalf("seed %d: the resumed plan differs from the stopped one:\n%s\njournal:\n%s",
				seed, factsDiff(got, want), d.journalText())
		}
		if wrong := countsWrong(resumed); wrong != "" {
			t.Fatalf("seed %d: the resumed plan's counts are wrong: %s", seed, wrong)
		}
	}
}

// foldDriver plays the loop for the property test: it answers what the
// live plan asks, writes the journal as the loop does (job-started for
// each attempt whose files were prepared, every record), and folds each
// line, read back from JSON, into the second plan.
type foldDriver struct {
	t            *testing.T
	rng          *rand.Rand
	now          time.Time
	health       map[string]string
	apiDown      bool
	live, folded *Plan
	journal      []journal.Event
}

func (d *foldDriver) append(ev journal.Event) {
	line, err := json.Marshal(ev)
	if err != nil {
		d.t.Fatal(err)
	}
	var back journal.Event
	if err := json.Unmarshal(line, &back); err != nil {
		d.t.Fatal(err)
	}
	d.journal = append(d.journal, back)
	d.folded.Apply(back)
}

func (d *foldDriver) do(acts []Action) {
	for len(acts) > 0 {
		a := acts[0]
		acts = acts[1:]
		switch a := a.(type) {
		case CheckHealth:
			down := d.health[a.Job]
			var servers []string
			if down != "" {
				servers = []string{"notes"}
			}
			acts = append(d.live.Step(d.now, Health{Job: a.Job, Down: down, Servers: servers}), acts...)
		case Launch:
			if d.rng.IntN(12) == 0 { // its files cannot be prepared: no job-started line
				acts = append(d.live.Step(d.now, AttemptEnded{Job: a.Job, Attempt: a.Attempt, Unstarted: true,
					Outcome: session.Outcome{Status: session.Failed, Reason: "cannot prepare the session: disk full"}}), acts...)
				continue
			}
			d.append(journal.Event{Time: d.now, Type: journal.JobStarted, Job: a.Job, Attempt: a.Attempt, Resume: a.Resume})
		case Record:
			if a.Event.Time.IsZero() {
				d.t.Fatalf("a record without the plan's time: %+v", a.Event)
			}
			d.append(a.Event)
		case CheckAPI:
			acts = append(d.live.Step(d.now, APIChecked{OK: !d.apiDown, Why: "refused"}), acts...)
		case Maintain, Finish, NotifyNow:
		default:
			d.t.Fatalf("unknown action %T", a)
		}
	}
}

var foldWaits = []time.Duration{0, time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}

func (d *foldDriver) randomStep() {
	rng := d.rng
	switch rng.IntN(12) {
	case 0, 1:
		d.now = d.now.Add(foldWaits[rng.IntN(len(foldWaits))])
		d.do(d.live.Step(d.now, Wake{}))
	case 2:
		d.do(d.live.Step(d.now, Tick{}))
	case 3:
		job := d.live.order[rng.IntN(len(d.live.order))]
		d.health[job] = []string{"", "", "server notes is down since 02:00:00 (connect ECONNREFUSED)",
			"server notes is down since 02:03:00 (401)"}[rng.IntN(4)]
	case 4:
		if rng.IntN(2) == 0 {
			// The night's probe found a server down.
			d.do(d.live.Step(d.now, ServerDown{Server: []string{"notes", "other"}[rng.IntN(2)], Reason: "connect ECONNREFUSED"}))
			return
		}
		d.apiDown = !d.apiDown
	case 5:
		// A running session hears from the model: a trial is over.
		for _, name := range d.live.order {
			if jp := d.live.jobs[name]; jp.phase == phaseRunning && rng.IntN(2) == 0 {
				d.do(d.live.Step(d.now, ModelTurn{Job: name, Attempt: jp.attempts}))
				d.do(d.live.Step(d.now, Wake{}))
				return
			}
		}
	default:
		var running []string
		for _, name := range d.live.order {
			if d.live.jobs[name].phase == phaseRunning {
				running = append(running, name)
			}
		}
		if len(running) == 0 {
			d.do(d.live.Step(d.now, Wake{}))
			return
		}
		job := running[rng.IntN(len(running))]
		attempt := d.live.jobs[job].attempts
		if rng.IntN(15) == 0 {
			attempt-- // a cluster's late report of an older attempt
		}
		d.now = d.now.Add(foldWaits[rng.IntN(len(foldWaits))])
		d.do(d.live.Step(d.now, AttemptEnded{Job: job, Attempt: attempt, Outcome: randomOutcome(rng, d.now),
			Host: []string{"", "host-a"}[rng.IntN(2)]}))
		d.do(d.live.Step(d.now, Wake{}))
	}
}

func randomBatch(rng *rand.Rand) *jobs.Batch {
	names := []string{"a", "b", "c", "d", "e"}[:2+rng.IntN(4)]
	var js []*jobs.Job
	for i, name := range names {
		j := planJob(name, retries(rng.IntN(3)))
		j.OnUnhealthy = []jobs.OnUnhealthy{jobs.Defer, jobs.Defer, jobs.Skip, jobs.Run}[rng.IntN(4)]
		if i > 0 && rng.IntN(3) == 0 {
			j.Needs = []string{names[rng.IntN(i)]}
		}
		if rng.IntN(4) == 0 {
			j.Servers = nil
		}
		js = append(js, j)
	}
	return planBatch(func(b *jobs.Batch) {
		b.MaxParallel = 1 + rng.IntN(3)
		b.Resume = rng.IntN(3) > 0
		b.Defaults.MaxDefer = []time.Duration{0, time.Minute, 10 * time.Minute, time.Hour}[rng.IntN(4)]
		if rng.IntN(4) == 0 {
			b.Deadline = &jobs.ClockTime{Hour: 2, Minute: 10 + rng.IntN(40)}
		}
		if rng.IntN(4) == 0 {
			b.MaxCostUSD = 0.5
		}
	}, js...)
}

// randomOutcome is an attempt's end of any kind the plan judges.
func randomOutcome(rng *rand.Rand, now time.Time) session.Outcome {
	out := session.Outcome{Status: session.Failed, ExitCode: 1, Reason: "exit 1: the model gave up",
		CostUSD: []float64{0, 0.05, 0.1, 0.25}[rng.IntN(4)], SessionID: []string{"", "s-1", "s-2"}[rng.IntN(3)]}
	api := func(class modelapi.Class, reason string, reset time.Time) {
		out.Reason = []string{reason, ""}[rng.IntN(2)]
		out.API = &modelapi.Failure{Class: class, Reason: reason, ResetAt: reset}
	}
	switch rng.IntN(16) {
	case 0, 1:
		out.Status, out.ExitCode, out.Reason = session.Done, 0, ""
	case 2:
		out.Status, out.ExitCode, out.Reason = session.Done, 0, ""
		out.Unusable = []session.Unusable{{Server: "notes", Why: "failed at start"}}
	case 3:
		out.Reason = "verify failed (exit 1): FAIL x"
		out.Verify = &session.VerifyResult{Command: []string{"/bin/check", "--all"}, ExitCode: 1, Output: "FAIL x"}
		if rng.IntN(2) == 0 {
			out.Verify.ExitCode, out.Verify.Err = -1, "timed out after 1m"
		}
	case 4:
		out.Denied = []string{"mcp__notes__echo"}
		out.Reason = "permission denied: mcp__notes__echo (not allowed for this job)"
	case 5:
		out.KilledBy = session.KilledAbandoned
		out.Unusable = []session.Unusable{{Server: "notes", Why: "failed at start"}}
		out.Reason = "stopped early: server notes could not be used (failed at start)"
	case 6:
		out.KilledBy, out.Reason = "timeout", "killed after 1m timeout"
	case 7:
		out.KilledBy, out.Reason = "stall", "killed: no output for 5m"
	case 8:
		reset := time.Time{}
		if rng.IntN(2) == 0 {
			reset = now.Add(time.Duration(1+rng.IntN(90)) * time.Minute)
		}
		api(modelapi.UsageLimit, "You've hit your 5-hour limit", reset)
	case 9:
		api(modelapi.RateLimit, "API Error: 429 rate_limit_error", time.Time{})
	case 10, 11:
		api(modelapi.Unavailable, "API Error: Connection refused (ECONNREFUSED)", time.Time{})
	case 12:
		if rng.IntN(3) == 0 {
			api(modelapi.InvalidCredentials, "Invalid API key · Fix external API key", time.Time{})
		}
	case 13:
		api(modelapi.MaxTurns, "exit 1: error_max_turns", time.Time{})
	case 14:
		api(modelapi.ContextTooLong, "Prompt is too long", time.Time{})
	}
	return out
}

// planFacts are the fields of the plan a recorded event sets, per job and
// for the night: not the scan cursor, the health answer awaited, the
// servers a running attempt runs without, its outcome for the summary, nor
// the schedule of the checks of an API that does not answer. Times are
// in Unix nanoseconds (a time read back from JSON has another location).
type planFacts struct {
	jobs   []jobFacts
	night  nightFacts
	pauses []string
}

type jobFacts struct {
	name                                string
	phase                               phase
	attempts, bounces, free, costed     int
	outages                             int
	bouncedOn                           string
	chargedOutage, deferrals            int
	reason, feedback, resume, resumeWhy string
	deferring                           string
	notBefore, deferredSince, startedAt int64
}

type nightFacts struct {
	running, outages int
	cost             float64
	stopped          string
	paused           bool
	class            modelapi.Class
	reason           string
	since, until     int64
	backoff          time.Duration
	// The API's trial: whether the night is in one, since when, and its
	// attempt.
	trial        bool
	trialSince   int64
	trialJob     string
	trialAttempt int
}

// countsWrong says how the counts setPhase keeps differ from a count of
// every job ("" when they agree): ended and deferred jobs, and every job
// before first ended.
func countsWrong(p *Plan) string {
	ended, deferred := 0, 0
	for _, jp := range p.jobs {
		if jp.phase.ended() {
			ended++
		}
		if jp.phase == phaseDeferred {
			deferred++
		}
	}
	if ended != p.ended || deferred != p.deferred {
		return fmt.Sprintf("kept %d ended and %d deferred, counted %d and %d", p.ended, p.deferred, ended, deferred)
	}
	for i, name := range p.order[:min(p.first, len(p.order))] {
		if !p.jobs[name].phase.ended() {
			return fmt.Sprintf("job %d (%s) is %s, before the first open job %d", i, name, p.jobs[name].phase, p.first)
		}
	}
	if first := p.firstOpen(); first < len(p.order) && p.jobs[p.order[first]].phase.ended() {
		return fmt.Sprintf("the first open job %d has ended", first)
	}
	return ""
}

func journalFacts(p *Plan) planFacts {
	ns := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixNano()
	}
	f := planFacts{pauses: p.pauses, night: nightFacts{running: p.running, outages: p.outages, cost: p.cost, stopped: p.stopped}}
	for _, name := range p.order {
		jp := p.jobs[name]
		f.jobs = append(f.jobs, jobFacts{name: name, phase: jp.phase, attempts: jp.attempts, bounces: jp.bounces, free: jp.free,
			outages: jp.outages, bouncedOn: strings.Join(jp.bouncedOn, ","), costed: jp.costed, chargedOutage: jp.chargedOutage, deferrals: jp.deferrals, reason: jp.reason, feedback: jp.feedback,
			resume: jp.resume, resumeWhy: jp.resumeWhy, deferring: jp.deferring,
			notBefore: ns(jp.notBefore), deferredSince: ns(jp.deferredSince), startedAt: ns(jp.startedAt)})
	}
	if t := p.trial; t != nil {
		f.night.trial, f.night.trialSince, f.night.trialJob, f.night.trialAttempt = true, ns(t.Since), t.Job, t.Attempt
	}
	if np := p.pause; np != nil {
		f.night.paused, f.night.class, f.night.reason, f.night.since = true, np.Class, np.reason, ns(np.Since)
		if np.Class != modelapi.Unavailable {
			f.night.until, f.night.backoff = ns(np.Until), np.Backoff
		}
	}
	return f
}

func (f planFacts) equal(o planFacts) bool {
	return slices.Equal(f.jobs, o.jobs) && f.night == o.night && slices.Equal(f.pauses, o.pauses)
}

// factsDiff says where folded differs from live.
func factsDiff(folded, live planFacts) string {
	var b strings.Builder
	for i := range max(len(folded.jobs), len(live.jobs)) {
		var g, w jobFacts
		if i < len(folded.jobs) {
			g = folded.jobs[i]
		}
		if i < len(live.jobs) {
			w = live.jobs[i]
		}
		if g != w {
			fmt.Fprintf(&b, "  folded: %+v\n  live:   %+v\n", g, w)
		}
	}
	if folded.night != live.night || !slices.Equal(folded.pauses, live.pauses) {
		fmt.Fprintf(&b, "  folded: %+v %q\n  live:   %+v %q\n", folded.night, folded.pauses, live.night, live.pauses)
	}
	return b.String()
}

func (d *foldDriver) journalText() string {
	var b strings.Builder
	for _, ev := range d.journal {
		line, _ := json.Marshal(ev)
		fmt.Fprintf(&b, "  %s\n", line)
	}
	return b.String()
}

// A resumed night folds journals written by this release and by older
// ones (no attempt numbers, a result on two lines, no notBefore or bounce
// fields) into what the dead supervisor's plan was: done, skipped and
// failed jobs stay; a job running at the crash has used an attempt and
// runs again; the uncounted attempts, bounces, the outage each job was
// charged, a pause that had not ended and the session a retry resumes.
func TestPlanFoldsOldJournals(t *testing.T) {
	t0 := planT0
	reset := t0.Add(2 * time.Minute)
	cost := func(c float64) *journal.Result { return &journal.Result{CostUSD: c} }
	limit := &journal.Result{SessionID: "s-1"}
	paused := journal.Event{Time: t0, Type: journal.NightPaused, Class: "usage-limit", Reason: "You've hit your 5-hour limit", Until: reset}
	outage := journal.Event{Time: t0, Type: journal.NightPaused, Class: "api-unavailable", Reason: "ECONNREFUSED"}
	retried := func(job string, n int, uncounted bool, out int) journal.Event {
		return journal.Event{Type: journal.JobRetried, Job: job, Attempt: n, Class: "usage-limit", Uncounted: uncounted, Outage: out, Result: limit}
	}
	started := func(job string, n int) journal.Event {
		return journal.Event{Type: journal.JobStarted, Job: job, Attempt: n}
	}
	type job struct {
		phase                                string
		attempts, uncounted, bounces, outage int
		reason, resume                       string
	}
	tests := []struct {
		name    string
		events  []journal.Event
		jobs    map[string]job // a job not named is pending, untouched
		cost    float64
		outages int
		pause   string // the class of the pause the night is in; "" none
		stopped bool
	}{
		{name: "done", cost: 0.5,
			events: []journal.Event{{Type: journal.RunStarted}, started("a", 1),
				{Type: journal.JobFinished, Job: "a", Attempt: 1, Status: journal.Done, Result: cost(0.5)}},
			jobs: map[string]job{"a": {phase: "done", attempts: 1}}},
		{name: "failed, retried, done: the result on two lines counts once", cost: 1.25,
			events: []journal.Event{started("a", 1),
				{Type: journal.JobFinished, Job: "a", Attempt: 1, Status: journal.Failed, Result: cost(0.25)},
				{Type: journal.JobRetried, Job: "a", Attempt: 1, Result: cost(0.25)},
				started("a", 2), {Type: journal.JobFinished, Job: "a", Attempt: 2, Status: journal.Done, Result: cost(1)}},
			jobs: map[string]job{"a": {phase: "done", attempts: 2}}},
		{name: "retried, crash during the retry: it runs again, two attempts used", cost: 0.5,
			events: []journal.Event{started("a", 1),
				{Type: journal.JobRetried, Job: "a", Attempt: 1, Reason: "exit 1", Result: cost(0.5)}, started("a", 2)},
			jobs: map[string]job{"a": {phase: "pending", attempts: 2}}},
		{name: "finally failed, without attempt numbers", cost: 0.75,
			events: []journal.Event{{Type: journal.JobStarted, Job: "a"},
				{Type: journal.JobFinished, Job: "a", Status: journal.Failed, Reason: "exit 1", Result: cost(0.75)}},
			jobs: map[string]job{"a": {phase: "failed", attempts: 1, reason: "exit 1"}}},
		{name: "running at the crash counts an attempt",
			events: []journal.Event{started("a", 1), {Type: journal.JobFinished, Job: "a", Attempt: 1, Status: journal.Done},
				started("b", 1), {Type: journal.ServerState, Server: "notes", Status: journal.Unhealthy}},
			jobs: map[string]job{"a": {phase: "done", attempts: 1}, "b": {phase: "pending", attempts: 1}}},
		{name: "skipped and deferred",
			events: []journal.Event{{Type: journal.JobDeferred, Job: "a", Reason: "notes is unhealthy"},
				{Type: journal.JobSkipped, Job: "a", Status: journal.Skipped, Reason: "deadline 07:00 passed; notes down since 03:12"},
				{Type: journal.JobSkipped, Job: "b", Status: journal.Skipped, Reason: "needs a, which was skipped"},
				{Type: journal.RunResumed}},
			jobs: map[string]job{"a": {phase: "skipped", reason: "deadline 07:00 passed; notes down since 03:12"},
				"b": {phase: "skipped", reason: "needs a, which was skipped"}}},
		{name: "an older journal's skipped job-finished",
			events: []journal.Event{started("a", 1), {Type: journal.JobFinished, Job: "a", Attempt: 1, Status: journal.Skipped, Reason: "x"}},
			jobs:   map[string]job{"a": {phase: "skipped", attempts: 1, reason: "x"}}},
		{name: "no pause", events: []journal.Event{started("a", 1)}, jobs: map[string]job{"a": {phase: "pending", attempts: 1}}},
		{name: "paused, not resumed: the pause, the uncounted attempts, the session to resume", pause: "usage-limit",
			events: []journal.Event{started("a", 1), retried("a", 1, true, 0), started("b", 1), retried("b", 1, true, 0), paused},
			jobs: map[string]job{"a": {phase: "pending", attempts: 1, uncounted: 1, resume: "s-1"},
				"b": {phase: "pending", attempts: 1, uncounted: 1, resume: "s-1"}}},
		{name: "paused then resumed: no pause, and a started again resumes nothing",
			events: []journal.Event{started("a", 1), retried("a", 1, true, 0), paused,
				{Type: journal.NightResumed, Class: "usage-limit"}, started("a", 2)},
			jobs: map[string]job{"a": {phase: "pending", attempts: 2, uncounted: 1}}},
		{name: "stopped ends the pause", stopped: true,
			events: []journal.Event{paused, {Type: journal.NightStopped, Class: "invalid-credentials", Reason: "Invalid API key"}}},
		{name: "the last pause wins", pause: "api-unavailable", events: []journal.Event{paused, outage}},
		{name: "outages: the one each job was counted against", pause: "api-unavailable", outages: 2,
			events: []journal.Event{started("a", 1), retried("a", 1, false, 1), outage,
				{Type: journal.NightResumed}, started("a", 2), retried("a", 2, false, 2),
				started("b", 1), retried("b", 1, true, 2), outage},
			jobs: map[string]job{"a": {phase: "waiting to retry", attempts: 2, outage: 2, resume: "s-1"},
				"b": {phase: "pending", attempts: 1, uncounted: 1, outage: 2, resume: "s-1"}}},
		{name: "a finished job keeps its outage, not its retry", outages: 3,
			events: []journal.Event{started("a", 1), retried("a", 1, false, 1),
				started("a", 2), {Type: journal.JobFinished, Job: "a", Attempt: 2, Status: journal.Failed, Outage: 3}},
			jobs: map[string]job{"a": {phase: "failed", attempts: 2, outage: 3}}},
		{name: "bounces: deferred after an attempt, not before one",
			events: []journal.Event{{Type: journal.JobDeferred, Job: "a", Reason: "notes down"},
				started("a", 1), {Type: journal.JobDeferred, Job: "a", Attempt: 1, Reason: "lost notes"}},
			jobs: map[string]job{"a": {phase: "deferred", attempts: 1, bounces: 1}}},
		{name: "a job the batch no longer defines changes nothing",
			events: []journal.Event{started("gone", 1), {Type: journal.JobFinished, Job: "gone", Attempt: 1, Status: journal.Done, Result: cost(1)}},
			jobs:   map[string]job{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlan(planBatch(resumeOn, planJob("a", retries(1)), planJob("b", retries(1))), t0, time.Minute)
			p.Fold(tc.events)
			for _, name := range p.order {
				jp := p.jobs[name]
				want, named := tc.jobs[name]
				if !named {
					want.phase = "pending"
				}
				got := job{phase: jp.phase.String(), attempts: jp.attempts, uncounted: jp.free, bounces: jp.bounces,
					outage: jp.chargedOutage, reason: jp.reason, resume: jp.resume}
				if got != want {
					t.Errorf("%s: %+v, want %+v", name, got, want)
				}
			}
			if p.cost != tc.cost || p.outages != tc.outages || p.running != 0 || (p.stopped != "") != tc.stopped {
				t.Errorf("night: cost %v outages %d running %d stopped %q; want %v %d 0 %v", p.cost, p.outages, p.running, p.stopped,
					tc.cost, tc.outages, tc.stopped)
			}
			var pause string
			if p.pause != nil {
				pause = string(p.pause.Class)
			}
			if pause != tc.pause {
				t.Errorf("pause %q, want %q", pause, tc.pause)
			}
			if tc.pause == "usage-limit" && !p.pause.Until.Equal(reset) {
				t.Errorf("the pause ends at %s, want the reset %s", p.pause.Until, reset)
			}
			if tc.pause == "api-unavailable" && !p.pause.Until.IsZero() {
				t.Errorf("an API that did not answer is checked at %s, want at once", p.pause.Until)
			}
		})
	}
}

// The retry after a restart waits for the time its job-retried line says
// (at once in an older journal without it), and is told what verify said.
func TestPlanFoldsTheRetrysTimeAndFeedback(t *testing.T) {
	verify := &journal.Verify{Command: []string{"/bin/check"}, ExitCode: -1, Output: "FAIL x", Err: "timed out after 1m"}
	for _, tc := range []struct {
		name      string
		notBefore time.Time
		launchAt  time.Duration // after planT0+1m
	}{
		{"the pause between retries holds", planT0.Add(5 * time.Minute), 4 * time.Minute},
		{"an older journal: at once", time.Time{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newPlanDriver(t, planBatch(nil, planJob("a", retries(1))))
			d.p.Fold([]journal.Event{{Time: planT0, Type: journal.JobStarted, Job: "a", Attempt: 1},
				{Time: planT0, Type: journal.JobRetried, Job: "a", Attempt: 1, Reason: "verify failed (timed out after 1m)",
					Verify: verify, NotBefore: tc.notBefore}})
			d.now = planT0.Add(time.Minute)
			if tc.launchAt > 0 {
				d.wake(0)
				if len(d.launches) != 0 {
					t.Fatalf("launched %q before %s", d.launches, tc.notBefore)
				}
			}
			d.wake(tc.launchAt)
			if !slices.Equal(d.launches, []string{"a#2"}) {
				t.Fatalf("launches %q, want a#2", d.launches)
			}
			if f := d.feedbacks[0]; !strings.Contains(f, "`/bin/check` timed out after 1m") || !strings.Contains(f, "FAIL x") {
				t.Errorf("the retry is told %q, want what verify said", f)
			}
		})
	}
}

// A journal of release 0.x (journal/testdata) still resumes: its done,
// failed and skipped jobs stay, the one running at the crash runs again
// with two attempts used, and its cost is the night's.
func TestPlanFoldsALegacyJournal(t *testing.T) {
	events, err := journal.Read("../../journal/testdata/v0-unfinished.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p := newPlan(planBatch(nil, planJob("digest", nil), planJob("triage", retries(2)), planJob("publish", nil), planJob("lint", nil)),
		planT0, time.Minute)
	p.Fold(events)
	got := p.Progress(planT0)
	if d, l, tr, pu := p.jobs["digest"], p.jobs["lint"], p.jobs["triage"], p.jobs["publish"]; d.phase != phaseDone || l.phase != phaseFailed ||
		tr.phase != phasePending || tr.attempts != 2 || pu.phase != phaseSkipped || pu.reason == "" || p.cost != 0.875 || p.running != 0 {
		t.Errorf("folded: digest %s, lint %s, triage %s after %d attempts, publish %s (%q), cost %v, running %d; progress %+v",
			d.phase, l.phase, tr.phase, tr.attempts, pu.phase, pu.reason, p.cost, p.running, got)
	}
}

// A resumed session's prompt says how the last attempt ended in
// nightwatch's own words: never the API's or a gateway's message, which
// can echo a key, and which the model and `ps` would read.
func TestResumeWordsCarryNoOutsideText(t *testing.T) {
	const leak = "sk-ant-api03-echoed-by-a-gateway"
	for _, out := range []session.Outcome{
		{Reason: "API Error: 500 " + leak, API: &modelapi.Failure{Class: modelapi.Unavailable, Reason: "API Error: 500 " + leak}},
		{Reason: "killed after 1m timeout " + leak, KilledBy: session.KilledTimeout},
		{Reason: leak, KilledBy: session.KilledStall},
		{Reason: leak, KilledBy: session.KilledStopped},
		{Reason: leak, KilledBy: session.KilledAbandoned},
		{Reason: leak, KilledBy: session.KilledCrashed},
		{Reason: "exit 1: " + leak},
	} {
		w := resumeWords(out)
		if w == "" || strings.Contains(w, leak) || strings.Contains(w, "API Error") {
			t.Errorf("%+v: resume words %q", out, w)
		}
	}
}

// On a cluster, an attempt the coordinator queued is shown waiting for a
// worker (one carrying its labels, for a pinned job) until a worker says
// it runs it; then it runs on that worker's host. On one host an attempt
// runs from its start.
func TestQueuedAttemptIsNotShownRunning(t *testing.T) {
	pinned := func(j *jobs.Job) { j.Hosts = []string{"mac", "arm"} }
	for _, tc := range []struct {
		name             string
		queued           []string // the attempts the loop queued on a cluster
		ranOn            string   // the host whose worker runs ios, if any
		running, waiting []string
	}{
		{"queued on a cluster", []string{"ios", "any"}, "", nil, []string{
			"ios: attempt 1 queued for 0s, waiting for a worker carrying mac or arm",
			"any: attempt 1 queued for 0s, waiting for a worker"}},
		{"taken by a worker", []string{"ios", "any"}, "mini", []string{"ios (attempt 1 on mini, 0s)"},
			[]string{"any: attempt 1 queued for 0s, waiting for a worker"}},
		{"on one host", nil, "", []string{"ios (attempt 1, 0s)", "any (attempt 1, 0s)"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlan(planBatch(func(b *jobs.Batch) { b.MaxParallel = 2 }, planJob("ios", pinned), planJob("any", nil)), planT0, time.Minute)
			for _, job := range []string{"ios", "any"} {
				p.Apply(journal.Event{Type: journal.JobStarted, Job: job, Attempt: 1, Time: planT0})
			}
			for _, job := range tc.queued {
				p.QueuedOnCluster(job, 1)
			}
			p.RunsOn("ios", 1, tc.ranOn)
			got := p.Progress(planT0)
			if !slices.Equal(got.Running, tc.running) || !slices.Equal(got.Waiting, tc.waiting) {
				t.Errorf("running %q, waiting %q; want running %q, waiting %q", got.Running, got.Waiting, tc.running, tc.waiting)
			}
		})
	}
}

// A resumed night folds the API's trial from its journal (issue 21): a
// trial whose session heard from the API is over, and the resumed night
// starts every job it may at once; a trial whose session ran when the
// supervisor died, or that ended on the outage, is still owed, and only
// one session starts.
func TestPlanFoldsTheAPITrial(t *testing.T) {
	outage := planT0
	passed := planT0.Add(time.Minute)
	head := []journal.Event{
		{Time: planT0, Type: journal.JobStarted, Job: "a", Attempt: 1},
		{Time: outage, Type: journal.JobRetried, Job: "a", Attempt: 1, Class: string(modelapi.Unavailable), Uncounted: true, Outage: 1,
			Reason: "API Error: 529 overloaded" + uncountedNote},
		{Time: outage, Type: journal.NightPaused, Class: string(modelapi.Unavailable), Reason: "API Error: 529 overloaded"},
		{Time: passed, Type: journal.NightResumed, Class: string(modelapi.Unavailable), Reason: "the API answers again after 1m0s"},
		{Time: passed, Type: journal.APITrialStarted, Job: "a", Attempt: 2},
		{Time: passed, Type: journal.JobStarted, Job: "a", Attempt: 2},
	}
	with := func(n int, tail ...journal.Event) []journal.Event { return append(slices.Clone(head[:n]), tail...) }
	for _, tc := range []struct {
		name     string
		journal  []journal.Event
		trial    bool // the resumed night is in a trial
		paused   bool
		launches int // sessions the resumed night starts at once
	}{
		{"the check passed, no session started: the trial is owed", with(4), true, false, 1},
		{"the trial ran when the supervisor died: owed again", with(6), true, false, 1},
		{"the API answered the trial: over", with(6,
			journal.Event{Time: passed.Add(time.Second), Type: journal.APITrialEnded, Job: "a", Attempt: 2}), false, false, 3},
		{"the API answered an older session: over", with(5,
			journal.Event{Time: passed, Type: journal.JobStarted, Job: "a", Attempt: 2},
			journal.Event{Time: passed, Type: journal.JobStarted, Job: "b", Attempt: 1},
			journal.Event{Time: passed.Add(time.Second), Type: journal.APITrialEnded, Job: "b", Attempt: 1}), false, false, 3},
		{"the trial ended on its own terms: over", with(6,
			journal.Event{Time: passed.Add(time.Second), Type: journal.JobFinished, Job: "a", Attempt: 2, Status: journal.Done}), false, false, 2},
		{"the trial met the outage: the same outage, waited out", with(6,
			journal.Event{Time: passed.Add(time.Second), Type: journal.JobRetried, Job: "a", Attempt: 2, Class: string(modelapi.Unavailable),
				Uncounted: true, Outage: 1, Reason: "API Error: 529 overloaded" + uncountedNote},
			journal.Event{Time: passed.Add(time.Second), Type: journal.NightPaused, Class: string(modelapi.Unavailable), Reason: "API Error: 529 overloaded"}),
			false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := planBatch(func(b *jobs.Batch) { b.MaxParallel = 3 },
				planJob("a", retries(1)), planJob("b", nil), planJob("c", nil))
			d := newPlanDriver(t, b)
			d.p.rules.waits = testWaits.WithDefaults()
			d.apiDown = tc.paused // the check at once on resume still fails
			d.p.Fold(tc.journal)
			if got := d.p.trial != nil; got != tc.trial {
				t.Fatalf("trial %+v, want one: %v", d.p.trial, tc.trial)
			}
			if tc.trial && (d.p.trial.Out() || !d.p.trial.Since.Equal(outage)) {
				t.Errorf("trial %+v, want one owed since the outage began at %s", d.p.trial, outage)
			}
			if got := d.p.pause != nil; got != tc.paused {
				t.Fatalf("pause %+v, want one: %v", d.p.pause, tc.paused)
			}
			if tc.paused && !d.p.pause.Since.Equal(outage) {
				t.Errorf("the pause began at %s, want the outage's start %s", d.p.pause.Since, outage)
			}
			d.now = passed.Add(2 * time.Second)
			d.wake(0)
			if len(d.launches) != tc.launches {
				t.Errorf("launched %q, want %d sessions", d.launches, tc.launches)
			}
			if tc.paused && d.apiChecks != 1 {
				t.Errorf("%d checks of the API, want one at once", d.apiChecks)
			}
			if tc.trial && len(d.launches) == 1 && (d.p.trial.Job != d.last() || !d.p.trial.Out()) {
				t.Errorf("the first session %s is not the trial %+v", d.last(), d.p.trial)
			}
		})
	}
}
