//go:build !windows

package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/cluster/queue"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/supervisor"
)

// BenchmarkClusterOverheadPerJob: what a cluster adds to each job over the
// single-host night, the agent excluded; the database statements a job
// costs (every statement of the coordinator and the worker, River's
// included, counted by clusterdb.CountStatements: a night of 20 jobs less
// one of 10, per job), and how long an attempt waits from its enqueue to
// its worker's claim (median, by the database's clock). The same 20 jobs on one stdio
// server, max_parallel 1, an agent that answers at once, run twice in the
// same iteration: on one host (supervisor.RunNight), then through the
// cluster (a coordinator and one worker in this process, on a loopback
// Postgres). Per job: (night wall time - preflight - agent time) / 20.
//
//	go test -run '^$' -bench ClusterOverheadPerJob -benchtime 3x ./cluster/
func BenchmarkClusterOverheadPerJob(b *testing.B) {
	const n = 20
	server := testkit.BuildTestServer(b)
	dsn := pgtest.New(b)
	for b.Loop() {
		local := nightOverhead(b, n, server, "", "")
		// A night of one job creates the schema; then the same night
		// with half the jobs: the difference is what a job costs, without
		// what a night costs once (River's start, the workers'
		// registration).
		name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
		nightOverhead(b, 1, server, dsn, name+"-schema")
		counter, uninstall := clusterdb.CountStatements()
		nightOverhead(b, n/2, server, dsn, name+"-half")
		half, byHalf := counter.N(), counter.By()
		counter.Reset()
		clustered := nightOverhead(b, n, server, dsn, name)
		full, by := counter.N(), counter.By()
		uninstall()
		b.ReportMetric(float64(local.Microseconds())/1000, "local-ms/job")
		b.ReportMetric(float64(clustered.Microseconds())/1000, "cluster-ms/job")
		b.ReportMetric(float64(clustered)/float64(local), "cluster/local")
		b.ReportMetric(float64(full-half)/float64(n-n/2), "statements/job")
		b.ReportMetric(float64(full)/n, "statements/job-with-start")
		b.ReportMetric(float64(queuedToStarted(b, dsn, name).Microseconds())/1000, "queued-to-started-ms")
		if os.Getenv("NIGHTWATCH_BENCH_STATEMENTS") != "" {
			// Per job, by statement: the 20-job night less the 10-job one.
			keys := make([]string, 0, len(by))
			for k := range by {
				by[k] -= byHalf[k]
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool { return by[keys[i]] > by[keys[j]] })
			for _, k := range keys {
				if by[k] != 0 {
					b.Logf("%5.1f %s", float64(by[k])/float64(n-n/2), k)
				}
			}
		}
	}
}

// queuedToStarted is the median time from an attempt's enqueue to its
// worker's claim, by the database's clock, over the batch's attempts.
func queuedToStarted(b *testing.B, dsn, batch string) time.Duration {
	ctx := context.Background()
	db, err := clusterdb.Open(ctx, dsn, batch)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var ms float64
	if err := db.Pool.QueryRow(ctx, `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM started_at - queued_at))*1000
		FROM nightwatch_attempts WHERE batch = $1 AND started_at IS NOT NULL`, batch).Scan(&ms); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

func nightOverhead(b *testing.B, n int, server, dsn, name string) time.Duration {
	dir := b.TempDir()
	agent := filepath.Join(dir, "fake-claude")
	script := "#!/bin/sh\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"num_turns\":1,\"total_cost_usd\":0,\"session_id\":\"s\"}'\n"
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil {
		b.Fatal(err)
	}
	if name == "" {
		name = "overhead"
	}
	var yaml strings.Builder
	fmt.Fprintf(&yaml, "version: 1\nname: %s\nstate_dir: ./state\nkeep_awake: false\nagent: {command: %s}\n", name, q(agent))
	if dsn != "" {
		yaml.WriteString("cluster: {database_env: NW_PG}\n")
	}
	fmt.Fprintf(&yaml, "servers:\n  notes: {command: %s}\njobs:\n", q(server))
	for i := 0; i < n; i++ {
		fmt.Fprintf(&yaml, "  - {name: j%d, servers: [notes], prompt: hello}\n", i)
	}
	path := filepath.Join(dir, "batch.yaml")
	if err := os.WriteFile(path, []byte(yaml.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "NW_PG="+dsn)
	batch, err := jobs.Load(path, func(k string) (string, bool) {
		if k == "NW_PG" {
			return dsn, true
		}
		return os.LookupEnv(k)
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	workerDone := make(chan error, 1)
	if dsn != "" {
		go func() {
			workerDone <- queue.Serve(ctx, batch, queue.ServeOptions{Binary: "/bin/true", Env: env, Host: "bench-worker", Log: zerolog.Nop()})
		}()
	}
	start := time.Now()
	s, err := supervisor.RunNight(ctx, batch, supervisor.NightOptions{Binary: "/bin/true", Env: env})
	wall := time.Since(start)
	if err != nil || s.Done != n {
		b.Fatalf("night: %v %+v", err, s)
	}
	if dsn != "" {
		cancel()
		if err := <-workerDone; err != nil && ctx.Err() == nil {
			b.Fatal(err)
		}
	}
	var agentTime time.Duration
	var firstStart time.Time
	for _, j := range s.Jobs {
		if j.Outcome == nil {
			b.Fatalf("job %s has no outcome", j.Name)
		}
		agentTime += j.Outcome.Ended.Sub(j.Outcome.Started)
		if firstStart.IsZero() || j.Outcome.Started.Before(firstStart) {
			firstStart = j.Outcome.Started
		}
	}
	return (wall - firstStart.Sub(start) - agentTime) / time.Duration(n)
}
