//go:build !windows

package cluster_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// TestClusterDatabaseOutage: a night of four jobs on two workers; the
// cluster's Postgres is stopped for 15 s (and until a session has ended
// while it was away) while attempts run, then started again. Every job is
// done exactly once (its slow call answered once: no work ran twice) and
// no attempt is journaled as a crash: the ends made during the outage
// wait in the workers' spools and are delivered, the coordinator judges
// no heartbeat across its own gap, and the attempts claimed right after
// the database came back are not taken for a dead worker's.
func TestClusterDatabaseOutage(t *testing.T) {
	t.Parallel()
	testkit.ForEachClaude(t, testClusterDatabaseOutage)
}

func testClusterDatabaseOutage(t *testing.T, version string) {
	f := newClusterFixture(t, version)
	// The night's database is this test's own: it goes away.
	srv, dsn := pgtest.Own(t)
	f.dsn = dsn
	for i, kv := range f.env {
		if strings.HasPrefix(kv, "NW_PG=") {
			f.env[i] = "NW_PG=" + dsn
		}
	}
	jobNames := []string{"j1", "j2", "j3", "j4"}
	var jobsYAML strings.Builder
	for _, j := range jobNames {
		fmt.Fprintf(&jobsYAML, "  - {name: %s, servers: [web], allowed_tools: [mcp__web], prompt: %s}\n", j, script(j, `mcp__web__slow {"ms":3000}`))
	}
	f.writeBatch(version, jobsYAML.String())

	f.start("host-a", "worker", f.batch)
	f.start("host-b", "worker", f.batch)
	coord := f.start("host-c", "run", f.batch)
	db := f.db()

	// The first two attempts run, one per worker, inside their slow call.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if inCall := f.slowCallsUnderway(jobNames); inCall >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("two attempts did not reach their slow call within 2m")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	for time.Since(down) < 15*time.Second || f.answeredLast(jobNames) == 0 {
		if time.Since(down) > 5*time.Minute { // only sessions that never end run it out
			t.Fatal("no session ended after the database went away")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the database was away for %s", time.Since(down).Round(time.Millisecond))

	if code := coord.wait(t, 4*time.Minute); code != 0 {
		b, _ := os.ReadFile(coord.log)
		t.Fatalf("the coordinator exited %d:\n%s", code, tail(string(b), 6000))
	}
	evs := f.events(db)
	e := ends(evs)
	for _, j := range jobNames {
		if e.done[j] != 1 || e.endsAt[j] != 1 {
			t.Errorf("job %s: done %d times in %d attempts, want exactly once in one", j, e.done[j], e.endsAt[j])
		}
		if n := len(f.api.SessionToolResults(j)); n != 1 {
			t.Errorf("job %s: its slow call was answered %d times, want once (the work ran once)", j, n)
		}
	}
	for _, ev := range evs {
		if (ev.Type == journal.JobRetried || ev.Type == journal.JobFinished) && (strings.Contains(ev.Reason, "crash") || ev.Status != journal.Done) {
			t.Errorf("an attempt that was not a crash is journaled as one: %+v", ev)
		}
	}
	for _, host := range []string{"host-a", "host-b"} {
		if m, _ := filepath.Glob(statedir.SpooledEnds(filepath.Join(f.dir, "state-"+host))); len(m) > 0 {
			t.Errorf("ends are left in %s's spool after the night: %v", host, m)
		}
	}
}

// answeredLast counts the jobs whose session had its last turn answered:
// it ends at once.
func (f *clusterFixture) answeredLast(jobNames []string) int {
	n := 0
	for _, j := range jobNames {
		for _, r := range f.api.RequestLog() {
			if r.Session == j && r.Answer == "text" {
				n++
				break
			}
		}
	}
	return n
}

// slowCallsUnderway counts the jobs whose session asked for its slow call
// and has not had its answer yet.
func (f *clusterFixture) slowCallsUnderway(jobNames []string) int {
	asked := map[string]int{}
	for _, r := range f.api.RequestLog() {
		if strings.HasPrefix(r.Answer, "tool_use ") {
			asked[r.Session]++
		}
	}
	n := 0
	for _, j := range jobNames {
		if asked[j] > len(f.api.SessionToolResults(j)) {
			n++
		}
	}
	return n
}

// TestClusterWorkerStartsThroughAnOutage: the cluster's Postgres is down
// when `nightwatch worker` starts; the worker waits for it (saying so in
// its log) instead of exiting, and once the database is back it runs the
// night's job, once.
func TestClusterWorkerStartsThroughAnOutage(t *testing.T) {
	t.Parallel()
	testkit.ForEachClaude(t, testClusterWorkerStartsThroughAnOutage)
}

func testClusterWorkerStartsThroughAnOutage(t *testing.T, version string) {
	f := newClusterFixture(t, version)
	srv, dsn := pgtest.Own(t)
	f.dsn = dsn
	for i, kv := range f.env {
		if strings.HasPrefix(kv, "NW_PG=") {
			f.env[i] = "NW_PG=" + dsn
		}
	}
	f.writeBatch(version, fmt.Sprintf("  - {name: j1, servers: [web], allowed_tools: [mcp__web], prompt: %s}\n",
		script("j1", `mcp__web__echo {"message":"once"}`)))
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	worker := f.start("host-a", "worker", f.batch)
	deadline := time.Now().Add(time.Minute)
	for {
		b, _ := os.ReadFile(worker.log)
		if strings.Contains(string(b), "does not answer while the worker starts") {
			break
		}
		select {
		case <-worker.done:
			t.Fatalf("the worker exited while the database was down:\n%s", tail(string(b), 3000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not say it waits for the database within 1m:\n%s", tail(string(b), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	coord := f.start("host-c", "run", f.batch)
	if code := coord.wait(t, 3*time.Minute); code != 0 {
		b, _ := os.ReadFile(coord.log)
		t.Fatalf("the coordinator exited %d:\n%s", code, tail(string(b), 6000))
	}
	e := ends(f.events(f.db()))
	if e.done["j1"] != 1 || e.endsAt["j1"] != 1 || len(e.hosts["j1"]) != 1 || e.hosts["j1"][0] != "host-a" {
		t.Errorf("j1: done %d times in %d attempts on %v, want exactly once in one, on host-a", e.done["j1"], e.endsAt["j1"], e.hosts["j1"])
	}
	if n := len(f.api.SessionToolResults("j1")); n != 1 {
		t.Errorf("j1's call was answered %d times, want once", n)
	}
}
