package queue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/session"
)

// outageFixture is a batch of one job on a Postgres of the test's own,
// which the test takes away and brings back. The job's agent runs until
// the test releases it, then exits 0: an end the coordinator's crash
// verdict (exit -1) cannot be mistaken for.
type outageFixture struct {
	t   *testing.T
	dir string
	srv *pgtest.Server
	db  *clusterdb.DB
	b   *jobs.Batch
	c   *Coordinator

	mu      sync.Mutex
	ends    []session.Ended // every end the coordinator heard
	reads   int             // its whole reads of the database
	started bool            // a worker logged "worker started"
	waiting map[string]int  // a worker's start waited for the database, by step
}

// startedWatch marks the fixture when a worker says it has started (River's
// Start returns after the attempt may already be claimed), and counts the
// tries of a start that waits for the database, by step.
type startedWatch struct{ f *outageFixture }

func (w startedWatch) Write(p []byte) (int, error) {
	line := string(p)
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if strings.Contains(line, `"worker started"`) {
		w.f.started = true
	}
	if strings.Contains(line, "does not answer while the worker starts") {
		for _, step := range []string{"register", "start River"} {
			if strings.Contains(line, `"step":"`+step+`"`) {
				w.f.waiting[step]++
			}
		}
	}
	return len(p), nil
}

func newOutageFixture(t *testing.T) *outageFixture {
	t.Helper()
	f := &outageFixture{t: t, dir: t.TempDir(), waiting: map[string]int{}}
	var dsn string
	f.srv, dsn = pgtest.Own(t)
	ctx := context.Background()
	db, err := clusterdb.Open(ctx, dsn, "b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	f.db = db
	agent := filepath.Join(f.dir, "agent")
	sh := fmt.Sprintf("#!/bin/sh\nwhile [ ! -f %[1]s/release ]; do sleep 0.05; done\necho > %[1]s/ended\nexit 0\n", f.dir)
	if err := os.WriteFile(agent, []byte(sh), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.dir, "night.yaml")
	// hook_transport: command: the stand-in agent would take `--version`
	// for a session (the transport is not what this tests).
	yaml := "version: 1\nname: b\nstate_dir: ./state\ncluster: {}\nhook_transport: command\nagent: {command: " + agent + "}\njobs:\n  - {name: j, prompt: hi}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if f.b, err = jobs.Load(path, nil); err != nil {
		t.Fatal(err)
	}
	if f.c, err = NewCoordinator(db, "run-1"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Enqueue(ctx, AttemptArgs{Job: "j", Attempt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	f.pump()
	return f
}

// pump polls the coordinator as the night's pump does, through the
// errors of a database that went away, until the test ends.
func (f *outageFixture) pump() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_, ends, err := f.c.Poll(ctx)
			f.mu.Lock()
			if err == nil {
				f.reads++
				f.ends = append(f.ends, ends...)
			}
			f.mu.Unlock()
			time.Sleep(200 * time.Millisecond)
		}
	}()
	f.t.Cleanup(func() { cancel(); <-done })
}

// heard is every end the coordinator heard, and how many whole reads it
// made.
func (f *outageFixture) heard() ([]session.Ended, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]session.Ended(nil), f.ends...), f.reads
}

// worker runs a worker of host until the returned stop is called (or the
// test ends).
func (f *outageFixture) worker(host string) (stop func()) { return f.workerWith(host, nil) }

// workerWith is worker with the worker changed by prepare first.
func (f *outageFixture) workerWith(host string, prepare func(*Worker)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w := &Worker{DB: f.db, Batch: f.b, Binary: "/bin/true", Host: host, Log: zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(f.t), startedWatch{f}))}
	if prepare != nil {
		prepare(w)
	}
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil && ctx.Err() == nil {
			f.t.Errorf("worker %s: %v", host, err)
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	f.t.Cleanup(stop)
	return stop
}

func (f *outageFixture) waitFor(what string, within time.Duration, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// running waits until the attempt runs on a worker.
func (f *outageFixture) running() {
	f.t.Helper()
	f.waitFor("the attempt starts", 30*time.Second, func() bool {
		s, _ := f.c.State(context.Background(), "j", 1)
		return s == "running"
	})
	f.waitFor("the worker has started", 30*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.started
	})
}

func (f *outageFixture) pause() {
	f.t.Helper()
	if err := f.srv.Pause(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *outageFixture) resume() {
	f.t.Helper()
	if err := f.srv.Resume(); err != nil {
		f.t.Fatal(err)
	}
}

// endsUntil waits until the coordinator heard an end (or enough says so,
// or within passes), and returns every end it heard.
func (f *outageFixture) endsUntil(within time.Duration, enough func([]session.Ended) bool) []session.Ended {
	deadline := time.Now().Add(within)
	for {
		ends, _ := f.heard()
		if len(ends) > 0 || enough(ends) || time.Now().After(deadline) {
			return ends
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func some(ends []session.Ended) bool { return len(ends) > 0 }

// wantWorkersEnd checks that the coordinator heard the attempt's end once,
// as the worker of host made it (exit 0), not a crash verdict.
func (f *outageFixture) wantWorkersEnd(ends []session.Ended, host string) {
	f.t.Helper()
	if len(ends) != 1 {
		f.t.Fatalf("the coordinator heard %d ends %+v, want the attempt's one", len(ends), ends)
	}
	e := ends[0]
	if e.Job != "j" || e.Outcome.ExitCode != 0 || e.Outcome.KilledBy != "" || e.Host != host {
		f.t.Fatalf("the attempt's end is %+v (on %s), want the worker's own (exit 0) from %s", e.Outcome, e.Host, host)
	}
	var endedBy string
	if err := f.db.Pool.QueryRow(context.Background(), "SELECT ended_by FROM nightwatch_attempts WHERE job = 'j'").Scan(&endedBy); err != nil || endedBy != "worker" {
		f.t.Errorf("ended_by = %q (%v), want worker", endedBy, err)
	}
}

// An attempt that ends while the database is down is kept in the spool
// and delivered when it answers again, once; the spool file goes; a
// second delivery of the same end changes nothing.
func TestEndDuringOutageIsDeliveredOnce(t *testing.T) {
	t.Parallel()
	f := newOutageFixture(t)
	f.worker("host-a")
	f.running()
	f.pause()
	if err := os.WriteFile(filepath.Join(f.dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	spooled := statedir.SpooledEnd(f.b.StateDir, "run-1", "j", 1)
	f.waitFor("the session ends", 30*time.Second, func() bool { return exists(filepath.Join(f.dir, "ended")) })
	f.waitFor("the end is kept in the spool", 30*time.Second, func() bool { return exists(spooled) })
	kept, err := os.ReadFile(spooled)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(spooled); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the spool file's mode is %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	f.resume()
	ends := f.endsUntil(60*time.Second, some)
	f.waitFor("the spool file is removed after delivery", 30*time.Second, func() bool { return !exists(spooled) })
	// The same end delivered again (a worker that died after the
	// database took it, before it removed the file) changes nothing.
	if err := os.WriteFile(spooled, kept, 0o600); err != nil {
		t.Fatal(err)
	}
	f.waitFor("the redelivered file is removed", 30*time.Second, func() bool { return !exists(spooled) })
	_, reads := f.heard()
	f.waitFor("the coordinator reads twice more", 30*time.Second, func() bool { _, r := f.heard(); return r >= reads+2 })
	ends, _ = f.heard()
	f.wantWorkersEnd(ends, "host-a")
}

// A worker stopped while the database is down leaves its attempt's end in
// the spool; the next worker of that host delivers it when the database
// answers.
func TestSpoolLeftByAWorkerIsDeliveredByTheNext(t *testing.T) {
	t.Parallel()
	f := newOutageFixture(t)
	stop := f.worker("host-a")
	f.running()
	f.pause()
	if err := os.WriteFile(filepath.Join(f.dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.waitFor("the session ends", 30*time.Second, func() bool { return exists(filepath.Join(f.dir, "ended")) })
	// The session's own end is in the spool before the worker stops (a
	// stop while the agent is still exiting would end it "stopped").
	spooled := statedir.SpooledEnd(f.b.StateDir, "run-1", "j", 1)
	f.waitFor("the end is kept in the spool", 30*time.Second, func() bool { return exists(spooled) })
	stop() // gives up on the database after spoolGrace
	paths, _ := filepath.Glob(statedir.SpooledEnds(f.b.StateDir))
	if len(paths) != 1 {
		t.Fatalf("the stopped worker left %v in the spool, want the attempt's end", paths)
	}
	f.resume()
	f.worker("host-a")
	ends := f.endsUntil(60*time.Second, some)
	f.wantWorkersEnd(ends, "host-a")
	f.waitFor("the spool file is removed after delivery", 30*time.Second, func() bool { return !exists(paths[0]) })
}

// The database goes away for longer than a dead worker's silence
// (DeadAfter) while an attempt runs: the worker keeps its session, and
// the coordinator, back from its own gap, does not end the attempt as a
// crash; the attempt ends when its session does, as the worker says.
func TestCoordinatorAcrossItsOwnOutageKeepsALiveWorkersAttempt(t *testing.T) {
	t.Parallel()
	f := newOutageFixture(t)
	f.worker("host-a")
	f.running()
	f.pause()
	// The outage outlasts DeadAfter: a time the test sets, slept, not a
	// condition it waits on.
	time.Sleep(DeadAfter + HeartbeatEvery)
	f.resume()
	// Until the coordinator has read the database a while (what a dead
	// worker's silence takes) after the worker was heard again.
	var beat time.Time
	f.waitFor("the worker is heard again", 30*time.Second, func() bool {
		return f.db.Pool.QueryRow(context.Background(), "SELECT heartbeat_at FROM nightwatch_workers WHERE heartbeat_at > now() - interval '1 second'").Scan(&beat) == nil
	})
	_, reads := f.heard()
	ends := f.endsUntil(60*time.Second, func([]session.Ended) bool {
		_, r := f.heard()
		return r > reads+int(2*DeadAfter/(200*time.Millisecond))
	})
	if len(ends) > 0 {
		t.Fatalf("the coordinator ended the live worker's attempt after its own outage: %+v", ends)
	}
	if s, err := f.c.State(context.Background(), "j", 1); err != nil || s != "running" {
		t.Fatalf("the attempt is %q (%v), want still running on its worker", s, err)
	}
	if exists(filepath.Join(f.dir, "ended")) {
		t.Fatal("the worker stopped its session during the outage")
	}
	if err := os.WriteFile(filepath.Join(f.dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.wantWorkersEnd(f.endsUntil(60*time.Second, some), "host-a")
}

// A worker's claim refreshes its heartbeat in the claim's transaction:
// the attempt never starts with a heartbeat older than itself.
func TestClaimRefreshesTheHeartbeat(t *testing.T) {
	t.Parallel()
	f := newOutageFixture(t)
	ctx := context.Background()
	// Triggers note the transaction of every heartbeat and of the claim.
	for _, sql := range []string{
		"CREATE TABLE beats (tx bigint)",
		"CREATE TABLE claims (tx bigint)",
		`CREATE FUNCTION note_beat() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO beats VALUES (txid_current()); RETURN NEW; END $$`,
		`CREATE FUNCTION note_claim() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO claims VALUES (txid_current()); RETURN NEW; END $$`,
		"CREATE TRIGGER beat AFTER UPDATE ON nightwatch_workers FOR EACH ROW EXECUTE FUNCTION note_beat()",
		"CREATE TRIGGER claim AFTER UPDATE ON nightwatch_attempts FOR EACH ROW WHEN (OLD.state = 'queued' AND NEW.state = 'running') EXECUTE FUNCTION note_claim()",
	} {
		if _, err := f.db.Pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	f.worker("host-a")
	f.running()
	var claims int
	var refreshed bool
	err := f.db.Pool.QueryRow(ctx, "SELECT count(*), bool_or(EXISTS (SELECT 1 FROM beats b WHERE b.tx = c.tx)) FROM claims c").Scan(&claims, &refreshed)
	if err != nil {
		t.Fatal(err)
	}
	if claims != 1 || !refreshed {
		t.Fatalf("%d claims, heartbeat refreshed in the claim's transaction: %v; want one claim that refreshed it", claims, refreshed)
	}
}

// workerDead: a process that is gone is dead after DeadAfter, a worker
// whose connection lives after SilentAfter (past its own FenceAfter), and
// nobody is judged in the SilentAfter after a gap in the coordinator's own
// reads, except a worker that stopped cleanly.
func TestWorkerDead(t *testing.T) {
	if !(DeadAfter < FenceAfter && FenceAfter < SilentAfter) {
		t.Fatalf("DeadAfter %s, FenceAfter %s, SilentAfter %s: a worker cut off alone must stop its sessions before it is taken for dead",
			DeadAfter, FenceAfter, SilentAfter)
	}
	long := 1<<63 - 1
	for _, c := range []struct {
		name  string
		w     workerView
		heard time.Duration
		dead  bool
		why   string
	}{
		{"fresh heartbeat", workerView{known: true, heartbeat: time.Second, present: true}, time.Duration(long), false, ""},
		{"fresh heartbeat, no connection", workerView{known: true, heartbeat: time.Second}, time.Duration(long), false, ""},
		{"silent, connection gone", workerView{known: true, heartbeat: DeadAfter + time.Second}, time.Duration(long), true, "connection to the database is gone"},
		{"silent, connection open", workerView{known: true, heartbeat: DeadAfter + time.Second, present: true}, time.Duration(long), false, ""},
		{"silent past SilentAfter, connection open", workerView{known: true, heartbeat: SilentAfter + time.Second, present: true}, time.Duration(long), true, "no heartbeat for 41s"},
		{"silent, connection gone, just after the coordinator's gap", workerView{known: true, heartbeat: time.Minute}, time.Second, false, ""},
		{"silent, connection gone, SilentAfter after the gap", workerView{known: true, heartbeat: time.Minute}, SilentAfter + time.Second, true, "no heartbeat for 1m0s"},
		{"stopped, just after the gap", workerView{known: true, stopped: true}, time.Second, true, "it stopped"},
		{"no row", workerView{heartbeat: time.Hour}, time.Duration(long), false, ""},
	} {
		dead, why := workerDead(c.w, c.heard)
		if dead != c.dead || !strings.Contains(why, c.why) {
			t.Errorf("%s: dead %v (%q), want %v (%q)", c.name, dead, why, c.dead, c.why)
		}
	}
}
