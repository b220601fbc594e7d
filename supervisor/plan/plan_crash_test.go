package plan

import (
	"slices"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/modelapi"
	"github.com/nightwatch-dev/nightwatch/session"
)

// A supervisor that dies in the middle of the night's API rules and is
// started again goes on as the dead one would have: the journal it
// wrote (job-started lines and the plan's records) is replayed into a
// new plan, which stays paused until the reset, does not spend an
// uncounted attempt again, waits out an outage it had not seen end, and
// resumes the session a retry would have resumed.
func TestPlanCrashReplay(t *testing.T) {
	reset := planT0.Add(2 * time.Minute)
	usage := func() session.Outcome {
		o := apiOutcome(modelapi.UsageLimit, "You've hit your 5-hour limit · resets 2:02am", reset)
		o.SessionID = "s-1"
		return o
	}
	outage := func() session.Outcome {
		o := apiOutcome(modelapi.Unavailable, "API Error: Connection refused (ECONNREFUSED)", time.Time{})
		o.SessionID = "s-1"
		return o
	}
	timeout := session.Outcome{Status: session.Failed, KilledBy: "timeout", SessionID: "s-1", Reason: "killed after 1m timeout"}
	own := session.Outcome{Status: session.Failed, Reason: "exit 1: error_max_turns"}
	tests := []struct {
		name   string
		batch  *jobs.Batch
		before func(d *planDriver) // the dead supervisor's night
		after  func(d *planDriver) // the new one's
		// launches and resumes of the new supervisor; its phases and
		// checks of the API.
		launches, resumes []string
		phases            map[string]string
		apiChecks         int
	}{
		{
			name:  "usage limit: still paused until the reset, then the same session",
			batch: planBatch(resumeOn, planJob("a", retries(0)), planJob("b", retries(0))),
			before: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", usage())
				d.wake(10 * time.Second) // the crash comes during the pause
			},
			after: func(d *planDriver) {
				d.wake(0)           // restarted at 02:00:40: still paused
				d.wake(time.Minute) // 02:01:40: still paused
				d.wake(30 * time.Second)
				d.end("a", session.Done, 0)
				d.end("b", session.Done, 0)
			},
			launches: []string{"a#2", "b#1"},
			resumes:  []string{"s-1", ""},
			phases:   map[string]string{"a": "done", "b": "done"},
		},
		{
			name:  "usage limit: the uncounted attempt stays uncounted",
			batch: planBatch(resumeOn, planJob("a", retries(1))),
			before: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", usage())
			},
			after: func(d *planDriver) {
				d.wake(2 * time.Minute)
				d.endWith("a", own) // attempt 2, but the first one is not counted: one retry left
				d.wake(time.Minute)
			},
			launches: []string{"a#2", "a#3"},
			resumes:  []string{"s-1", ""},
			phases:   map[string]string{"a": "running"},
		},
		{
			name:  "outage: the new supervisor waits for the API before it starts anything",
			batch: planBatch(resumeOn, planJob("a", retries(1)), planJob("b", retries(0))),
			before: func(d *planDriver) {
				d.apiDown = true
				d.wake(0)
				d.endWith("a", outage())
			},
			after: func(d *planDriver) {
				d.apiDown = true
				d.wake(0)               // check 1 at once: down; next in 10 s
				d.wake(5 * time.Second) // not yet
				d.wake(5 * time.Second) // check 2: down; next in 20 s
				d.apiDown = false
				d.wake(20 * time.Second) // check 3: up
				d.end("a", session.Done, 0)
				d.end("b", session.Done, 0)
			},
			launches:  []string{"a#2", "b#1"},
			resumes:   []string{"s-1", ""},
			phases:    map[string]string{"a": "done", "b": "done"},
			apiChecks: 3,
		},
		{
			name:  "timeout: the retry after the restart resumes the session",
			batch: planBatch(resumeOn, planJob("a", retries(1))),
			before: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", timeout)
			},
			after: func(d *planDriver) {
				d.wake(time.Minute)
				d.end("a", session.Done, 0)
			},
			launches: []string{"a#2"},
			resumes:  []string{"s-1"},
			phases:   map[string]string{"a": "done"},
		},
		{
			name:  "resume: false starts fresh after the restart too",
			batch: planBatch(func(b *jobs.Batch) { b.Resume = false }, planJob("a", retries(1))),
			before: func(d *planDriver) {
				d.wake(0)
				d.endWith("a", timeout)
			},
			after: func(d *planDriver) {
				d.wake(time.Minute)
			},
			launches: []string{"a#2"},
			resumes:  []string{""},
			phases:   map[string]string{"a": "running"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, j := range tc.batch.Jobs {
				j.Servers = nil
			}
			dead := newPlanDriver(t, tc.batch)
			dead.p.rules.waits = testWaits.WithDefaults()
			tc.before(dead)

			d := newPlanDriver(t, tc.batch)
			d.p.rules.waits = testWaits.WithDefaults()
			d.now = dead.now.Add(30 * time.Second)
			d.p.Fold(dead.journal)
			tc.after(d)
			if !slices.Equal(d.launches, tc.launches) || !slices.Equal(d.resumes, tc.resumes) {
				t.Errorf("after the restart: launches %q resumes %q, want %q %q", d.launches, d.resumes, tc.launches, tc.resumes)
			}
			got := d.phases()
			for job, want := range tc.phases {
				if got[job] != want {
					t.Errorf("%s is %s, want %s (journal %+v)", job, got[job], want, dead.journal)
				}
			}
			if d.apiChecks != tc.apiChecks {
				t.Errorf("API checks %d, want %d", d.apiChecks, tc.apiChecks)
			}
		})
	}
}

func resumeOn(b *jobs.Batch) { b.Resume = true }
