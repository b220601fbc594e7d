//go:build !windows

package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/cluster/queue"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/supervisor"
)

// BenchmarkClusterOverheadPerJob: what a cluster adds to each job over the
// single-host night, the agent excluded. The same 20 jobs on one stdio
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
		clustered := nightOverhead(b, n, server, dsn, fmt.Sprintf("bench-%d", time.Now().UnixNano()))
		b.ReportMetric(float64(local.Microseconds())/1000, "local-ms/job")
		b.ReportMetric(float64(clustered.Microseconds())/1000, "cluster-ms/job")
		b.ReportMetric(float64(clustered)/float64(local), "cluster/local")
	}
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
