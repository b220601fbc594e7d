package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestSchemaCheck(t *testing.T) {
	for _, tc := range []struct {
		name       string
		have, want int
		river      bool
		level      Level
		detail     string
	}{
		{"not created", 0, 2, false, Warn, "not created yet: the first `nightwatch run` or `nightwatch worker` creates it"},
		{"older", 1, 2, true, Warn, "version 1, this nightwatch's is 2: migrated at the next run"},
		{"newer", 3, 2, true, Fail, "newer than this nightwatch's 2"},
		{"newer without River", 3, 2, false, Fail, "newer than this nightwatch's 2"},
		{"River's tables missing", 2, 2, false, Warn, "River's tables (river_job) are missing"},
		{"current", 2, 2, true, OK, "version 2 (this nightwatch's), River's tables present"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := schemaCheck(tc.have, tc.want, tc.river, "night.yaml")
			if c.ID != clusterSchemaID || c.Level != tc.level || !strings.Contains(c.Detail, tc.detail) {
				t.Fatalf("schemaCheck(%d, %d, %v) = %+v, want %s with %q", tc.have, tc.want, tc.river, c, tc.level, tc.detail)
			}
			if (c.Level != OK) != (c.Fix != "") {
				t.Fatalf("level %s with fix %q", c.Level, c.Fix)
			}
			if tc.level == Fail && !strings.Contains(c.Fix, "upgrade nightwatch on this host") {
				t.Fatalf("fix %q", c.Fix)
			}
		})
	}
}

func TestWorkerChecks(t *testing.T) {
	mac := clusterdb.Worker{ID: "w-mac", Host: "mac-1", Labels: []string{"mac"}, MaxParallel: 2}
	linux := clusterdb.Worker{ID: "w-linux", Host: "linux-1", MaxParallel: 4}
	stopped := clusterdb.Worker{ID: "w-old", Host: "linux-1", MaxParallel: 1, StoppedAt: time.Now()}
	freshAge := clusterdb.HeartbeatInterval
	staleAge := 3*clusterdb.StaleAfter + 500*time.Millisecond
	type want struct {
		level  Level
		detail string
	}
	for _, tc := range []struct {
		name string
		ws   []clusterdb.Worker
		ages []time.Duration
		want []want
	}{
		{"none", nil, nil, []want{{Warn, "no worker has started: run `nightwatch worker night.yaml` on each host"}}},
		{"fresh", []clusterdb.Worker{mac}, []time.Duration{freshAge}, []want{{OK, "worker w-mac on host mac-1 runs: labels [mac-1, mac], max_parallel 2, heard from 2s ago"}}},
		{"just under three intervals is fresh", []clusterdb.Worker{mac}, []time.Duration{clusterdb.StaleAfter - time.Millisecond}, []want{{OK, "worker w-mac on host mac-1 runs"}}},
		{"three intervals is stale", []clusterdb.Worker{mac}, []time.Duration{clusterdb.StaleAfter}, []want{
			{Warn, "worker w-mac on host mac-1 last heard from 6s ago: it died or lost the database"},
			{Warn, "no worker runs now"}}},
		{"fresh and stale", []clusterdb.Worker{mac, linux}, []time.Duration{freshAge, staleAge}, []want{
			{OK, "worker w-mac on host mac-1 runs"},
			{Warn, "worker w-linux on host linux-1 last heard from 18.5s ago: it died or lost the database"}}},
		{"stopped cleanly, long ago", []clusterdb.Worker{mac, stopped}, []time.Duration{freshAge, time.Hour}, []want{
			{OK, "worker w-mac on host mac-1 runs"},
			{OK, "1 stopped cleanly: w-old on linux-1"}}},
		{"only stopped", []clusterdb.Worker{stopped}, []time.Duration{time.Hour}, []want{
			{OK, "1 stopped cleanly"}, {Warn, "no worker runs now"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := workerChecks(tc.ws, tc.ages, "night.yaml", 2, 50*time.Minute)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d checks, want %d:\n%s", len(got), len(tc.want), dump(got))
			}
			for i, w := range tc.want {
				c := got[i]
				if c.ID != clusterWorkersID || c.Level != w.level || !strings.Contains(c.Detail, w.detail) {
					t.Errorf("check %d = %s %q, want %s %q", i, c.Level, c.Detail, w.level, w.detail)
				}
				if (c.Level != OK) != (c.Fix != "") {
					t.Errorf("check %d: level %s with fix %q", i, c.Level, c.Fix)
				}
			}
		})
	}
}

// doctor's fix for a worker that died starts it again as it ran: its host
// name, every --label, and its --max-parallel when not the batch's; the
// same command in the fix of a pinned job whose only carriers are gone.
func TestRestartCommandKeepsTheWorkersFlags(t *testing.T) {
	stale := 3 * clusterdb.StaleAfter
	for _, tc := range []struct {
		name string
		w    clusterdb.Worker
		want string
	}{
		{"labels", clusterdb.Worker{ID: "a", Host: "mini", Labels: []string{"mini", "mac", "arm"}, MaxParallel: 2},
			"start it again on mini: `nightwatch worker night.yaml --host mini --label mac --label arm`"},
		{"its own max-parallel", clusterdb.Worker{ID: "b", Host: "box", Labels: []string{"box"}, MaxParallel: 5},
			"start it again on box: `nightwatch worker night.yaml --host box --max-parallel 5`"},
		{"quoted", clusterdb.Worker{ID: "c", Host: "Jo's Mac", Labels: []string{"Jo's Mac", "gpu 1"}, MaxParallel: 2},
			`start it again on Jo's Mac: ` + "`" + `nightwatch worker night.yaml --host 'Jo'\''s Mac' --label 'gpu 1'` + "`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := workerChecks([]clusterdb.Worker{tc.w}, []time.Duration{stale}, "night.yaml", 2, 0)
			if len(got) == 0 || got[0].Level != Warn || got[0].Fix != tc.want {
				t.Fatalf("got:\n%s\nwant the fix %q", dump(got), tc.want)
			}
		})
	}
	b := &jobs.Batch{File: "night.yaml", MaxParallel: 2, Jobs: []*jobs.Job{{Name: "ios", Hosts: []string{"mac"}, Line: 3}}}
	w := clusterdb.Worker{ID: "a", Host: "mini", Labels: []string{"mini", "mac"}, MaxParallel: 2}
	got := pinChecks(b, []clusterdb.Worker{w}, []time.Duration{stale})
	if want := "start `nightwatch worker night.yaml --host mini --label mac` on mini"; len(got) != 1 || got[0].Fix != want {
		t.Fatalf("got:\n%s\nwant the fix %q", dump(got), want)
	}
}

func TestPinChecks(t *testing.T) {
	b := &jobs.Batch{File: "/n/night.yaml", Jobs: []*jobs.Job{
		{Name: "build-ios", Hosts: []string{"mac"}, Line: 12},
		{Name: "train", Hosts: []string{"gpu", "cuda"}, Line: 14},
		{Name: "anywhere", Line: 16},
	}}
	mac := clusterdb.Worker{ID: "a", Host: "mini", Labels: []string{"mac"}}
	gpuByName := clusterdb.Worker{ID: "b", Host: "gpu"} // a host's name is a label too
	gpuStopped := clusterdb.Worker{ID: "c", Host: "box", Labels: []string{"cuda"}, StoppedAt: time.Now()}
	live, stale := time.Second, time.Minute
	for _, tc := range []struct {
		name string
		ws   []clusterdb.Worker
		ages []time.Duration
		want []string // the warnings' details, in job order; none: one ok
	}{
		{"no worker", nil, nil, []string{
			"/n/night.yaml:12: job build-ios is pinned to hosts [mac]: no worker the cluster knows carries one of those labels",
			"/n/night.yaml:14: job train is pinned to hosts [gpu, cuda]: no worker the cluster knows carries"}},
		{"label and host name", []clusterdb.Worker{mac, gpuByName}, []time.Duration{live, live}, nil},
		{"a carrier that is not running", []clusterdb.Worker{mac, gpuByName}, []time.Duration{live, stale}, []string{
			"job train is pinned to hosts [gpu, cuda]: only workers that are not running carry them (on gpu)"}},
		{"a carrier that stopped cleanly", []clusterdb.Worker{mac, gpuStopped}, []time.Duration{live, live}, []string{
			"job train is pinned to hosts [gpu, cuda]: only workers that are not running carry them (on box)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pinChecks(b, tc.ws, tc.ages)
			if len(tc.want) == 0 {
				if len(got) != 1 || got[0].Level != OK || !strings.Contains(got[0].Detail, "each of the 2 pinned jobs") {
					t.Fatalf("got:\n%s\nwant one ok", dump(got))
				}
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d checks, want %d:\n%s", len(got), len(tc.want), dump(got))
			}
			for i, w := range tc.want {
				if got[i].ID != clusterPinsID || got[i].Level != Warn || !strings.Contains(got[i].Detail, w) || got[i].Fix == "" {
					t.Errorf("check %d = %+v, want a warning with %q and a fix", i, got[i], w)
				}
			}
		})
	}
	if got := pinChecks(&jobs.Batch{Jobs: []*jobs.Job{{Name: "x"}}}, nil, nil); len(got) != 0 {
		t.Errorf("no pinned job: %+v, want no check", got)
	}
}

// clusterChildDSN hands the Postgres of TestClusterChecksAgainstPostgres
// to the process that runs its checks.
const clusterChildDSN = "NIGHTWATCH_TEST_DOCTOR_CLUSTER_DSN"

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// clusterChecks are the cluster-* checks of a doctor run.
func clusterChecks(checks []Check) []Check {
	var out []Check
	for _, c := range checks {
		if strings.HasPrefix(c.ID, "cluster-") {
			out = append(out, c)
		}
	}
	return out
}

// The cluster checks end to end, against a real Postgres: a refused
// connection (no secret in any output), a schema not created yet, then a
// migrated one with a fresh and a stale worker and a job pinned to a
// label no worker carries.
//
// The checks remember the connection string's parts as secrets of the
// whole process (internal/redact), so they run in a test process of their
// own: no other test of the package sees its text redacted by them.
func TestClusterChecksAgainstPostgres(t *testing.T) {
	dsn, child := os.LookupEnv(clusterChildDSN)
	if !child {
		dsn = pgtest.New(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestClusterChecksAgainstPostgres$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), clusterChildDSN+"="+dsn)
		out, err := cmd.CombinedOutput()
		t.Logf("the test in its own process:\n%s", out)
		if err != nil {
			t.Fatalf("the test in its own process: %v", err)
		}
		for _, sub := range []string{"unset", "refused", "unparsable", "not_migrated", "migrated_with_workers"} {
			if !strings.Contains(string(out), "--- PASS: TestClusterChecksAgainstPostgres/"+sub) {
				t.Fatalf("subtest %s did not pass in the test's own process", sub)
			}
		}
		return
	}
	s := newSandbox(t)
	s.batch = filepath.Join(s.home, "night.yaml")
	write(t, s.batch, fmt.Sprintf(`version: 1
name: clusternight
state_dir: %s
agent: {command: %s}
env_file: ./cluster.env
cluster:
  database_env: NW_TEST_DATABASE
jobs:
  - {name: build-ios, prompt: "hi", hosts: [mac]}
  - {name: train, prompt: "hi", hosts: [gpu]}
  - {name: anywhere, prompt: "hi"}
`, filepath.Join(s.home, "state"), s.claude))
	envFile := filepath.Join(s.home, "cluster.env")
	setDSN := func(v string) { write(t, envFile, "NW_TEST_DATABASE="+v+"\n") }
	output := func(checks []Check) string {
		var buf bytes.Buffer
		Print(&buf, checks)
		js, _ := json.Marshal(checks)
		return buf.String() + string(js)
	}

	t.Run("unset", func(t *testing.T) {
		write(t, envFile, "OTHER=1\n")
		cs := clusterChecks(s.run())
		c := mustFind(t, cs, clusterConnID, Fail, s.batch+":6", "NW_TEST_DATABASE", "env_file "+envFile)
		if len(cs) != 1 || !strings.Contains(c.Fix, envFile) {
			t.Fatalf("want only the connection failure, its fix naming %s:\n%s", envFile, dump(cs))
		}
	})

	t.Run("refused", func(t *testing.T) {
		const password = "Tr0ub4dor-cluster-pw"
		bad := fmt.Sprintf("postgres://nw_doctor:%s@127.0.0.1:%d/night?sslmode=disable&connect_timeout=3", password, closedPort(t))
		setDSN(bad)
		checks := s.run()
		cs := clusterChecks(checks)
		mustFind(t, cs, clusterConnID, Fail, "NW_TEST_DATABASE", "from env_file "+envFile, "does not answer", "127.0.0.1")
		if len(cs) != 1 {
			t.Fatalf("a database that does not answer: want only the connection failure:\n%s", dump(cs))
		}
		if !Failed(checks) {
			t.Fatal("doctor does not fail")
		}
		if out := output(checks); strings.Contains(out, password) || strings.Contains(out, bad) {
			t.Fatalf("the connection string or its password is in doctor's output:\n%s", out)
		}
	})

	t.Run("unparsable", func(t *testing.T) {
		const password = "Unparsable-pw-77"
		setDSN("postgres://nw_doctor:" + password + "@127.0.0.1:port/night")
		checks := s.run()
		cs := clusterChecks(checks)
		mustFind(t, cs, clusterConnID, Fail, "NW_TEST_DATABASE", "is not a Postgres connection string")
		if len(cs) != 1 || strings.Contains(output(checks), password) {
			t.Fatalf("want only the connection failure, without the password:\n%s", dump(cs))
		}
	})

	setDSN(dsn)
	t.Run("not migrated", func(t *testing.T) {
		cs := clusterChecks(s.run())
		mustFind(t, cs, clusterConnID, OK, "NW_TEST_DATABASE (from env_file "+envFile+") reaches the cluster's Postgres at 127.0.0.1:")
		mustFind(t, cs, clusterSchemaID, Warn, "not created yet")
		mustFind(t, cs, clusterWorkersID, Warn, "no worker has started: run `nightwatch worker "+s.batch+"` on each host")
		if strings.Contains(output(cs), dsn) {
			t.Fatalf("the connection string is in doctor's output:\n%s", dump(cs))
		}
	})

	ctx := context.Background()
	db, err := clusterdb.Open(ctx, dsn, "clusternight")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, w := range []clusterdb.Worker{
		{ID: "w-mac", Host: "mini", Labels: []string{"mac"}, PID: 11, MaxParallel: 2},
		{ID: "w-dead", Host: "linux-7", Labels: []string{}, PID: 12, MaxParallel: 4}, // Heartbeat refuses nil labels
	} {
		if err := db.Heartbeat(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, "UPDATE nightwatch_workers SET heartbeat_at = now() - interval '95 seconds' WHERE worker_id = 'w-dead'"); err != nil {
		t.Fatal(err)
	}
	t.Run("migrated with workers", func(t *testing.T) {
		cs := clusterChecks(s.run())
		mustFind(t, cs, clusterSchemaID, OK, fmt.Sprintf("version %d", clusterdb.Version()), "River's tables present")
		mustFind(t, cs, clusterWorkersID, OK, "worker w-mac on host mini runs: labels [mini, mac], max_parallel 2")
		// The heartbeat is 95 s old when written; how much older when
		// doctor reads it depends on the machine (the words for an age are
		// the table test's above).
		mustFind(t, cs, clusterWorkersID, Warn, "worker w-dead on host linux-7 last heard from ", " ago: it died or lost the database")
		mustFind(t, cs, clusterPinsID, Warn, s.batch+":10: job train is pinned to hosts [gpu]: no worker the cluster knows carries")
		if n := len(find(cs, clusterPinsID, Warn)); n != 1 {
			t.Fatalf("%d pin warnings, want 1 (build-ios has a mac worker):\n%s", n, dump(cs))
		}
		if len(find(cs, clusterWorkersID, Warn, "no worker runs now")) != 0 {
			t.Fatalf("a worker runs:\n%s", dump(cs))
		}
	})
}
