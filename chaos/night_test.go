package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// The chaos night. Short form (CI, default): 12 jobs. Full form: 32 jobs,
// with -chaos.full, NIGHTWATCH_CHAOS_JOBS=N or `go test -tags chaos`.
//
//	go test -race -run TestChaosNight -v ./chaos/
//	go test -race -tags chaos -run TestChaosNight -v -timeout 30m ./chaos/
var chaosFull = flag.Bool("chaos.full", false, "run the full chaos night (32 jobs)")

// fullByTag is set by full_test.go under the chaos build tag.
var fullByTag bool

const (
	shortJobs = 12
	fullJobs  = 32
)

func chaosJobs(t *testing.T) int {
	if v := os.Getenv("NIGHTWATCH_CHAOS_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 8 {
			t.Fatalf("NIGHTWATCH_CHAOS_JOBS=%q: want a number >= 8", v)
		}
		return n
	}
	if *chaosFull || fullByTag {
		return fullJobs
	}
	return shortJobs
}

// TestMain lets the test binary be the baseline's plain hook: the settings
// file of a baseline session runs this binary with CHAOS_PLAIN_HOOK set.
func TestMain(m *testing.M) {
	if servers := os.Getenv("CHAOS_PLAIN_HOOK"); servers != "" {
		os.Exit(PlainHook(os.Stdin, os.Stderr, servers, filepath.Dir(servers)))
	}
	flag.Parse()
	os.Exit(m.Run())
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

// Seeded secrets: API keys in the stdio servers' env, bearer tokens in the
// HTTP servers' headers. None may reach a file under state_dir or the model.
var secrets = map[string]string{
	"ALPHA_API_KEY": "sk-chaos-alpha-7f3a9c1e5b",
	"BETA_API_KEY":  "sk-chaos-beta-2d8e4f6a0c",
	"GAMMA_TOKEN":   "tok-chaos-gamma-91b7c3d5e2",
	"DELTA_TOKEN":   "tok-chaos-delta-4a6c8e0f13",
}

var serverNames = []string{"alpha", "beta", "gamma", "delta"}

type chaosJob struct {
	Name    string
	Servers []string
	Calls   []string // "mcp__s__tool {json}"
	// RunsWithout is set for the job that breaks its server on purpose:
	// its call is lost with the server, so it is done only because it may
	// run without it (on_unhealthy: run).
	RunsWithout bool
}

// buildJobs spreads n jobs over the four servers: each calls 1–3 tools on
// 1–2 servers. The job at index 3 breaks alpha (the stdio crash).
func buildJobs(n int) []chaosJob {
	combos := [][]string{{"alpha"}, {"gamma"}, {"beta", "delta"}, {"alpha", "gamma"},
		{"delta"}, {"beta"}, {"gamma", "delta"}, {"alpha", "beta"}}
	var out []chaosJob
	for i := 0; i < n; i++ {
		j := chaosJob{Name: fmt.Sprintf("j%02d", i), Servers: combos[i%len(combos)]}
		if i == 3 {
			j.Servers = []string{"alpha"}
			j.Calls = []string{`mcp__alpha__break {}`}
			j.RunsWithout = true
			out = append(out, j)
			continue
		}
		calls := 1 + i%3
		for k := 0; k < calls; k++ {
			s := j.Servers[k%len(j.Servers)]
			if k == 0 && i%4 == 1 {
				// A slow call gives the SIGKILLs a session to land in.
				j.Calls = append(j.Calls, fmt.Sprintf(`mcp__%s__slow {"ms":2500}`, s))
				continue
			}
			j.Calls = append(j.Calls, fmt.Sprintf(`mcp__%s__echo {"message":"%s-%d"}`, s, j.Name, k))
		}
		out = append(out, j)
	}
	return out
}

func (j chaosJob) prompt() string {
	p := "SESSION " + j.Name
	for _, c := range j.Calls {
		p += "\nCALL " + c
	}
	return p
}

func (j chaosJob) allowed() []string {
	var out []string
	for _, s := range j.Servers {
		out = append(out, "mcp__"+s)
	}
	return out
}

// world is what both nights share: the servers, their control files, the
// fake API, and the observers.
type world struct {
	t       *testing.T
	dir     string
	api     *fakeapi.Server
	server  string // nwtestserver binary
	modes   map[string]string
	pids    map[string]string
	urls    map[string]string
	healthy map[string]string // the mode word each server returns to
	repair  string

	mu         sync.Mutex
	seen       []time.Time // when each fakeapi tool result was first seen
	returned   map[string][]time.Time
	serverPids map[int]bool
	stop       chan struct{}
	watchDone  chan struct{}
}

func newWorld(t *testing.T, name string) *world {
	w := &world{t: t, dir: filepath.Join(t.TempDir(), name), api: fakeapi.Start(t),
		server: testkit.BuildTestServer(t), modes: map[string]string{}, pids: map[string]string{},
		urls: map[string]string{}, returned: map[string][]time.Time{}, serverPids: map[int]bool{},
		stop: make(chan struct{}), watchDone: make(chan struct{})}
	if err := os.MkdirAll(filepath.Join(w.dir, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	w.healthy = map[string]string{"alpha": "healthy", "beta": "healthy",
		"gamma": "require-header=Authorization:Bearer " + secrets["GAMMA_TOKEN"], "delta": "healthy"}
	for _, s := range serverNames {
		w.modes[s] = filepath.Join(w.dir, s+".mode")
		w.pids[s] = filepath.Join(w.dir, s+".pids")
		w.setMode(s, w.healthy[s])
	}
	w.repair = filepath.Join(w.dir, "reauth.sh")
	// The reconnect of a broken server: re-auth / repair = write healthy.
	if err := os.WriteFile(w.repair, []byte("#!/bin/sh\necho healthy > \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"gamma", "delta"} {
		w.urls[s] = w.startHTTP(s)
	}
	go w.watch()
	t.Cleanup(w.stopWatch)
	return w
}

func (w *world) stopWatch() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
		<-w.watchDone
	}
}

func (w *world) setMode(server, mode string) {
	if err := os.WriteFile(w.modes[server], []byte(mode+"\n"), 0o600); err != nil {
		w.t.Error(err)
	}
}

func (w *world) mode(server string) string {
	b, _ := os.ReadFile(w.modes[server])
	return strings.TrimSpace(string(b))
}

func (w *world) startHTTP(name string) string {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, w.server, "--http", "127.0.0.1:0", "--control", w.modes[name])
	proc.Prepare(cmd, 200*time.Millisecond)
	out, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := proc.Start(cmd); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { cancel(); _ = proc.Wait(cmd) })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		w.t.Fatalf("%s printed no URL: %v", name, err)
	}
	return strings.TrimSpace(line)
}

// watch timestamps tool results as they reach the fake API, notes when a
// server's control file goes back to healthy, and collects the stdio
// servers' pids from their pidfiles.
func (w *world) watch() {
	defer close(w.watchDone)
	last := map[string]string{}
	for _, s := range serverNames {
		last[s] = w.mode(s)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		n := len(w.api.ToolResults())
		w.mu.Lock()
		for len(w.seen) < n {
			w.seen = append(w.seen, now)
		}
		for _, s := range serverNames {
			m := w.mode(s)
			if m != last[s] && m == w.healthy[s] {
				w.returned[s] = append(w.returned[s], now)
			}
			last[s] = m
			if b, err := os.ReadFile(w.pids[s]); err == nil {
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						w.serverPids[pid] = true
					}
				}
			}
		}
		w.mu.Unlock()
	}
}

// window puts server in mode for d, then back to healthy.
func (w *world) window(server, mode string, d time.Duration, log func(string, ...any)) {
	log("fault: %s -> %s for %s", server, mode, d)
	w.setMode(server, mode)
	time.Sleep(d)
	w.setMode(server, w.healthy[server])
	log("fault over: %s healthy", server)
}

// fault is one scripted fault, fired once `progress` jobs have ended.
type fault struct {
	at   int
	name string
	run  func() (fired bool)
}

// figures is one night's measurements.
type figures struct {
	Jobs, Done, Skipped, Failed, Clean      int
	ToolCalls, OK, Blocked, Errors, Missing int
	Return                                  map[string]string
	Orphans, Leaks                          int
	Wall                                    time.Duration
}

// classify sorts the tool results the model received.
func (w *world) classify(f *figures, blockMarker string) map[string]bool {
	clean := map[string]bool{}
	bad := map[string]bool{}
	for _, r := range w.api.ToolResults() {
		f.ToolCalls++
		switch {
		case !r.IsError:
			f.OK++
			clean[r.Session] = true
		case strings.Contains(r.Content, blockMarker):
			f.Blocked++
			bad[r.Session] = true
		case strings.Contains(r.Content, "No such tool"):
			f.Missing++
			bad[r.Session] = true
		default:
			f.Errors++
			bad[r.Session] = true
		}
	}
	for s := range bad {
		delete(clean, s)
	}
	return clean
}

// returnTimes: for each time a server came back, the delay until the
// model first received a good result from it.
func (w *world) returnTimes() map[string]string {
	results := w.api.ToolResults()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for _, s := range serverNames {
		var parts []string
		for _, back := range w.returned[s] {
			first := time.Time{}
			for i, r := range results {
				if i < len(w.seen) && !r.IsError && strings.HasPrefix(r.ToolName, "mcp__"+s+"__") && w.seen[i].After(back) {
					first = w.seen[i]
					break
				}
			}
			if first.IsZero() {
				parts = append(parts, "no call after")
			} else {
				parts = append(parts, first.Sub(back).Round(100*time.Millisecond).String())
			}
		}
		if len(parts) > 0 {
			out[s] = strings.Join(parts, ", ")
		}
	}
	return out
}

// secretScan reports every file under dir and every tool result holding a
// seeded secret.
func (w *world) secretScan(dir string) []string {
	var leaks []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for k, v := range secrets {
			if strings.Contains(string(b), v) {
				leaks = append(leaks, fmt.Sprintf("%s holds %s", path, k))
			}
		}
		return nil
	})
	for _, r := range w.api.ToolResults() {
		for k, v := range secrets {
			if strings.Contains(r.Content+r.Context+r.Input, v) {
				leaks = append(leaks, fmt.Sprintf("the model received %s in a result of %s (%s)", k, r.ToolName, r.Session))
			}
		}
	}
	return leaks
}

// orphans lists live processes of the night at its end: a stdio server
// (by pidfile, or any process whose command line names this night's
// folder, other than the HTTP servers the test runs) or any member of a
// session's process group.
// orphansAfterExit is orphans once the processes killed at the end had the
// time to exit: it polls until none is left, for a minute at most (a busy
// machine may take seconds to reap; one still there after a minute
// outlived its job).
func (w *world) orphansAfterExit(pgids []int) []string {
	deadline := time.Now().Add(time.Minute)
	for {
		o := w.orphans(pgids)
		if len(o) == 0 || time.Now().After(deadline) {
			return o
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (w *world) orphans(pgids []int) []string {
	var out []string
	w.mu.Lock()
	pids := make([]int, 0, len(w.serverPids))
	for pid := range w.serverPids {
		pids = append(pids, pid)
	}
	w.mu.Unlock()
	groups := map[int]bool{}
	for _, g := range pgids {
		groups[g] = true
	}
	known := map[int]bool{}
	for _, pid := range pids {
		known[pid] = true
	}
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		state, pgrp := procStat(pid)
		if state == "" || state == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cl := strings.ReplaceAll(string(cmdline), "\x00", " ")
		isHTTP := strings.Contains(cl, "--http")
		switch {
		case known[pid] && !isHTTP:
			out = append(out, fmt.Sprintf("stdio server pid %d: %s", pid, cl))
		case groups[pgrp]:
			out = append(out, fmt.Sprintf("session group %d pid %d: %s", pgrp, pid, cl))
		case strings.Contains(cl, w.dir) && !isHTTP:
			out = append(out, fmt.Sprintf("pid %d: %s", pid, cl))
		}
	}
	return out
}

// procStat returns a process's state letter and process group ("" if gone).
func procStat(pid int) (string, int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return "", 0
	}
	pgrp, _ := strconv.Atoi(f[2])
	return f[0], pgrp
}

// readJournal reads the night's journals through the journal package, as
// resume and the report do. A torn last line (the supervisor is writing,
// or was SIGKILLed mid-write) is left out; a line that does not parse
// anywhere else fails the test.
func readJournal(t *testing.T, stateDir string) []journal.Event {
	paths, _ := filepath.Glob(statedir.Journals(stateDir))
	var out []journal.Event
	for _, p := range paths {
		evs, err := journal.Read(p)
		if err != nil {
			t.Errorf("read the journal: %v", err)
			continue
		}
		out = append(out, evs...)
	}
	return out
}

// ended counts the jobs of the journal that have finished done or were
// skipped.
func ended(events []journal.Event) int {
	n := 0
	for _, ev := range events {
		if (ev.Type == journal.JobFinished && ev.Status == journal.Done) || ev.Type == journal.JobSkipped {
			n++
		}
	}
	return n
}

// runScheduler fires each fault once progress() reaches its mark; it
// returns when every fault ran or stop is closed, with the names of the
// faults that did not fire: their mark never came, or they ran and found
// nothing to do. A scripted fault that never fired is a night that did not
// test what it claims, so the caller fails.
func runScheduler(t *testing.T, faults []fault, progress func() int, stop <-chan struct{}) (unfired []string) {
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].at < faults[j].at })
	var wg sync.WaitGroup
	var mu sync.Mutex
	defer func() {
		wg.Wait()
		sort.Strings(unfired)
	}()
	for i, f := range faults {
		for progress() < f.at {
			select {
			case <-stop:
				mu.Lock()
				defer mu.Unlock()
				for _, rest := range faults[i:] {
					t.Logf("fault %q never fired (progress %d < %d)", rest.name, progress(), rest.at)
					unfired = append(unfired, rest.name)
				}
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !f.run() {
				mu.Lock()
				unfired = append(unfired, f.name)
				mu.Unlock()
			}
		}()
		time.Sleep(300 * time.Millisecond)
	}
	return
}

// fired makes a fault that always takes effect once run.
func fired(run func()) func() bool { return func() bool { run(); return true } }

// scale maps a fault mark of the 12-job script onto n jobs.
func scale(at, n int) int { return max(1, at*n/shortJobs) }

// TestChaosNight runs the chaos night through nightwatch, then the same
// night with the plain hook, and writes the figures side by side; once on
// every supported CLI version, the versions in parallel. With
// NIGHTWATCH_CHAOS_FIGURES=dir/figures.md each version's table goes to
// dir/figures-<version>.md.
func TestChaosNight(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos night runs the real CLI")
	}
	testkit.ForEachClaude(t, testChaosNight)
}

func testChaosNight(t *testing.T, version string) {
	n := chaosJobs(t)
	jobs := buildJobs(n)
	nw := nightwatchNight(t, jobs, version)
	base := baselineNight(t, jobs, version)
	table := figuresTable(n, version, nw, base)
	t.Logf("\n%s", table)
	if out := os.Getenv("NIGHTWATCH_CHAOS_FIGURES"); out != "" {
		ext := filepath.Ext(out)
		_ = os.WriteFile(strings.TrimSuffix(out, ext)+"-"+version+ext, []byte(table), 0o644)
	}
	for _, p := range beatsPlainHook(nw, base) {
		t.Error(p)
	}
}

// beatsPlainHook holds nightwatch's night to the figures RELIABILITY.md
// reports: more jobs whose every tool call succeeded and more good tool
// results than the plain hook, fewer results that reached a dead or
// faulty server or a missing tool, and no orphan and no leak at all.
func beatsPlainHook(nw, base figures) []string {
	var problems []string
	more := func(what string, a, b int) {
		if a <= b {
			problems = append(problems, fmt.Sprintf("%s: nightwatch %d, plain hook %d; want nightwatch ahead", what, a, b))
		}
	}
	more("jobs whose every tool call succeeded", nw.Clean, base.Clean)
	more("tool results ok", nw.OK, base.OK)
	if bad, baseBad := nw.Errors+nw.Missing, base.Errors+base.Missing; bad >= baseBad {
		problems = append(problems, fmt.Sprintf("tool results that reached a dead server or a missing tool: nightwatch %d, plain hook %d; want fewer",
			bad, baseBad))
	}
	if nw.Orphans != 0 {
		problems = append(problems, fmt.Sprintf("orphan processes at the end: %d, want 0", nw.Orphans))
	}
	if nw.Leaks != 0 {
		problems = append(problems, fmt.Sprintf("secret leaks: %d, want 0", nw.Leaks))
	}
	return problems
}

func figuresTable(n int, version string, nw, base figures) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %d jobs, max_parallel 2, Claude Code %s | nightwatch | plain hook (baseline) |\n|---|---|---|\n", n, version)
	row := func(name string, a, c any) { fmt.Fprintf(&b, "| %s | %v | %v |\n", name, a, c) }
	row("jobs done (supervisor's verdict / CLI exit 0)", nw.Done, base.Done)
	row("jobs skipped with a reason", nw.Skipped, base.Skipped)
	row("jobs failed", nw.Failed, base.Failed)
	row("jobs whose every tool call succeeded", nw.Clean, base.Clean)
	row("tool results the model received", nw.ToolCalls, base.ToolCalls)
	row("— ok", nw.OK, base.OK)
	row("— reached a dead/faulty server (error result)", nw.Errors, base.Errors)
	row("— tool missing (server failed at session start)", nw.Missing, base.Missing)
	row("— blocked by the hook", nw.Blocked, base.Blocked)
	for _, s := range serverNames {
		a, c := nw.Return[s], base.Return[s]
		if a == "" && c == "" {
			continue
		}
		row("server return → first good call: "+s, orDash(a), orDash(c))
	}
	row("orphan processes at the end", nw.Orphans, base.Orphans)
	row("secret leaks (files under state_dir, model input)", nw.Leaks, base.Leaks)
	row("wall time", nw.Wall.Round(time.Second), base.Wall.Round(time.Second))
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func nightwatchNight(t *testing.T, jobs []chaosJob, version string) figures {
	w := newWorld(t, "nightwatch")
	bin := testkit.BuildNightwatch(t)
	state := filepath.Join(w.dir, "state")
	cache := statedir.Cache(state)

	var y strings.Builder
	fmt.Fprintf(&y, `version: 1
name: chaos
state_dir: ./state
max_parallel: 2
agent: {command: %s}
env: {MCP_TOOL_TIMEOUT: "8000", MCP_CONNECT_TIMEOUT_MS: "8000"}
defaults: {timeout: 90s, stall_timeout: 60s, retries: 2, on_unhealthy: defer, max_defer: 3m}
health: {ttl: 30s, backoff: 1s, max_backoff: 4s, probe_timeout: 3s, prewarm_timeout: 30s}
servers:
`, q(testkit.ClaudeBinOf(t, version)))
	for _, s := range []string{"alpha", "beta"} {
		key := strings.ToUpper(s) + "_API_KEY"
		fmt.Fprintf(&y, "  %s:\n    command: %s\n    args: [\"--control\", %s, \"--pidfile\", %s]\n    env: {%s: \"${%s}\"}\n    reconnect: %s\n",
			s, q(w.server), q(w.modes[s]), q(w.pids[s]), key, key, q(w.repair+" "+w.modes[s]))
	}
	for _, s := range []string{"gamma", "delta"} {
		tok := strings.ToUpper(s) + "_TOKEN"
		fmt.Fprintf(&y, "  %s:\n    type: http\n    url: %s\n    headers: {Authorization: \"Bearer ${%s}\"}\n    reconnect: %s\n",
			s, q(w.urls[s]), tok, q(w.repair+" "+w.modes[s]))
	}
	y.WriteString("jobs:\n")
	for _, j := range jobs {
		extra := ""
		if j.RunsWithout {
			extra = "on_unhealthy: run, "
		}
		fmt.Fprintf(&y, "  - {name: %s, servers: [%s], allowed_tools: [%s], %sprompt: %s}\n",
			j.Name, strings.Join(j.Servers, ", "), strings.Join(j.allowed(), ", "), extra, q(j.prompt()))
	}
	batch := filepath.Join(w.dir, "night.yaml")
	if err := os.WriteFile(batch, []byte(y.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(w.dir, "home"),
		"ANTHROPIC_BASE_URL=" + w.api.URL(), "ANTHROPIC_API_KEY=test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	logPath := filepath.Join(w.dir, "supervisor.log")
	type supervisor struct {
		cmd    *exec.Cmd
		done   chan struct{}
		err    error
		killed bool // under mu
	}
	var mu sync.Mutex
	var cur *supervisor
	finished := false // under mu: the night ended by itself
	start := func() {
		cmd := exec.Command(bin, "run", batch, "--maintenance-interval", "300ms")
		cmd.Env, cmd.Dir = env, w.dir
		logf, _ := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		logf.Close()
		sv := &supervisor{cmd: cmd, done: make(chan struct{})}
		go func() { sv.err = cmd.Wait(); close(sv.done) }()
		mu.Lock()
		cur = sv
		mu.Unlock()
	}
	var events []string
	var evMu sync.Mutex
	logf := func(format string, a ...any) {
		evMu.Lock()
		defer evMu.Unlock()
		events = append(events, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, a...))
	}
	var cacheErrs []string
	// The garbage fault writes this; until nightwatch's next write moves it
	// aside, a check that finds it has found the fault, not a nightwatch
	// write (faults overlap: the garbage can land inside another's window).
	garbage := []byte("\x00{{{ not json at all")
	checkCache := func(after string) {
		if b, err := os.ReadFile(cache); err == nil && bytes.Equal(b, garbage) {
			logf("cache check after %s: the injected garbage is still there (no write since)", after)
			return
		}
		if _, err := (&healthcheck.Store{Path: cache}).Read(); err != nil {
			evMu.Lock()
			cacheErrs = append(cacheErrs, after+": "+err.Error())
			evMu.Unlock()
		}
	}
	kills := 0
	sigkill := func() bool {
		// Wait for a session under way, so the kill leaves one behind.
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			open := map[string]bool{}
			for _, ev := range readJournal(t, state) {
				switch ev.Type {
				case journal.SessionProcess:
					open[ev.Job] = true
				case journal.JobFinished, journal.JobSkipped, journal.JobRetried:
					delete(open, ev.Job)
				}
			}
			if len(open) > 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(1200 * time.Millisecond)
		mu.Lock()
		sv := cur
		if finished {
			mu.Unlock()
			logf("no SIGKILL: the night already ended")
			return false
		}
		sv.killed = true
		mu.Unlock()
		_ = sv.cmd.Process.Signal(syscall.SIGKILL)
		<-sv.done
		kills++
		logf("fault: supervisor SIGKILLed (%d), restarting", kills)
		start()
		return true
	}
	chattrOK := exec.Command("chattr", "-i", batch).Run() == nil // probes that chattr works here
	n := len(jobs)
	faults := []fault{
		{scale(1, n), "hang", fired(func() { w.window("gamma", "hang", 6*time.Second, logf); checkCache("hang") })},
		{scale(2, n), "garbage cache", func() bool {
			logf("fault: cache.json overwritten with garbage")
			return os.WriteFile(cache, garbage, 0o600) == nil
		}},
		{scale(3, n), "sigkill 1", sigkill},
		{scale(4, n), "429 storm", fired(func() { w.window("gamma", "429=3", 6*time.Second, logf); checkCache("429") })},
		{scale(2, n), "401", fired(func() { logf("fault: delta -> 401 until its reconnect re-auths"); w.setMode("delta", "401") })},
		{scale(7, n), "sigkill 2", sigkill},
		{scale(6, n), "503 window", fired(func() { w.window("gamma", "503", 6*time.Second, logf); checkCache("503") })},
	}
	// The read-only fault needs chattr, which works on ext4 as root; where
	// it cannot work at all it is left out (and said), not counted as a
	// fault that never fired.
	if chattrOK {
		faults = append(faults, fault{scale(5, n), "read-only cache", func() bool {
			if err := exec.Command("chattr", "+i", cache).Run(); err != nil {
				logf("chattr +i: %v: the read-only fault did not fire", err)
				return false
			}
			logf("fault: cache.json immutable (chattr +i) for 5s")
			time.Sleep(5 * time.Second)
			_ = exec.Command("chattr", "-i", cache).Run()
			logf("fault over: cache.json writable")
			checkCache("read-only")
			return true
		}})
	} else {
		t.Logf("chattr does not work here: the read-only fault is left out")
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", cache).Run() })

	begin := time.Now()
	start()
	stop := make(chan struct{})
	schedDone := make(chan struct{})
	var unfired []string
	go func() {
		defer close(schedDone)
		unfired = runScheduler(t, faults, func() int { return ended(readJournal(t, state)) }, stop)
	}()
	// The night ends when a supervisor exits by itself.
	timeout := time.After(time.Duration(n)*20*time.Second + 2*time.Minute)
	for {
		mu.Lock()
		sv := cur
		mu.Unlock()
		select {
		case <-sv.done:
		case <-timeout:
			_ = sv.cmd.Process.Kill()
			log, _ := os.ReadFile(logPath)
			t.Fatalf("the chaos night did not finish\n%s", tail(string(log), 4000))
		}
		mu.Lock()
		if sv.killed {
			mu.Unlock()
			for { // wait for the scheduler's restart
				time.Sleep(50 * time.Millisecond)
				mu.Lock()
				changed := cur != sv
				mu.Unlock()
				if changed {
					break
				}
			}
			continue
		}
		finished = true
		mu.Unlock()
		if ee, ok := sv.err.(*exec.ExitError); sv.err != nil && (!ok || ee.ExitCode() != 1) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("nightwatch run: %v\n%s", sv.err, tail(string(log), 4000))
		}
		break
	}
	wall := time.Since(begin)
	close(stop)
	<-schedDone
	w.stopWatch()
	for _, e := range events {
		t.Log(e)
	}
	for _, name := range unfired {
		t.Errorf("nightwatch night: the scripted fault %q never fired", name)
	}

	// Every job ended done or skipped with a reason, done at most once.
	// One exception is the night's own rule, not a loss: a job whose
	// sessions found a faulted server unusable at their start more than
	// plan.MaxBounces times, with the night's probe finding it healthy
	// after each (a bounce the probe found down for is an outage and does
	// not count), fails, saying so ("could not use their servers"). The
	// gamma windows come one after another as jobs end; a night fast
	// enough to probe gamma healthy between them and start the same job
	// in each can meet that rule (README, "could not use").
	final := map[string]journal.Status{}
	bounced := map[string]string{}
	doneCount := map[string]int{}
	var pgids []int
	blocked := 0
	for _, ev := range readJournal(t, state) {
		switch ev.Type {
		case journal.JobFinished:
			final[ev.Job] = ev.Status
			if ev.Status == journal.Done {
				doneCount[ev.Job]++
			}
			if ev.Status == journal.Failed && strings.Contains(ev.Reason, "attempts could not use their servers") &&
				(strings.Contains(ev.Reason, `"gamma"`) || strings.Contains(ev.Reason, "server gamma ") ||
					strings.Contains(ev.Reason, `"delta"`) || strings.Contains(ev.Reason, "server delta ")) {
				bounced[ev.Job] = ev.Reason
			}
		case journal.JobSkipped:
			final[ev.Job] = journal.Skipped
			if strings.TrimSpace(ev.Reason) == "" {
				t.Errorf("job %s skipped without a reason", ev.Job)
			}
		case journal.SessionProcess:
			pgids = append(pgids, ev.PID)
		case journal.CallBlocked:
			blocked++
		}
	}
	fig := figures{Jobs: n, Wall: wall}
	bounceFailures := 0
	for _, j := range jobs {
		switch final[j.Name] {
		case journal.Done:
			fig.Done++
		case journal.Skipped:
			fig.Skipped++
		default:
			fig.Failed++
			// At most one: a server no session can use would fail every
			// job of it this way.
			if why, ok := bounced[j.Name]; ok && final[j.Name] == journal.Failed && bounceFailures == 0 {
				bounceFailures++
				t.Logf("job %s failed by the bounce rule on a faulted server: %s", j.Name, why)
				break
			}
			t.Errorf("job %s ended %q, want done or skipped", j.Name, final[j.Name])
		}
		if doneCount[j.Name] > 1 {
			t.Errorf("job %s finished done %d times", j.Name, doneCount[j.Name])
		}
	}
	if kills != 2 {
		t.Errorf("the supervisor was SIGKILLed %d times, want 2", kills)
	}
	clean := w.classify(&fig, "nightwatch: MCP server")
	fig.Clean = len(clean)
	t.Logf("blocked calls in the journal: %d, blocked results the model read: %d", blocked, fig.Blocked)

	// The cache parses after the night; the garbage was moved aside.
	checkCache("the night")
	for _, e := range cacheErrs {
		t.Errorf("cache unreadable after %s", e)
	}
	if aside, _ := filepath.Glob(cache + ".corrupt-*"); len(aside) == 0 {
		t.Errorf("the garbage cache was not moved aside as cache.json.corrupt-*")
	}
	if w.mode("delta") != "healthy" {
		t.Errorf("delta's reconnect (re-auth) never ran: mode %q", w.mode("delta"))
	}

	fig.Return = w.returnTimes()
	orphans := w.orphansAfterExit(pgids)
	fig.Orphans = len(orphans)
	for _, o := range orphans {
		t.Errorf("outlived its job: %s", o)
	}
	leaks := w.secretScan(state)
	fig.Leaks = len(leaks)
	for _, l := range leaks {
		t.Errorf("secret leak: %s", l)
	}
	if keep := os.Getenv("NIGHTWATCH_CHAOS_KEEP"); keep != "" {
		// Keep the supervisor's log and journal for a look after the test.
		_ = os.MkdirAll(keep, 0o755)
		log, _ := os.ReadFile(logPath)
		_ = os.WriteFile(filepath.Join(keep, "supervisor.log"), log, 0o644)
		if js, _ := filepath.Glob(statedir.Journals(state)); len(js) > 0 {
			b, _ := os.ReadFile(js[0])
			_ = os.WriteFile(filepath.Join(keep, "journal.jsonl"), b, 0o644)
		}
	}
	if t.Failed() {
		log, _ := os.ReadFile(logPath)
		t.Logf("supervisor log tail:\n%s", tail(string(log), 6000))
	}
	return fig
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// baselineNight runs the same jobs, two at a time, each as a plain
// `claude -p` session whose only health check is the plain hook; the same
// server faults are scripted (no supervisor to kill, no cache to corrupt).
func baselineNight(t *testing.T, jobs []chaosJob, version string) figures {
	w := newWorld(t, "baseline")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	plain := map[string]PlainServer{}
	mcpServers := map[string]any{}
	for _, s := range []string{"alpha", "beta"} {
		key := strings.ToUpper(s) + "_API_KEY"
		args := []string{"--control", w.modes[s], "--pidfile", w.pids[s]}
		plain[s] = PlainServer{Command: w.server, Args: args, Env: map[string]string{key: secrets[key]}}
		mcpServers[s] = map[string]any{"type": "stdio", "command": w.server, "args": args, "env": map[string]string{key: secrets[key]}}
	}
	for _, s := range []string{"gamma", "delta"} {
		plain[s] = PlainServer{URL: w.urls[s]}
		mcpServers[s] = map[string]any{"type": "http", "url": w.urls[s],
			"headers": map[string]string{"Authorization": "Bearer " + secrets[strings.ToUpper(s)+"_TOKEN"]}}
	}
	hookDir := filepath.Join(w.dir, "plainhook")
	_ = os.MkdirAll(hookDir, 0o700)
	serversFile := filepath.Join(hookDir, "servers.json")
	data, _ := json.Marshal(plain)
	if err := os.WriteFile(serversFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	settings := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "mcp__.*",
		"hooks": []any{map[string]any{"type": "command", "timeout": 60,
			"command": "CHAOS_PLAIN_HOOK='" + serversFile + "' '" + self + "'"}}}}}}
	settingsFile := filepath.Join(hookDir, "settings.json")
	data, _ = json.Marshal(settings)
	_ = os.WriteFile(settingsFile, data, 0o600)

	var logMu sync.Mutex
	logf := func(format string, a ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		t.Logf(time.Now().Format("15:04:05.000")+" baseline "+format, a...)
	}
	var progress sync.WaitGroup
	var doneN, okN int
	var mu sync.Mutex
	n := len(jobs)
	faults := []fault{
		{scale(1, n), "hang", fired(func() { w.window("gamma", "hang", 6*time.Second, logf) })},
		{scale(4, n), "429 storm", fired(func() { w.window("gamma", "429=3", 6*time.Second, logf) })},
		{scale(2, n), "401", fired(func() { logf("fault: delta -> 401 (nothing re-auths)"); w.setMode("delta", "401") })},
		{scale(6, n), "503 window", fired(func() { w.window("gamma", "503", 6*time.Second, logf) })},
	}
	stop := make(chan struct{})
	schedDone := make(chan struct{})
	var unfired []string
	go func() {
		defer close(schedDone)
		unfired = runScheduler(t, faults, func() int { mu.Lock(); defer mu.Unlock(); return doneN }, stop)
	}()
	begin := time.Now()
	queue := make(chan chaosJob)
	for i := 0; i < 2; i++ {
		progress.Add(1)
		go func() {
			defer progress.Done()
			for j := range queue {
				servers := map[string]any{}
				for _, s := range j.Servers {
					servers[s] = mcpServers[s]
				}
				cfg := filepath.Join(hookDir, j.Name+".mcp.json")
				b, _ := json.Marshal(map[string]any{"mcpServers": servers})
				_ = os.WriteFile(cfg, b, 0o600)
				r := testkit.RunClaude(t, w.api, testkit.ClaudeRun{Version: version, Prompt: j.prompt(), Home: filepath.Join(w.dir, "home"),
					MCPConfig: cfg, Settings: settingsFile, AllowedTools: j.allowed(), Timeout: 100 * time.Second,
					Env: []string{"MCP_TOOL_TIMEOUT=8000", "MCP_CONNECT_TIMEOUT_MS=8000"}, NoDebugFile: true})
				mu.Lock()
				doneN++
				if r.ExitCode == 0 && r.Subtype() == "success" {
					okN++
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	progress.Wait()
	wall := time.Since(begin)
	close(stop)
	<-schedDone
	w.stopWatch()
	for _, name := range unfired {
		t.Errorf("baseline night: the scripted fault %q never fired", name)
	}
	fig := figures{Jobs: n, Done: okN, Failed: n - okN, Wall: wall}
	clean := w.classify(&fig, PlainBlockPrefix)
	fig.Clean = len(clean)
	fig.Return = w.returnTimes()
	time.Sleep(500 * time.Millisecond)
	fig.Orphans = len(w.orphans(nil))
	fig.Leaks = len(w.secretScan(filepath.Join(w.dir, "home")))
	return fig
}
