package supervisor

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
	"github.com/nightwatch-dev/nightwatch/session"
)

// The plan folds its own journal: for random batches driven through step
// by random events (health answers, attempt ends of every kind, ticks,
// wakes, API checks, time passing, a stop), folding what step recorded
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
		for _, p := range []*plan{d.live, d.folded} {
			p.rules.waits = testWaits.withDefaults()
		}
		for step := range 60 + rng.IntN(60) {
			d.randomStep()
			if got, want := journalFacts(d.folded), journalFacts(d.live); !got.equal(want) {
				t.Fatalf("seed %d, step %d: the folded plan differs from the live one:\n%s\njournal:\n%s",
					seed, step, factsDiff(got, want), d.journalText())
			}
		}
		if rng.IntN(2) == 0 {
			continue
		}
		// The night is stopped: its running attempts end as stopped, and
		// a new supervisor folds the journal.
		for _, name := range d.live.order {
			if jp := d.live.jobs[name]; jp.phase == phaseRunning {
				d.do(d.live.step(d.now, evAttemptEnded{job: name, attempt: jp.attempts,
					outcome: session.Outcome{Status: session.Failed, KilledBy: "stopped", Reason: "stopped with the night"}}))
			}
		}
		resumed := newPlan(b, planT0, 30*time.Second)
		resumed.rules.waits = testWaits.withDefaults()
		resumed.fold(d.journal)
		d.live.fold(nil)
		if got, want := journalFacts(resumed), journalFacts(d.live); !got.equal(want) {
			t.Fatalf("seed %d: the resumed plan differs from the stopped one:\n%s\njournal:\n%s",
				seed, factsDiff(got, want), d.journalText())
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
	live, folded *plan
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
	d.folded.apply(back)
}

func (d *foldDriver) do(acts []action) {
	for len(acts) > 0 {
		a := acts[0]
		acts = acts[1:]
		switch a := a.(type) {
		case actCheckHealth:
			down := d.health[a.job]
			var servers []string
			if down != "" {
				servers = []string{"notes"}
			}
			acts = append(d.live.step(d.now, evHealth{job: a.job, down: down, servers: servers}), acts...)
		case actLaunch:
			if d.rng.IntN(12) == 0 { // its files cannot be prepared: no job-started line
				acts = append(d.live.step(d.now, evAttemptEnded{job: a.job, attempt: a.attempt, unstarted: true,
					outcome: session.Outcome{Status: session.Failed, Reason: "cannot prepare the session: disk full"}}), acts...)
				continue
			}
			d.append(journal.Event{Time: d.now, Type: journal.JobStarted, Job: a.job, Attempt: a.attempt, Resume: a.resume})
		case actRecord:
			if a.ev.Time.IsZero() {
				d.t.Fatalf("a record without the plan's time: %+v", a.ev)
			}
			d.append(a.ev)
		case actCheckAPI:
			acts = append(d.live.step(d.now, evAPI{ok: !d.apiDown, why: "refused"}), acts...)
		case actMaintain, actFinish, actNotifyNow:
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
		d.do(d.live.step(d.now, evWake{}))
	case 2:
		d.do(d.live.step(d.now, evTick{}))
	case 3:
		job := d.live.order[rng.IntN(len(d.live.order))]
		d.health[job] = []string{"", "", "server notes is down since 02:00:00 (connect ECONNREFUSED)",
			"server notes is down since 02:03:00 (401)"}[rng.IntN(4)]
	case 4:
		d.apiDown = !d.apiDown
	default:
		var running []string
		for _, name := range d.live.order {
			if d.live.jobs[name].phase == phaseRunning {
				running = append(running, name)
			}
		}
		if len(running) == 0 {
			d.do(d.live.step(d.now, evWake{}))
			return
		}
		job := running[rng.IntN(len(running))]
		attempt := d.live.jobs[job].attempts
		if rng.IntN(15) == 0 {
			attempt-- // a cluster's late report of an older attempt
		}
		d.now = d.now.Add(foldWaits[rng.IntN(len(foldWaits))])
		d.do(d.live.step(d.now, evAttemptEnded{job: job, attempt: attempt, outcome: randomOutcome(rng, d.now),
			host: []string{"", "host-a"}[rng.IntN(2)]}))
		d.do(d.live.step(d.now, evWake{}))
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
	api := func(class session.APIFailureClass, reason string, reset time.Time) {
		out.Reason = []string{reason, ""}[rng.IntN(2)]
		out.API = &session.APIFailure{Class: class, Reason: reason, ResetAt: reset}
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
		api(session.FailureUsageLimit, "You've hit your 5-hour limit", reset)
	case 9:
		api(session.FailureRateLimit, "API Error: 429 rate_limit_error", time.Time{})
	case 10, 11:
		api(session.FailureAPIUnavailable, "API Error: Connection refused (ECONNREFUSED)", time.Time{})
	case 12:
		if rng.IntN(3) == 0 {
			api(session.FailureInvalidCredentials, "Invalid API key · Fix external API key", time.Time{})
		}
	case 13:
		api(session.FailureMaxTurns, "exit 1: error_max_turns", time.Time{})
	case 14:
		api(session.FailureContextTooLong, "Prompt is too long", time.Time{})
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
	class            session.APIFailureClass
	reason           string
	since, until     int64
	backoff          time.Duration
}

func journalFacts(p *plan) planFacts {
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
			costed: jp.costed, chargedOutage: jp.chargedOutage, deferrals: jp.deferrals, reason: jp.reason, feedback: jp.feedback,
			resume: jp.resume, resumeWhy: jp.resumeWhy, deferring: jp.deferring,
			notBefore: ns(jp.notBefore), deferredSince: ns(jp.deferredSince), startedAt: ns(jp.startedAt)})
	}
	if np := p.pause; np != nil {
		f.night.paused, f.night.class, f.night.reason, f.night.since = true, np.class, np.reason, ns(np.since)
		if np.class != session.FailureAPIUnavailable {
			f.night.until, f.night.backoff = ns(np.until), np.backoff
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
