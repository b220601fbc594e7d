package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// fakeAgent is a stand-in for claude that answers at once with a success
// result, so that what is measured is the supervisor, not a model.
func fakeAgent(b *testing.B, dir string) string {
	path := filepath.Join(dir, "fake-claude")
	script := "#!/bin/sh\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"num_turns\":1,\"total_cost_usd\":0,\"session_id\":\"s\"}'\n"
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		b.Fatal(err)
	}
	return path
}

func loadBench(b *testing.B, dir, yaml string) *jobs.Batch {
	path := filepath.Join(dir, "batch.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		b.Fatal(err)
	}
	batch, err := jobs.Load(path, os.LookupEnv)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkNightOverheadPerJob: what the supervisor adds to each job,
// the agent excluded: readiness and health checks, the session's settings
// and MCP config files, the journal lines (fsynced), reading the stream,
// maintenance. 20 jobs on one stdio server, max_parallel 1, an agent that
// answers at once; per job: (night wall time - preflight - agent process
// time) / 20.
//
//	go test -run '^$' -bench NightOverheadPerJob -benchtime 5x ./supervisor/
func BenchmarkNightOverheadPerJob(b *testing.B) {
	const n = 20
	server := testkit.BuildTestServer(b)
	for b.Loop() {
		dir := b.TempDir()
		var yaml strings.Builder
		fmt.Fprintf(&yaml, "version: 1\nname: overhead\nstate_dir: ./state\nagent: {command: %s}\n", jsonString(fakeAgent(b, dir)))
		fmt.Fprintf(&yaml, "servers:\n  notes: {command: %s}\njobs:\n", jsonString(server))
		for i := 0; i < n; i++ {
			fmt.Fprintf(&yaml, "  - {name: j%d, servers: [notes], prompt: hello}\n", i)
		}
		batch := loadBench(b, dir, yaml.String())
		start := time.Now()
		s, err := RunNight(context.Background(), batch, NightOptions{Binary: "/bin/true", Env: os.Environ()})
		wall := time.Since(start)
		if err != nil || s.Done != n {
			b.Fatalf("night: %v %+v", err, s)
		}
		var agent time.Duration
		var firstStart time.Time
		for _, j := range s.Jobs {
			agent += j.Outcome.Ended.Sub(j.Outcome.Started)
			if firstStart.IsZero() || j.Outcome.Started.Before(firstStart) {
				firstStart = j.Outcome.Started
			}
		}
		preflight := firstStart.Sub(start)
		perJob := (wall - preflight - agent) / n
		b.ReportMetric(float64(perJob.Microseconds())/1000, "overhead-ms/job")
		b.ReportMetric(float64(agent.Microseconds())/1000/n, "agent-ms/job")
		b.ReportMetric(float64(preflight.Microseconds())/1000, "preflight-ms")
	}
}

// BenchmarkRecoveryToStart: a job waits for a server that is down; the
// server comes back at T0 (its control file says healthy again); the job
// starts at T1. T1-T0 is bounded by one maintenance interval (plus a
// probe), whatever the server's backoff.
//
//	go test -run '^$' -bench RecoveryToStart -benchtime 3x ./supervisor/
func BenchmarkRecoveryToStart(b *testing.B) {
	const interval = 2 * time.Second
	server := testkit.BuildTestServer(b)
	for b.Loop() {
		dir := b.TempDir()
		control := filepath.Join(dir, "mode")
		if err := os.WriteFile(control, []byte("exit-at-start"), 0o600); err != nil {
			b.Fatal(err)
		}
		batch := loadBench(b, dir, fmt.Sprintf(`version: 1
name: recovery
state_dir: ./state
agent: {command: %s}
health: {backoff: 5m, max_backoff: 10m}
servers:
  notes: {command: %s, args: ["--control", %s]}
jobs:
  - {name: waits, servers: [notes], prompt: hello}
`, jsonString(fakeAgent(b, dir)), jsonString(server), jsonString(control)))
		backc := make(chan time.Time, 1)
		go func() {
			time.Sleep(3 * time.Second)
			backc <- time.Now()
			_ = os.WriteFile(control, []byte("healthy"), 0o600)
		}()
		s, err := RunNight(context.Background(), batch, NightOptions{Binary: "/bin/true", Env: os.Environ(),
			Maintenance: interval})
		if err != nil || s.Done != 1 {
			b.Fatalf("night: %v %+v", err, s)
		}
		wait := s.Jobs[0].Outcome.Started.Sub(<-backc)
		b.ReportMetric(float64(wait.Milliseconds()), "return-to-start-ms")
		b.ReportMetric(float64(interval.Milliseconds()), "interval-ms")
	}
}

// createCost is the mean time to create (and close) one empty file in a
// new folder beside the night's state, in milliseconds: what an attempt
// pays for each file and folder it makes, which the disk's state decides
// (on ext4 without a journal, as on this VM, every inode allocated first
// steps over the inodes of its group freed in the last minutes: 0.02 ms on
// a fresh journaled ext4, 0.05-0.9 ms in this VM's /tmp). The files are
// left for the benchmark's cleanup: a deletion now would slow the night's
// creations.
func createCost(b *testing.B, dir string) float64 {
	const n = 200
	folder := filepath.Join(dir, "create-cost")
	if err := os.Mkdir(folder, 0o700); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		f, err := os.OpenFile(filepath.Join(folder, fmt.Sprint(i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return float64(time.Since(start).Microseconds()) / 1000 / n
}

// BenchmarkNightVsBareLoop: the night's cost per instant job against a
// bare loop of the same agent, both in one iteration: n jobs without
// servers through RunNight (max_parallel 1), then the same agent run n
// times in a row by a plain loop (exec, read its output, wait), as a
// shell script would. Per job:
// (night wall - bare wall) / n, and the two walls' ratio. Preflight is
// included (no servers: only the API check, replaced here, and the
// journal's first lines). On Unix the CPU time of this process (the
// night, or the loop) is reported too, per job, and its difference:
// steadier than the walls on a loaded machine, but blind to waiting (an
// fsync costs the night its disk's latency, little CPU).
// fs-create-ms/file is what creating one file cost there just before the
// night (createCost): a rough sign of the disk's state, which moves the
// night's overhead more than its code does on a disk that makes a file
// slowly (an instant job's attempt makes four inodes: two folders, the MCP
// config, the stream log; the bare loop none). Set TMPDIR to measure
// elsewhere than /tmp.
// bench/night-vs.sh runs it against an earlier revision, in turn.
//
//	go test -run '^$' -bench NightVsBareLoop -benchtime 1x ./supervisor/
func BenchmarkNightVsBareLoop(b *testing.B) {
	n := 1000
	if s := os.Getenv("NIGHTWATCH_BENCH_JOBS"); s != "" {
		fmt.Sscan(s, &n)
	}
	for b.Loop() {
		dir := b.TempDir()
		agent := fakeAgent(b, dir)
		var yaml strings.Builder
		fmt.Fprintf(&yaml, "version: 1\nname: bare\nstate_dir: ./state\nagent: {command: %s}\njobs:\n", jsonString(agent))
		for i := 0; i < n; i++ {
			fmt.Fprintf(&yaml, "  - {name: j%d, prompt: hello}\n", i)
		}
		batch := loadBench(b, dir, yaml.String())
		b.ReportMetric(createCost(b, dir), "fs-create-ms/file")
		cpu0, _, cpuOK := processCPU()
		start := time.Now()
		s, err := RunNight(context.Background(), batch, NightOptions{Binary: "/bin/true", Env: os.Environ(),
			CheckAPI: func(context.Context) (bool, string) { return true, "" }})
		night := time.Since(start)
		cpu1, _, _ := processCPU()
		if err != nil || s.Done != n {
			b.Fatalf("night: %v done %d of %d", err, s.Done, n)
		}
		start = time.Now()
		for i := 0; i < n; i++ {
			cmd := exec.Command(agent, "-p", "hello", "--output-format", "stream-json", "--verbose")
			cmd.Dir = dir
			if out, err := cmd.Output(); err != nil || len(out) == 0 {
				b.Fatalf("bare agent: %v", err)
			}
		}
		bare := time.Since(start)
		cpu2, _, _ := processCPU()
		if cpuOK {
			perJob := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
			b.ReportMetric(perJob(cpu1-cpu0), "night-cpu-ms/job")
			b.ReportMetric(perJob(cpu2-cpu1), "bare-cpu-ms/job")
			b.ReportMetric(perJob((cpu1-cpu0)-(cpu2-cpu1)), "overhead-cpu-ms/job")
		}
		b.ReportMetric(float64((night-bare).Microseconds())/1000/float64(n), "overhead-ms/job")
		b.ReportMetric(float64(bare.Microseconds())/1000/float64(n), "bare-ms/job")
		b.ReportMetric(float64(night)/float64(bare), "night/bare")
	}
}
