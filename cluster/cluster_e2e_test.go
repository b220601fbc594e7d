//go:build !windows

package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// These nights run over a real Postgres (pgtest) with real processes:
// `nightwatch run` as the coordinator and `nightwatch worker` as the
// hosts (each its own state folder and NIGHTWATCH_HOST), the real Claude
// Code CLI of every supported version against the fake Messages API, and
// real MCP servers.

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type clusterFixture struct {
	t      *testing.T
	dir    string
	dsn    string
	api    *fakeapi.Server
	bin    string
	batch  string
	env    []string
	server string // the test MCP server's binary
	web    string // its HTTP URL
}

func newClusterFixture(t *testing.T, version string) *clusterFixture {
	f := &clusterFixture{t: t, dir: t.TempDir(), dsn: pgtest.New(t), api: fakeapi.Start(t),
		bin: testkit.BuildNightwatch(t), server: testkit.BuildTestServer(t)}
	home := filepath.Join(f.dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	f.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"ANTHROPIC_BASE_URL=" + f.api.URL(), "ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "MCP_CONNECT_TIMEOUT_MS=30000",
		// The connection string reaches the processes only in their
		// environment, as an operator would set it.
		"NW_PG=" + f.dsn}
	f.web, _ = testkit.StartHTTPTestServer(t, f.server)
	_ = version
	return f
}

// writeBatch writes the batch file every host reads (each its own
// state_dir by NW_STATE); jobs is the YAML list of jobs.
func (f *clusterFixture) writeBatch(version, jobs string) {
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
  web: {type: http, url: %s}
  notes: {command: %s}
  fragile: {command: %s}
jobs:
%s`, q(testkit.ClaudeBinOf(f.t, version)), q(f.web), q(f.server), q(f.server), jobs)
	if err := os.WriteFile(f.batch, []byte(yaml), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

func script(session string, calls ...string) string {
	p := "SESSION " + session
	for _, c := range calls {
		p += "\nCALL " + c
	}
	return q(p)
}

// process is one nightwatch process of the cluster.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// start runs `nightwatch args…` as host, with its own state folder.
func (f *clusterFixture) start(host string, args ...string) *process {
	f.t.Helper()
	return f.startPrepared(proc.Prepare, host, args...)
}

// startPrepared is start with the group rule prepare.
func (f *clusterFixture) startPrepared(prepare func(*exec.Cmd, time.Duration), host string, args ...string) *process {
	f.t.Helper()
	state := filepath.Join(f.dir, "state-"+host)
	ctx, cancel := context.WithCancel(context.Background())
	if args[0] == "run" && !slices.Contains(args, "--retry-pause") {
		// A retry's pause is real waiting; the tests' retries need none.
		args = append(append([]string{}, args...), "--retry-pause", "1s")
	}
	cmd := exec.CommandContext(ctx, f.bin, args...)
	cmd.Env = append(append([]string{}, f.env...), "NW_STATE="+state, "NIGHTWATCH_HOST="+host)
	prepare(cmd, 10*time.Second)
	p := &process{name: host, cmd: cmd, log: filepath.Join(f.dir, host+"-"+args[0]+".log"), done: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		f.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := proc.Start(cmd); err != nil {
		f.t.Fatal(err)
	}
	go func() { p.err = proc.Wait(cmd); out.Close(); close(p.done) }()
	f.t.Cleanup(func() {
		cancel() // SIGTERM to the group, then SIGKILL
		<-p.done
		if f.t.Failed() {
			b, _ := os.ReadFile(p.log)
			f.t.Logf("--- %s %s:\n%s", host, args[0], tail(string(b), 6000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// wait waits for p to exit and returns its exit code.
func (p *process) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		b, _ := os.ReadFile(p.log)
		t.Fatalf("%s did not end within %s:\n%s", p.name, within, tail(string(b), 6000))
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%s: %v", p.name, p.err)
	}
	return 0
}

// crash is SIGKILL to the nightwatch process alone, not its group: what
// the kernel does to a process that dies. Its sessions die with it
// (proc.DieWithParent), not by this test.
func (p *process) crash(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

func (f *clusterFixture) db() *clusterdb.DB {
	f.t.Helper()
	db, err := clusterdb.Open(context.Background(), f.dsn, "cluster-night")
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(db.Close)
	return db
}

// events are the shared journal of the newest run.
func (f *clusterFixture) events(db *clusterdb.DB) []journal.Event {
	f.t.Helper()
	ctx := context.Background()
	run, _, err := db.LatestRun(ctx)
	if err != nil || run == "" {
		f.t.Fatalf("no run in the shared journal (%v)", err)
	}
	evs, err := db.RunEvents(ctx, run)
	if err != nil {
		f.t.Fatal(err)
	}
	return evs
}

// waitRunning waits until attempt of job runs on some worker, and
// returns that worker's host and the session's process group.
func (f *clusterFixture) waitRunning(db *clusterdb.DB, job string, attempt int, within time.Duration) (string, int) {
	f.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		var host string
		var pgid int
		err := db.Pool.QueryRow(context.Background(), `SELECT host, pgid FROM nightwatch_attempts
			WHERE job = $1 AND attempt = $2 AND state = 'running' AND pgid IS NOT NULL`, job, attempt).Scan(&host, &pgid)
		if err == nil {
			return host, pgid
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.t.Fatalf("attempt %d of %s did not start within %s", attempt, job, within)
	return "", 0
}

type jobEnd struct {
	done, endsAt map[string]int
	hosts        map[string][]string
}

// ends counts, per job, its done job-finished lines and the hosts of its
// attempts' ends.
func ends(evs []journal.Event) jobEnd {
	e := jobEnd{done: map[string]int{}, endsAt: map[string]int{}, hosts: map[string][]string{}}
	for _, ev := range evs {
		switch ev.Type {
		case journal.JobFinished, journal.JobRetried:
			if ev.Type == journal.JobFinished && ev.Status == journal.Done {
				e.done[ev.Job]++
			}
			e.endsAt[ev.Job]++
			e.hosts[ev.Job] = append(e.hosts[ev.Job], ev.Host)
		}
	}
	return e
}

// TestClusterNightTwoWorkers: one coordinator, two workers on two "hosts".
// Every job is done exactly once; a job pinned to a label runs on the
// worker that carries it; the journal says which host ran what; the
// sessions never see the connection string.
func TestClusterNightTwoWorkers(t *testing.T) {
	t.Parallel()
	testkit.ForEachClaude(t, testClusterNightTwoWorkers)
}

func testClusterNightTwoWorkers(t *testing.T, version string) {
	f := newClusterFixture(t, version)
	f.writeBatch(version, fmt.Sprintf(`  - {name: on-a, servers: [web], allowed_tools: [mcp__web], hosts: [mac], prompt: %s}
  - {name: on-b, servers: [web], allowed_tools: [mcp__web], hosts: [linux], prompt: %s}
  - {name: any-1, servers: [web], allowed_tools: [mcp__web], prompt: %s}
  - {name: any-2, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
  - {name: after, servers: [web], allowed_tools: [mcp__web], needs: [on-a, on-b], prompt: %s}
  - {name: breaks, servers: [fragile], allowed_tools: [mcp__fragile], hosts: [linux], on_unhealthy: skip, prompt: %s}
`, script("on-a", `mcp__web__slow {"ms":1500}`), script("on-b", `mcp__web__slow {"ms":1500}`),
		script("any-1", `mcp__web__slow {"ms":1000}`), script("any-2", `mcp__notes__env {"name":"NW_PG"}`),
		script("after", `mcp__web__echo {"message":"after"}`), script("breaks", `mcp__fragile__die {}`)))

	f.start("host-a", "worker", f.batch, "--label", "mac")
	f.start("host-b", "worker", f.batch, "--label", "linux")
	coord := f.start("host-c", "run", f.batch)
	// 1: breaks is skipped, its only call lost with its server; every
	// other job is done.
	if code := coord.wait(t, 4*time.Minute); code != 1 {
		b, _ := os.ReadFile(coord.log)
		t.Fatalf("the coordinator exited %d, want 1 (one job skipped):\n%s", code, tail(string(b), 6000))
	}
	db := f.db()
	evs := f.events(db)
	e := ends(evs)
	for _, j := range []string{"on-a", "on-b", "any-1", "any-2", "after"} {
		if e.done[j] != 1 || e.endsAt[j] != 1 {
			t.Errorf("job %s: done %d times in %d attempts, want exactly once in one", j, e.done[j], e.endsAt[j])
		}
	}
	// breaks' only call died with its server on host-b: never done (issue
	// 20), and with on_unhealthy: skip it is skipped at once, saying why.
	var breaksSkipped bool
	for _, ev := range evs {
		if ev.Job == "breaks" && ev.Type == journal.JobSkipped && ev.Host == "host-b" &&
			strings.HasPrefix(ev.Reason, "call to mcp__fragile__die lost with its server fragile: ") {
			breaksSkipped = true
		}
	}
	if e.done["breaks"] != 0 || !breaksSkipped {
		t.Errorf("breaks: done %d times, skipped for its lost call %v; want skipped, never done", e.done["breaks"], breaksSkipped)
	}
	if h := e.hosts["on-a"]; len(h) != 1 || h[0] != "host-a" {
		t.Errorf("on-a (pinned to mac) ended on %v, want host-a", h)
	}
	if h := e.hosts["on-b"]; len(h) != 1 || h[0] != "host-b" {
		t.Errorf("on-b (pinned to linux) ended on %v, want host-b", h)
	}
	// The server that died under host-b's session: host-b's hook saw it,
	// and the coordinator's journal says so, with the host.
	var sawOutage bool
	for _, ev := range evs {
		if ev.Type == journal.ServerState && ev.Server == "fragile" && ev.Status == journal.Unhealthy && ev.Host == "host-b" {
			sawOutage = true
		}
	}
	if !sawOutage {
		t.Errorf("no server-state line says host-b's hook saw fragile go down")
	}
	// The workers serve their sessions' hook on a CLI that blocks when it
	// cannot reach it (2.1.332), and keep the command hook otherwise: the
	// outage above was seen by the one each host chose.
	want := "the sessions get the command hook"
	if clirange.Compare(version, served.Since) >= 0 {
		want = "the sessions' hook is served over loopback http"
	}
	for _, host := range []string{"host-a", "host-b"} {
		if b, _ := os.ReadFile(filepath.Join(f.dir, host+"-worker.log")); !strings.Contains(string(b), want) {
			t.Errorf("%s's worker log does not say %q:\n%s", host, want, tail(string(b), 3000))
		}
	}
	if evs[0].Type != journal.RunStarted || evs[0].Host != "host-c" {
		t.Errorf("the run-started line %+v does not name the coordinator's host", evs[0])
	}
	// The coordinator's own journal file has the same lines.
	local, err := journal.Read(statePath(f, "host-c", evs[0].Run))
	if err != nil || len(local) != len(evs) {
		t.Errorf("the coordinator's journal file has %d lines (%v), the shared one %d", len(local), err, len(evs))
	}
	// `nightwatch report` on any host renders the whole night from the
	// shared journal, with the hosts that ran it.
	rep := f.start("host-e", "report", f.batch, "--format", "md")
	if code := rep.wait(t, time.Minute); code != 0 {
		t.Fatalf("report exited %d", code)
	}
	md, _ := os.ReadFile(rep.log)
	for _, want := range []string{"host-a", "host-b", "host-c", "on-a", "breaks"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the report from host-e does not mention %s:\n%s", want, tail(string(md), 3000))
		}
	}
	// The stdio server ran in the session's environment: no NW_PG there.
	envs := f.api.SessionToolResults("any-2")
	if len(envs) != 1 {
		t.Fatalf("any-2's env calls did not reach the server: %+v", envs)
	}
	if !strings.Contains(envs[0].Content, "NW_PG is not set") || strings.Contains(envs[0].Content, "postgres://") {
		t.Errorf("a session's server saw the connection string: %q", envs[0].Content)
	}
	// host-a never ran a job on fragile: what its cache knows of it came
	// from host-b's hook, through the shared health table.
	cache := filepath.Join(f.dir, "state-host-a", "cache.json")
	deadline := time.Now().Add(10 * time.Second) // well within, but CI machines are loaded
	for {
		b, err := os.ReadFile(cache)
		if err == nil && strings.Contains(string(b), `"fragile"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("host-a's cache does not know fragile (%v):\n%s", err, b)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// No worker's log or the journal holds the connection string.
	for _, p := range []string{"host-a-worker.log", "host-b-worker.log", "host-c-run.log"} {
		if b, _ := os.ReadFile(filepath.Join(f.dir, p)); strings.Contains(string(b), f.dsn) {
			t.Errorf("%s holds the connection string", p)
		}
	}
	for _, ev := range evs {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), f.dsn) {
			t.Errorf("the journal holds the connection string: %s", b)
		}
	}
}

func statePath(f *clusterFixture, host, run string) string {
	return filepath.Join(f.dir, "state-"+host, "runs", run+".jsonl")
}

// TestClusterWorkerKilledMidAttempt: the worker running an attempt is
// SIGKILLed mid-call. Its session dies with it; the coordinator finds the
// worker dead (no heartbeat), counts the attempt once, as a crash, and the
// retry runs on the other worker: the job is done once.
func TestClusterWorkerKilledMidAttempt(t *testing.T) {
	t.Parallel()
	testkit.ForEachClaude(t, testClusterWorkerKilledMidAttempt)
}

func testClusterWorkerKilledMidAttempt(t *testing.T, version string) {
	f := newClusterFixture(t, version)
	f.writeBatch(version, fmt.Sprintf(`  - {name: long, servers: [web], allowed_tools: [mcp__web], prompt: %s}
  - {name: short, servers: [web], allowed_tools: [mcp__web], needs: [long], prompt: %s}
`, script("long", `mcp__web__slow {"ms":6000}`), script("short", `mcp__web__echo {"message":"short"}`)))

	a := f.start("host-a", "worker", f.batch)
	coord := f.start("host-c", "run", f.batch)
	db := f.db()
	host, pgid := f.waitRunning(db, "long", 1, 2*time.Minute)
	if host != "host-a" {
		t.Fatalf("attempt 1 runs on %s, want host-a (the only worker)", host)
	}
	time.Sleep(1500 * time.Millisecond) // inside the slow call
	a.crash(t)
	f.start("host-b", "worker", f.batch)
	// The killed worker's session is gone with it, not left to finish the
	// job a second time.
	deadline := time.Now().Add(15 * time.Second)
	for proc.GroupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if proc.GroupAlive(pgid) && !zombie(pgid) {
		t.Errorf("the dead worker's session (group %d) still runs", pgid)
	}
	if code := coord.wait(t, 4*time.Minute); code != 0 {
		b, _ := os.ReadFile(coord.log)
		t.Fatalf("the coordinator exited %d:\n%s", code, tail(string(b), 6000))
	}
	evs := f.events(db)
	e := ends(evs)
	if e.done["long"] != 1 || e.endsAt["long"] != 2 {
		t.Fatalf("long: done %d times in %d attempts, want once in two (the crash, then the retry)", e.done["long"], e.endsAt["long"])
	}
	if h := e.hosts["long"]; h[1] != "host-b" {
		t.Errorf("long's retry ended on %s, want host-b", h[1])
	}
	var crash journal.Event
	for _, ev := range evs {
		if ev.Type == journal.JobRetried && ev.Job == "long" {
			crash = ev
		}
	}
	if !strings.Contains(crash.Reason, "stopped answering") || crash.Uncounted {
		t.Errorf("the crash is journaled as %+v, want a counted attempt that says the worker stopped answering", crash)
	}
	if e.done["short"] != 1 {
		t.Errorf("short: done %d times, want once", e.done["short"])
	}
}

// zombie: exited, not reaped (nothing reaps orphans in a container).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// TestClusterCoordinatorKilledResumes: while the coordinator runs, a
// second one (another host) is refused; the coordinator is SIGKILLed
// mid-attempt; the attempt goes on on its worker; the next `run` on
// another host resumes the night from the shared journal, adopts the
// attempt (not counted again) and finishes: every job done once.
func TestClusterCoordinatorKilledResumes(t *testing.T) {
	t.Parallel()
	testkit.ForEachClaude(t, testClusterCoordinatorKilledResumes)
}

func testClusterCoordinatorKilledResumes(t *testing.T, version string) {
	f := newClusterFixture(t, version)
	f.writeBatch(version, fmt.Sprintf(`  - {name: long, servers: [web], allowed_tools: [mcp__web], prompt: %s}
  - {name: next, servers: [web], allowed_tools: [mcp__web], needs: [long], prompt: %s}
`, script("long", `mcp__web__slow {"ms":6000}`), script("next", `mcp__web__echo {"message":"next"}`)))

	f.start("host-a", "worker", f.batch)
	first := f.start("host-c", "run", f.batch)
	db := f.db()
	f.waitRunning(db, "long", 1, 2*time.Minute)

	second := f.start("host-d", "run", f.batch)
	if code := second.wait(t, time.Minute); code != 2 {
		t.Fatalf("a second coordinator exited %d, want 2 (refused)", code)
	}
	if b, _ := os.ReadFile(second.log); !strings.Contains(string(b), "nightwatch coordinator of cluster-night on host-c") {
		t.Errorf("the refusal does not name the coordinator that holds the batch (%s, exit %v):\n%s", second.log, second.err, b)
	}

	first.crash(t)
	again := f.start("host-d", "run", f.batch)
	if code := again.wait(t, 4*time.Minute); code != 0 {
		b, _ := os.ReadFile(again.log)
		t.Fatalf("the resumed coordinator exited %d:\n%s", code, tail(string(b), 6000))
	}
	evs := f.events(db)
	e := ends(evs)
	if e.done["long"] != 1 || e.endsAt["long"] != 1 {
		t.Errorf("long: done %d times in %d attempts, want once in one (adopted, not run again)", e.done["long"], e.endsAt["long"])
	}
	if e.done["next"] != 1 {
		t.Errorf("next: done %d times, want once", e.done["next"])
	}
	var resumed bool
	var starts int
	for _, ev := range evs {
		if ev.Type == journal.RunResumed && ev.Host == "host-d" {
			resumed = true
		}
		if ev.Type == journal.JobStarted && ev.Job == "long" {
			starts++
		}
	}
	if !resumed || starts != 1 {
		t.Errorf("resumed by host-d: %v; long started %d times, want once", resumed, starts)
	}
	if n := len(f.api.SessionToolResults("long")); n != 1 {
		t.Errorf("long's slow call was answered %d times, want once", n)
	}
}

// TestClusterResumeRunsOnTheSessionsHost: an attempt stalls after real
// work, so its retry resumes the Claude session; Claude keeps a session on
// the machine that ran it, so the retry runs on that host, not on the
// other idle worker.
func TestClusterResumeRunsOnTheSessionsHost(t *testing.T) {
	t.Parallel()
	testkit.ForEachClaude(t, testClusterResumeRunsOnTheSessionsHost)
}

func testClusterResumeRunsOnTheSessionsHost(t *testing.T, version string) {
	f := newClusterFixture(t, version)
	var jobsYAML strings.Builder
	for _, j := range []string{"stalls-1", "stalls-2"} {
		// The stall must come after the session started (its init and the
		// tool call), even on a loaded machine: then it is an attempt
		// that ended after real work, whose retry resumes the session.
		fmt.Fprintf(&jobsYAML, "  - {name: %s, servers: [web], allowed_tools: [mcp__web], stall_timeout: 25s, retries: 1, prompt: %s}\n",
			j, script(j, `mcp__web__slow {"ms":60000}`))
	}
	f.writeBatch(version, jobsYAML.String())
	f.start("host-a", "worker", f.batch)
	f.start("host-b", "worker", f.batch)
	coord := f.start("host-c", "run", f.batch)
	coord.wait(t, 4*time.Minute) // the jobs may fail: the resumed session may stall again
	evs := f.events(f.db())
	for _, j := range []string{"stalls-1", "stalls-2"} {
		var hosts []string
		var resumed bool
		for _, ev := range evs {
			if ev.Job != j {
				continue
			}
			if ev.Type == journal.JobStarted && ev.Attempt == 2 && ev.Resume != "" {
				resumed = true
			}
			if (ev.Type == journal.JobRetried || ev.Type == journal.JobFinished) && ev.Host != "" {
				hosts = append(hosts, ev.Host)
			}
		}
		if !resumed || len(hosts) != 2 {
			t.Fatalf("%s: attempt 2 resumed %v, ends on %v; want a resumed second attempt and two ends", j, resumed, hosts)
		}
		if hosts[0] != hosts[1] {
			t.Errorf("%s: attempt 1 ran on %s, its resumed retry on %s; want the same host", j, hosts[0], hosts[1])
		}
	}
}
