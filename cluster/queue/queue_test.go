package queue

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/session"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// River's own rule for queue names (client.go, validateQueueName).
var riverQueueName = regexp.MustCompile(`^(?:[a-z0-9])+(?:[_|\-]?[a-z0-9]+)*$`)

func TestQueueNamesAreRiversAndKeepNamesApart(t *testing.T) {
	long := strings.Repeat("Very.Long_Name-", 12)
	names := map[string]string{}
	for _, c := range []struct{ batch, label string }{
		{"nightly", ""}, {"nightly", "mac"}, {"nightly", "Mac"}, {"nightly", "m.a.c"}, {"nightly", "m-a-c"},
		{"Nightly", ""}, {long, ""}, {long, long}, {"..x..", "--"}, {"ünïcode", "标签"},
	} {
		q := QueueName(c.batch, c.label)
		if len(q) > 64 || !riverQueueName.MatchString(q) {
			t.Errorf("QueueName(%q, %q) = %q: not a River queue name", c.batch, c.label, q)
		}
		if other, ok := names[q]; ok {
			t.Errorf("QueueName(%q, %q) = %q, the same as %s", c.batch, c.label, q, other)
		}
		names[q] = c.batch + "/" + c.label
		if QueueName(c.batch, c.label) != q {
			t.Errorf("QueueName(%q, %q) is not stable", c.batch, c.label)
		}
	}
	b := &jobs.Batch{Name: "nightly"}
	if got := Queues(b, []string{"mac", "linux"}); len(got) != 3 || got[0] != QueueName("nightly", "") {
		t.Errorf("Queues = %v, want the common queue and one per label", got)
	}
}

func openDB(t *testing.T) *clusterdb.DB {
	t.Helper()
	ctx := context.Background()
	db, err := clusterdb.Open(ctx, pgtest.New(t), "b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// An attempt whose worker stopped heartbeating ends as a crash, once; one
// still queued that the night abandons ends at once and River never hands
// it to a worker.
func TestCoordinatorEndsWhatItCannotHearOf(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	c, err := NewCoordinator(db, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"dead-worker", "abandoned"} {
		if err := c.Enqueue(ctx, AttemptArgs{Job: job, Attempt: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Enqueuing again (a coordinator that restarted) adds nothing.
	if err := c.Enqueue(ctx, AttemptArgs{Job: "abandoned", Attempt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	var riverJobs int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM river_job").Scan(&riverJobs); err != nil || riverJobs != 2 {
		t.Fatalf("%d River jobs (%v), want 2", riverJobs, err)
	}
	if err := db.Heartbeat(ctx, clusterdb.Worker{ID: "w1", Host: "host-a", PID: 1, MaxParallel: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE nightwatch_attempts SET state = 'running', worker_id = 'w1', host = 'host-a' WHERE job = 'dead-worker'`); err != nil {
		t.Fatal(err)
	}
	// As River leaves the job a worker fetched.
	if _, err := db.Pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = '{w1}'
		WHERE id = (SELECT river_job_id FROM nightwatch_attempts WHERE job = 'dead-worker')`); err != nil {
		t.Fatal(err)
	}
	if err := c.Abandon(ctx, "abandoned", 1, "server x could not be used"); err != nil {
		t.Fatal(err)
	}
	_, ends, err := c.Poll(ctx)
	if err != nil || len(ends) != 1 || ends[0].Job != "abandoned" || ends[0].Outcome.KilledBy != session.KilledAbandoned {
		t.Fatalf("poll = %+v %v, want only the abandoned attempt's end", ends, err)
	}
	var state string
	if err := db.Pool.QueryRow(ctx, `SELECT j.state FROM river_job j JOIN nightwatch_attempts a ON a.river_job_id = j.id WHERE a.job = 'abandoned'`).Scan(&state); err != nil || state != "cancelled" {
		t.Errorf("the abandoned attempt's River job is %q (%v), want cancelled", state, err)
	}
	// The worker goes silent.
	if _, err := db.Pool.Exec(ctx, `UPDATE nightwatch_workers SET heartbeat_at = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	_, ends, err = c.Poll(ctx)
	if err != nil || len(ends) != 1 || ends[0].Job != "dead-worker" || ends[0].Outcome.KilledBy != session.KilledCrashed ||
		!strings.Contains(ends[0].Outcome.Reason, "host-a stopped answering") {
		t.Fatalf("poll = %+v %v, want the dead worker's attempt ended as a crash", ends, err)
	}
	if _, ends, _ = c.Poll(ctx); len(ends) != 0 {
		t.Errorf("the crash was reported again: %+v", ends)
	}
	// River (and River UI) no longer shows the dead worker's attempt as
	// running: the coordinator concluded it, so River's job is finished.
	var finalized bool
	if err := db.Pool.QueryRow(ctx, `SELECT j.state, j.finalized_at IS NOT NULL FROM river_job j JOIN nightwatch_attempts a ON a.river_job_id = j.id
		WHERE a.job = 'dead-worker'`).Scan(&state, &finalized); err != nil || state != "cancelled" || !finalized {
		t.Errorf("the dead worker's River job is %q, finalized %v (%v), want cancelled and finalized", state, finalized, err)
	}
}

// The night's journal lines go to the shared journal in the statement
// that enqueues the next attempt; an attempt enqueued before (a restarted
// coordinator) writes nothing, and the lines are the caller's to write.
func TestEnqueueCarriesTheJournalLines(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	c, err := NewCoordinator(db, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	lines := []journal.Event{{Type: journal.JobStarted, Run: "run-1", Job: "a", Attempt: 1}, {Type: journal.SessionProcess, Run: "run-1", Job: "b", Attempt: 1, PID: 7}}
	for i, want := range []bool{true, false} {
		journaled, err := c.EnqueueJournaled(ctx, AttemptArgs{Job: "a", Attempt: 1}, nil, "coord", lines[:2-i])
		if err != nil || journaled != want {
			t.Fatalf("enqueue %d: journaled %v (%v), want %v", i+1, journaled, err, want)
		}
	}
	evs, err := db.RunEvents(ctx, "run-1")
	if err != nil || len(evs) != 2 || evs[0].Type != journal.JobStarted || evs[1].PID != 7 {
		t.Fatalf("shared journal = %+v (%v), want the two lines of the first enqueue, in order", evs, err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM river_job").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d River jobs (%v), want 1", n, err)
	}
}

// River's own rescuer: a running attempt whose River job has run longer
// than rescue_after (a worker that died with nothing to say so, its row
// gone) is discarded by the leader's rescuer, and the coordinator ends it
// as a crash, counted once.
func TestRiverRescuesAStuckAttempt(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	c, err := NewCoordinator(db, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, AttemptArgs{Job: "stuck", Attempt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	// As a worker that took it an hour ago and vanished leaves it.
	if _, err := db.Pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '1 hour',
		attempted_by = '{gone}'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE nightwatch_attempts SET state = 'running', host = 'host-x', worker_id = 'gone'`); err != nil {
		t.Fatal(err)
	}
	b := &jobs.Batch{Name: "b", MaxParallel: 1, Cluster: &jobs.Cluster{RescueAfter: time.Minute}}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	w := &Worker{DB: db, Batch: b, Binary: "/bin/true", Host: "host-b", Log: zerolog.Nop()}
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		_, ends, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ends) > 0 {
			e := ends[0]
			if e.Job != "stuck" || e.Outcome.KilledBy != session.KilledCrashed || !strings.Contains(e.Outcome.Reason, "River ended the attempt (discarded)") {
				t.Fatalf("end = %+v, want the rescued attempt as a crash", e)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("River's rescuer did not rescue the stuck attempt within 60s")
}

// River's timeout of an attempt lies past the job's own timeout (so
// session.Run ends it first) and below rescue_after (River requires it,
// and a live attempt is never rescued).
func TestRiverTimeoutLiesBetweenTheJobsAndRescue(t *testing.T) {
	b := &jobs.Batch{Cluster: &jobs.Cluster{RescueAfter: 50 * time.Minute},
		Jobs: []*jobs.Job{{Name: "short", Timeout: 10 * time.Minute}, {Name: "long", Timeout: 49 * time.Minute}, {Name: "none"}}}
	for _, c := range []struct {
		job  string
		want time.Duration
	}{{"short", 11 * time.Minute}, {"long", 49*time.Minute + 30*time.Second}, {"none", 25 * time.Minute}, {"unknown", 25 * time.Minute}} {
		got := RiverTimeout(b, c.job)
		if got != c.want {
			t.Errorf("RiverTimeout(%s) = %s, want %s", c.job, got, c.want)
		}
		if j := b.Job(c.job); j != nil && got <= j.Timeout || got >= b.Cluster.RescueAfter {
			t.Errorf("RiverTimeout(%s) = %s is not between the job's timeout and rescue_after", c.job, got)
		}
	}
}

// A worker that is stopped (SIGTERM) stops its sessions and says so: the
// attempt ends "stopped", which the night runs again without counting it.
func TestStoppedWorkerEndsItsAttemptsStopped(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	dir := t.TempDir()
	agent := filepath.Join(dir, "slow-claude")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\nsleep 30\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "night.yaml")
	// hook_transport: command: the stand-in agent would take `--version`
	// for a session (the transport is not what this tests).
	yaml := "version: 1\nname: b\nstate_dir: ./state\ncluster: {}\nhook_transport: command\nagent: {command: " + agent + "}\njobs:\n  - {name: slow, prompt: hi}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := jobs.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCoordinator(db, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, AttemptArgs{Job: "slow", Attempt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	w := &Worker{DB: db, Batch: b, Binary: "/bin/true", Host: "host-a", Log: zerolog.Nop()}
	go func() { done <- w.Run(wctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if s, _ := c.State(ctx, "slow", 1); s == "running" {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatal("the attempt did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the session runs
	stop()
	if err := <-done; err != nil {
		t.Fatalf("worker: %v", err)
	}
	_, ends, err := c.Poll(ctx)
	if err != nil || len(ends) != 1 || ends[0].Outcome.KilledBy != session.KilledStopped || ends[0].Host != "host-a" {
		t.Fatalf("poll = %+v %v, want the attempt ended stopped on host-a", ends, err)
	}
	ws, _, err := db.Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0].StoppedAt.IsZero() {
		t.Errorf("workers = %+v %v, want the worker marked stopped", ws, err)
	}
}
