//go:build linux

package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// Nothing of a session outlives it, and a stop nightwatch caused is never
// evidence about a server (issue 19). The session's stdio server lingers
// after its stdin closes (like server-everything), so only a kill ends it;
// the session's only call is a slow one, in flight when the worker goes.

// writeLifetimeBatch writes a batch whose job "long" makes one slow call
// (ms) to the stdio server "notes". marker is an argument of the server
// that names this test's processes.
func (f *clusterFixture) writeLifetimeBatch(version, marker string, ms int) {
	f.batch = filepath.Join(f.dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: cluster-night
state_dir: ${NW_STATE}
max_parallel: 1
keep_awake: false
cluster: {database_env: NW_PG, rescue_after: 3m}
agent: {command: %s}
defaults: {timeout: 2m, stall_timeout: 90s, retries: 1, on_unhealthy: defer}
health: {ttl: 2m, backoff: 1s, max_backoff: 4s, probe_timeout: 5s, prewarm_timeout: 30s}
servers:
  notes: {command: %s, args: [--mode, linger, --pidfile, %s]}
jobs:
  - {name: long, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
`, q(testkit.ClaudeBinOf(f.t, version)), q(f.server), q(marker),
		script("long", fmt.Sprintf(`mcp__notes__slow {"ms":%d}`, ms)))
	if err := os.WriteFile(f.batch, []byte(yaml), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// startHost is f.start for a worker whose death this test is about: the
// test's clean-up of the process kills its group but not what carries its
// spawn mark (proc.PrepareAllowDaemons), so the sessions the worker leaves
// end only if nightwatch ends them.
func (f *clusterFixture) startHost(host string, args ...string) *process {
	f.t.Helper()
	return f.startPrepared(proc.PrepareAllowDaemons, host, args...)
}

// logHooks has every session's hook log to one file, shown when the test
// fails, and returns its path.
func (f *clusterFixture) logHooks() string {
	path := filepath.Join(f.dir, "hooks.log")
	f.env = append(f.env, "NIGHTWATCH_LOG="+path)
	f.t.Cleanup(func() {
		if f.t.Failed() || os.Getenv("NW_SHOW_HOOK_LOG") != "" {
			b, _ := os.ReadFile(path)
			f.t.Logf("--- the hooks' log:\n%s", tail(string(b), 6000))
		}
	})
	return path
}

// waitCallInFlight waits until the attempt's stream shows the model's call
// of tool: the session is inside its call (the server answers after ms).
func (f *clusterFixture) waitCallInFlight(host, job string, attempt int, tool string, within time.Duration) {
	f.t.Helper()
	pattern := filepath.Join(f.dir, "state-"+host, "runs", "*", job, fmt.Sprintf("attempt-%d", attempt), "stream.jsonl")
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), `"name":"`+tool+`"`) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.t.Fatalf("the call of %s by %s attempt %d did not start within %s", tool, job, attempt, within)
}

// sessionServers are the live processes of the session's process group
// pgid whose command line carries marker: the session's stdio servers (a
// probe of the same server runs in a group of its own).
func sessionServers(pgid int, marker string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), marker) {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid && !zombie(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// stillRunning are the pids of pids that are live processes.
func stillRunning(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestClusterWorkerKilledLeavesNoServer: a worker SIGKILLed while its
// session's stdio server answers a call leaves no server of its sessions
// running (Claude dies by its parent-death signal, the server by
// exec-server's), and no outage recorded anywhere.
func TestClusterWorkerKilledLeavesNoServer(t *testing.T) {
	t.Parallel()
	testkit.ForEachClaude(t, testClusterWorkerKilledLeavesNoServer)
}

func testClusterWorkerKilledLeavesNoServer(t *testing.T, version string) {
	f := newClusterFixture(t, version)
	marker := filepath.Join(f.dir, "notes.pid")
	f.writeLifetimeBatch(version, marker, 60000)
	a := f.startHost("host-a", "worker", f.batch)
	f.start("host-c", "run", f.batch)
	db := f.db()
	host, pgid := f.waitRunning(db, "long", 1, 2*time.Minute)
	if host != "host-a" {
		t.Fatalf("attempt 1 runs on %s, want host-a (the only worker)", host)
	}
	f.waitCallInFlight("host-a", "long", 1, "mcp__notes__slow", time.Minute)
	var servers []int
	deadline := time.Now().Add(10 * time.Second)
	for len(servers) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no stdio server of the session (group %d) carries %s", pgid, marker)
		}
		servers = sessionServers(pgid, marker)
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		for _, pid := range stillRunning(servers) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	a.crash(t)

	deadline = time.Now().Add(10 * time.Second)
	for len(stillRunning(servers)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := stillRunning(servers); len(left) > 0 {
		t.Fatalf("the dead worker's session left its stdio server running (pids %v): the job's work would run twice", left)
	}
	assertNoOutage(t, f, db, "notes", "host-a", "host-c")
}

// TestClusterWorkerStoppedRecordsNoOutage: a worker's SIGTERM stops its
// session mid-call. The call cut short is no evidence about the server: no
// outage in the shared journal, the shared health table or any host's
// cache. The attempt ends stopped and runs again, on the other worker.
func TestClusterWorkerStoppedRecordsNoOutage(t *testing.T) {
	t.Parallel()
	testkit.ForEachClaude(t, testClusterWorkerStoppedRecordsNoOutage)
}

func testClusterWorkerStoppedRecordsNoOutage(t *testing.T, version string) {
	f := newClusterFixture(t, version)
	marker := filepath.Join(f.dir, "notes.pid")
	f.writeLifetimeBatch(version, marker, 5000)
	f.logHooks()
	a := f.start("host-a", "worker", f.batch)
	coord := f.start("host-c", "run", f.batch)
	db := f.db()
	host, _ := f.waitRunning(db, "long", 1, 2*time.Minute)
	if host != "host-a" {
		t.Fatalf("attempt 1 runs on %s, want host-a (the only worker)", host)
	}
	f.waitCallInFlight("host-a", "long", 1, "mcp__notes__slow", time.Minute)
	time.Sleep(500 * time.Millisecond) // the call reaches the server; nothing is measured by it

	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(t, time.Minute); code != 0 {
		t.Errorf("the worker exited %d on SIGTERM, want 0", code)
	}
	f.start("host-b", "worker", f.batch)
	if code := coord.wait(t, 3*time.Minute); code != 0 {
		b, _ := os.ReadFile(coord.log)
		t.Fatalf("the coordinator exited %d:\n%s", code, tail(string(b), 6000))
	}
	// A stopped attempt leaves the job as it was: no end is journaled for
	// it, and the job runs again, on the other worker.
	evs := f.events(db)
	var started1, counted1, done bool
	for _, ev := range evs {
		if ev.Job != "long" {
			continue
		}
		switch {
		case ev.Type == journal.JobStarted && ev.Attempt == 1:
			started1 = true
		case (ev.Type == journal.JobRetried || ev.Type == journal.JobFinished) && ev.Attempt == 1:
			counted1 = true
		case ev.Type == journal.JobFinished && ev.Status == journal.Done && ev.Host == "host-b":
			done = true
		}
	}
	if !started1 || counted1 || !done {
		t.Errorf("long: attempt 1 started %v, its end journaled %v, done on host-b %v; want a started attempt that ended stopped (no end) and a retry done on host-b",
			started1, counted1, done)
	}
	if b, _ := os.ReadFile(a.log); !strings.Contains(string(b), "stopped by the supervisor") {
		t.Errorf("host-a's worker does not say its attempt was stopped:\n%s", tail(string(b), 3000))
	}
	assertNoOutage(t, f, db, "notes", "host-a", "host-b", "host-c")
}

// assertNoOutage: no server-state line calls server unhealthy, the shared
// health table does not hold it unhealthy, and no host's cache does.
func assertNoOutage(t *testing.T, f *clusterFixture, db *clusterdb.DB, server string, hosts ...string) {
	t.Helper()
	run, _, err := db.LatestRun(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	evs, err := db.RunEvents(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == journal.ServerState && ev.Server == server && ev.Status == journal.Unhealthy {
			t.Errorf("the shared journal records an outage of %s that nightwatch caused: %+v", server, ev)
		}
	}
	row, ok, err := db.HealthRowOf(context.Background(), server)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		var e healthcheck.Entry
		if err := json.Unmarshal(row.Entry, &e); err != nil {
			t.Fatalf("the shared health of %s: %v", server, err)
		}
		if e.Status == healthcheck.StatusUnhealthy || e.ConsecutiveFailures > 0 {
			t.Errorf("the shared health table holds %s as %s (%d failures, by %s): %s", server, e.Status, e.ConsecutiveFailures, row.Host, e.LastError)
		}
	}
	for _, h := range hosts {
		b, err := os.ReadFile(filepath.Join(f.dir, "state-"+h, "cache.json"))
		if err != nil {
			continue // a host that never wrote a cache holds no outage
		}
		var c healthcheck.File
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s's cache: %v", h, err)
		}
		if e := c.Servers[server]; e != nil && (e.Status == healthcheck.StatusUnhealthy || e.ConsecutiveFailures > 0) {
			t.Errorf("%s's cache holds %s as %s (%d failures): %s", h, server, e.Status, e.ConsecutiveFailures, e.LastError)
		}
	}
}
