package queue

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/session"
)

// The cluster's executor as the night sees it: an attempt the journal
// refused is not enqueued; one enqueued is reported back once with what
// its session saw before its end, in the session's own typed words (the
// observation makes the round trip through nightwatch_observations); and
// StopAll stops what has not ended, whose end comes back KilledStopped.
func TestExecutorReportsInOrderAndStopsAll(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	b := &jobs.Batch{Name: "b", Jobs: []*jobs.Job{{Name: "seen"}, {Name: "queued"}, {Name: "refused"}}}
	reports := make(chan session.Report, 16)
	log := zerolog.Nop()
	e, err := NewExecutor(db, b, "run-1", reports, &log)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	yes := func(session.Starting) bool { return true }

	if started, err := e.Launch(ctx, session.Attempt{Job: "refused", Attempt: 1}, func(session.Starting) bool { return false }); started || err != nil {
		t.Fatalf("an attempt the journal refused: started %v, %v", started, err)
	}
	for _, job := range []string{"seen", "queued"} {
		if started, err := e.Launch(ctx, session.Attempt{Job: job, Attempt: 1}, yes); !started || err != nil {
			t.Fatalf("launch %s: started %v, %v", job, started, err)
		}
	}
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM nightwatch_attempts WHERE job = 'refused'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the refused attempt was enqueued (%d, %v)", n, err)
	}

	// A worker runs "seen": it claims it, tells what its session saw
	// (through its observer), and ends it done.
	w := &Worker{DB: db, Batch: b, Host: "host-a", Log: log, unseen: map[attemptKey][]session.Observation{}}
	if _, err := db.Pool.Exec(ctx, `UPDATE nightwatch_attempts SET state = 'running', host = 'host-a' WHERE job = 'seen'`); err != nil {
		t.Fatal(err)
	}
	obs := &observer{w: w, k: attemptKey{"run-1", "seen", 1}}
	obs.Observe(session.Observation{Kind: session.SawServer, Server: "notes", Status: session.ServerNeedsAuth})
	obs.Observe(session.Observation{Kind: session.SawHookEvents, Events: []healthcheck.Event{{Server: "notes"}}})
	if _, err := db.Pool.Exec(ctx, `UPDATE nightwatch_attempts SET state = 'ended', ended_by = 'worker', outcome = '{"status":"done"}', ended_at = now()
		WHERE job = 'seen'`); err != nil {
		t.Fatal(err)
	}
	var got []session.Report
	for len(got) < 3 {
		select {
		case r := <-reports:
			got = append(got, r)
		case <-time.After(time.Minute):
			t.Fatalf("reports: %+v, want two observations and an end", got)
		}
	}
	if s := got[0].Seen; got[0].Ended != nil || s.Kind != session.SawServer || s.Status != session.ServerNeedsAuth || s.Job != "seen" || s.Host != "host-a" {
		t.Errorf("first report %+v, want the server observation", got[0])
	}
	if s := got[1].Seen; got[1].Ended != nil || s.Kind != session.SawHookEvents || len(s.Events) != 1 || s.Events[0].Server != "notes" {
		t.Errorf("second report %+v, want the hooks' events", got[1])
	}
	if e := got[2].Ended; e == nil || e.Job != "seen" || e.Outcome.Status != session.Done || e.Host != "host-a" {
		t.Errorf("third report %+v, want seen's end", got[2])
	}

	// The night stops: what has not ended is stopped, and its end comes.
	if patience := e.StopAll(ctx); patience <= 0 {
		t.Errorf("StopAll's patience %s, want the wait for workers that do not answer", patience)
	}
	select {
	case r := <-reports:
		if r.Ended == nil || r.Ended.Job != "queued" || r.Ended.Outcome.KilledBy != session.KilledStopped {
			t.Errorf("after StopAll: %+v, want queued's end, stopped", r)
		}
	case <-time.After(time.Minute):
		t.Fatal("queued's end did not come after StopAll")
	}
	select {
	case r := <-reports:
		t.Errorf("a report after every end: %+v", r)
	case <-time.After(time.Second):
	}
}
