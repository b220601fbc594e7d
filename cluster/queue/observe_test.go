package queue

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/session"
)

// What a worker tells the night is the session's own session.Observation,
// whichever way it goes (as the session sees it, with the attempt's end
// from the spool, or the host's hooks' events from its events file): the
// coordinator reads back the same value, field for field, stamped with
// the attempt and the worker's host, as the local executor hands the
// session's value to the night.
func TestObservationsArriveAsSent(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	c, err := NewCoordinator(db, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"live", "spooled"} {
		if err := c.Enqueue(ctx, AttemptArgs{Job: job, Attempt: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE nightwatch_attempts SET state = 'running', host = 'host-a'`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC)
	hookEvents := []healthcheck.Event{
		{Time: at, Kind: healthcheck.EventState, Server: "notes", From: "healthy", To: "unhealthy", Code: "closed",
			Reason: `said {"why":"x"}`, By: "hook", Until: at.Add(time.Minute)},
		{Time: at, Kind: healthcheck.EventServerRestarted, Server: "notes", Run: "run-1", Job: "live", Attempt: 1, Start: 2, PID: 42},
	}
	sent := []session.Observation{
		{Kind: session.SawServer, Server: "notes", Status: session.ServerNeedsAuth},
		{Kind: session.SawMissingTool, Tool: "mcp__notes__gone"},
		{Kind: session.SawUnusable, Server: "notes", Why: `exited 1: {"events":[]}`},
		{Kind: session.SawModelTurn},
		{Kind: session.SawHookEvents, Events: hookEvents},
	}
	dir := t.TempDir()
	b := &jobs.Batch{Name: "b", StateDir: dir, Jobs: []*jobs.Job{{Name: "live"}, {Name: "spooled"}}}
	w := &Worker{DB: db, Batch: b, Host: "host-a", Log: zerolog.Nop(), id: "w1",
		unseen: map[attemptKey][]session.Observation{}, process: map[attemptKey]*processReport{},
		running: map[attemptKey]context.CancelCauseFunc{}, effectsSent: map[attemptKey]int{}, delivery: ctx}
	// As the session sees it.
	obs := &observer{w: w, k: attemptKey{"run-1", "live", 1}}
	for _, o := range sent {
		obs.Observe(o)
	}
	// With the attempt's end, from the spool.
	if err := w.deliver(ctx, spooledEnd{Batch: "b", Run: "run-1", Job: "spooled", Attempt: 1, Host: "host-a", Worker: "w1",
		Outcome: session.Outcome{Status: session.Done}, Seen: sent}); err != nil {
		t.Fatal(err)
	}
	// The host's hooks' events, from its events file.
	w.tail = healthcheck.EventTail{Path: filepath.Join(dir, "events.jsonl")}
	log := healthcheck.EventLog{Path: w.tail.Path}
	for _, ev := range hookEvents {
		log.Append(ev)
	}
	w.lastRun = "run-1"
	w.forwardNow()

	seen, ends, err := c.Reports(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ends) != 1 || ends[0].Job != "spooled" {
		t.Errorf("ends %+v, want spooled's", ends)
	}
	var want []session.Observation
	for _, job := range []string{"live", "spooled"} {
		for _, o := range sent {
			o.Job, o.Attempt, o.Host = job, 1, "host-a"
			want = append(want, o)
		}
	}
	want = append(want, session.Observation{Kind: session.SawHookEvents, Host: "host-a", Events: hookEvents})
	if len(seen) != len(want) {
		t.Fatalf("the coordinator read %d observations, want %d:\n%+v", len(seen), len(want), seen)
	}
	for i := range want {
		if !reflect.DeepEqual(seen[i], want[i]) {
			t.Errorf("observation %d:\n got %+v\nwant %+v", i, seen[i], want[i])
		}
	}
}
