package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// These nights run the real Claude Code CLI (against the fake Messages API)
// with real MCP servers and nightwatch's real hook binary, once on every
// supported CLI version (testkit.ForEachClaude).

type nightFixture struct {
	t   *testing.T
	dir string
	api *fakeapi.Server
	env []string
}

func newNightFixture(t *testing.T) *nightFixture {
	f := &nightFixture{t: t, dir: t.TempDir(), api: fakeapi.Start(t)}
	home := filepath.Join(f.dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	f.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"ANTHROPIC_BASE_URL=" + f.api.URL(), "ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "MCP_CONNECT_TIMEOUT_MS=30000"}
	return f
}

// prompt builds a fake-model script: the session marker, then the calls.
func prompt(session string, calls ...string) string {
	p := "SESSION " + session
	for _, c := range calls {
		p += "\nCALL " + c
	}
	return p
}

func (f *nightFixture) load(yaml string) *jobs.Batch {
	f.t.Helper()
	path := filepath.Join(f.dir, "batch.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		f.t.Fatal(err)
	}
	b, err := jobs.Load(path, func(k string) (string, bool) {
		for _, kv := range f.env {
			if name, v, ok := strings.Cut(kv, "="); ok && name == k {
				return v, true
			}
		}
		return os.LookupEnv(k)
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *nightFixture) run(b *jobs.Batch) *NightSummary {
	f.t.Helper()
	return f.runWith(b, 300*time.Millisecond)
}

// runWith runs the night with maintenance every interval.
func (f *nightFixture) runWith(b *jobs.Batch, maintenance time.Duration) *NightSummary {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := RunNight(ctx, b, NightOptions{
		Binary: testkit.BuildNightwatch(f.t), Env: f.env,
		LogWriter:   zerolog.NewTestWriter(f.t),
		Maintenance: maintenance, RetryPause: 300 * time.Millisecond,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func readJournalTypes(t *testing.T, path string) []journal.Event {
	t.Helper()
	events, err := journal.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestNightServerDiesAndReconnectBringsItBack: six jobs over two servers;
// the third job breaks the stdio server for good (it exits and will not
// start again, and the reconnect command fails when the session's hook
// runs it). The next job that needs it is deferred while the other
// server's job runs; maintenance runs the server's reconnect command
// (which repairs it), the re-probe finds it healthy, and the deferred job
// runs. Every job ends done, exactly once; the third, whose only call was
// lost with the server, only because it may run without it (on_unhealthy:
// run), and the journal says it ran without notes.
func TestNightServerDiesAndReconnectBringsItBack(t *testing.T) {
	testkit.ForEachClaude(t, testNightServerDiesAndReconnectBringsItBack)
}

func testNightServerDiesAndReconnectBringsItBack(t *testing.T, version string) {
	f := newNightFixture(t)
	server := testkit.BuildTestServer(t)
	control := filepath.Join(f.dir, "notes.mode")
	repaired := filepath.Join(f.dir, "repaired")
	repair := filepath.Join(f.dir, "repair.sh")
	// Only the supervisor's maintenance repairs it here: run by the hook
	// inside a session (CLAUDECODE is set there), the command fails. The
	// hook's own reconnect is TestNightSessionHookReconnectsAtOnce's.
	script := "#!/bin/sh\n[ -n \"$CLAUDECODE\" ] && exit 1\necho healthy > \"$1\"\necho \"$2\" >> \"$3\"\n"
	if err := os.WriteFile(repair, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	web := startHTTPTestServer(t, server)

	b := f.load(fmt.Sprintf(`version: 1
name: outage
state_dir: ./state
max_parallel: 1
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 1, on_unhealthy: defer}
health: {ttl: 2m, backoff: 1s, max_backoff: 4s, probe_timeout: 5s, prewarm_timeout: 30s}
servers:
  notes:
    command: %s
    args: ["--control", %s]
    reconnect: %s
  web: {type: http, url: %s}
jobs:
  - {name: j1, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
  - {name: j2, servers: [web], allowed_tools: [mcp__web], prompt: %s}
  - {name: j3, servers: [notes], allowed_tools: [mcp__notes], on_unhealthy: run, prompt: %s}
  - {name: j4, servers: [notes], allowed_tools: [mcp__notes], needs: [j3], prompt: %s}
  - {name: j5, servers: [web], allowed_tools: [mcp__web], prompt: %s}
  - {name: j6, servers: [notes, web], allowed_tools: [mcp__notes, mcp__web], needs: [j4], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(server), jsonString(control),
		jsonString(repair+" "+control+" {server} "+repaired), jsonString(web),
		jsonString(prompt("j1", `mcp__notes__echo {"message":"j1"}`)),
		jsonString(prompt("j2", `mcp__web__echo {"message":"j2"}`)),
		jsonString(prompt("j3", `mcp__notes__break {}`)),
		jsonString(prompt("j4", `mcp__notes__echo {"message":"j4 after the repair"}`)),
		jsonString(prompt("j5", `mcp__web__echo {"message":"j5"}`)),
		jsonString(prompt("j6", `mcp__notes__echo {"message":"j6"}`, `mcp__web__echo {"message":"j6 web"}`))))

	s := f.run(b)
	if !s.AllDone() || s.Done != 6 {
		t.Fatalf("want six jobs done, got %+v", s.Jobs)
	}
	events := readJournalTypes(t, s.Journal)
	finished := map[string]int{}
	var deferred, reconnected, j4Started, j3Started, j3Ended int
	for i, ev := range events {
		switch {
		case ev.Type == journal.JobStarted && ev.Job == "j3":
			j3Started = i
		case ev.Type == journal.JobFinished && ev.Status == journal.Done:
			finished[ev.Job]++
			if ev.Job == "j3" {
				j3Ended = i
				if ev.Reason != "ran without notes" {
					t.Errorf("j3 ended done with %q; its call was lost with notes", ev.Reason)
				}
			}
		case ev.Type == journal.JobDeferred && ev.Job == "j4":
			deferred = i
		case ev.Type == journal.Maintenance && ev.Server == "notes" && ev.Action == journal.Reconnect:
			reconnected = i
		case ev.Type == journal.JobStarted && ev.Job == "j4":
			j4Started = i
		}
	}
	for _, j := range []string{"j1", "j2", "j3", "j4", "j5", "j6"} {
		if finished[j] != 1 {
			t.Errorf("job %s finished done %d times, want exactly once", j, finished[j])
		}
	}
	// j3 broke notes. Maintenance reconnects it once its backoff (1 s) has
	// passed: on a quick machine after j3's end, with j4 deferred first; on
	// a busy one while j3's session is still ending, or after the second
	// has passed and j4 never waits. Either way the reconnect comes after
	// j3 broke the server and j4 starts only after it.
	if !(j3Started > 0 && j3Ended > j3Started && reconnected > j3Started && j4Started > reconnected && j4Started > j3Ended) {
		t.Errorf("want j3 started (line %d), the reconnect (line %d) after it, then j4 started (line %d) after j3's end (line %d)",
			j3Started, reconnected, j4Started, j3Ended)
	}
	if deferred > 0 && deferred > reconnected {
		t.Errorf("j4 deferred (line %d) after notes was reconnected (line %d)", deferred, reconnected)
	}
	if b, _ := os.ReadFile(repaired); !strings.Contains(string(b), "notes") {
		t.Errorf("the reconnect command did not run with {server} = notes: %q", b)
	}
	for _, r := range f.api.SessionToolResults("j4") {
		if r.IsError || !strings.Contains(r.Content, "after the repair") {
			t.Errorf("j4 did not get its tool result: %+v", r)
		}
	}
}

// TestNightSessionHookReconnectsAtOnce: the batch's reconnect command
// reaches the hook inside the session. The job's first call breaks its
// stdio server for good (that call is lost: the job runs without its
// server by choice, so that one session is all the night runs); the hook's PostToolUseFailure runs the server's
// reconnect command (from the batch, given to the session's environment),
// which repairs it, so the job's next call in the same session works. The
// supervisor's maintenance is too slow to have done it (its interval is
// longer than the night), and the backoff too long for a retry probe.
// On 2.1.332 the night serves the hook, so the reconnect runs in the
// night's process; on 2.1.197 in the hook's.
func TestNightSessionHookReconnectsAtOnce(t *testing.T) {
	testkit.ForEachClaude(t, testNightSessionHookReconnectsAtOnce)
}

func testNightSessionHookReconnectsAtOnce(t *testing.T, version string) {
	f := newNightFixture(t)
	server := testkit.BuildTestServer(t)
	control := filepath.Join(f.dir, "notes.mode")
	repaired := filepath.Join(f.dir, "repaired")
	repair := filepath.Join(f.dir, "repair.sh")
	script := "#!/bin/sh\necho healthy > \"$1\"\necho \"$2\" >> \"$3\"\n"
	if err := os.WriteFile(repair, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	b := f.load(fmt.Sprintf(`version: 1
name: hookreconnect
state_dir: ./state
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 0}
health: {ttl: 2m, backoff: 5m, max_backoff: 10m, probe_timeout: 5s, prewarm_timeout: 30s}
servers:
  notes:
    command: %s
    args: ["--control", %s]
    reconnect: %s
jobs:
  - {name: j1, servers: [notes], allowed_tools: [mcp__notes], on_unhealthy: run, prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(server), jsonString(control),
		jsonString(repair+" "+control+" {server} "+repaired),
		jsonString(prompt("j1", `mcp__notes__break {}`, `mcp__notes__echo {"message":"right after the break"}`))))

	s := f.runWith(b, time.Hour)
	if got, _ := os.ReadFile(repaired); !strings.Contains(string(got), "notes") {
		logNight(t, b.StateDir, s.Journal)
		t.Fatalf("the reconnect command did not run inside the session (%q); jobs %+v", got, s.Jobs)
	}
	results := f.api.SessionToolResults("j1")
	if len(results) != 2 || results[1].IsError || !strings.Contains(results[1].Content, "right after the break") {
		t.Errorf("the call after the break did not reach the repaired server: %+v", results)
	}
	var restoredByHook bool
	for _, ev := range readJournalTypes(t, s.Journal) {
		if ev.Type == journal.Maintenance && ev.Action == journal.Reconnect {
			t.Errorf("the supervisor reconnected (%+v); the hook should have", ev)
		}
		if ev.Type == journal.ServerState && ev.Server == "notes" && ev.Status == journal.Healthy && ev.By == "reconnect" {
			restoredByHook = true
		}
	}
	if !restoredByHook {
		t.Error("the journal has no healthy-by-reconnect line for notes")
	}
}

// TestNightHungSessionIsKilled: a session whose tool never answers is
// killed at the job's timeout, and nothing of it (Claude Code, its MCP
// server) is left running.
func TestNightHungSessionIsKilled(t *testing.T) {
	testkit.ForEachClaude(t, testNightHungSessionIsKilled)
}

func testNightHungSessionIsKilled(t *testing.T, version string) {
	f := newNightFixture(t)
	server := testkit.BuildTestServer(t)
	pidfile := filepath.Join(f.dir, "server.pids")
	b := f.load(fmt.Sprintf(`version: 1
name: hang
state_dir: ./state
agent: {command: %s}
defaults: {timeout: 8s, stall_timeout: 1m, retries: 0}
servers:
  notes: {command: %s, args: ["--pidfile", %s]}
jobs:
  - {name: stuck, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(server), jsonString(pidfile),
		jsonString(prompt("stuck", `mcp__notes__hang {}`))))
	// Killed by "timeout", not "stall" (1 min) nor the night's own bound
	// (runWith's 4 min, a hang): the job's timeout cut it. How long the
	// night took depends on the machine, so it is not asserted.
	s := f.run(b)
	if s.Failed != 1 || s.Jobs[0].Outcome == nil || s.Jobs[0].Outcome.KilledBy != "timeout" {
		t.Fatalf("want the job failed by its timeout, got %+v", s.Jobs[0])
	}
	// The session's own server (the last pid written: the preflight's
	// probe instance wrote first) must be gone.
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Fields(string(data)) {
		var pid int
		fmt.Sscan(line, &pid)
		if proc.StartID(pid) != "" && !isZombie(pid) {
			t.Errorf("MCP server pid %d outlived its session", pid)
		}
	}
}

// TestNightWaitsForASlowServer: a stdio server that takes 10 s to start,
// with nothing in the night's environment about how long the first turn
// waits for it. Claude Code 2.1.197 waits 5 s by default, then starts
// without the tools of a server still connecting, and the night took that
// for a server the session could not use: every attempt stopped, the job
// failed at the fourth. The session's environment now bounds the wait by
// the job's mcp_timeout (MCP_CONNECT_TIMEOUT_MS), as 2.1.332 does on its
// own: done in one attempt, the call answered.
func TestNightWaitsForASlowServer(t *testing.T) {
	testkit.ForEachClaude(t, testNightWaitsForASlowServer)
}

func testNightWaitsForASlowServer(t *testing.T, version string) {
	f := newNightFixture(t)
	f.env = slices.DeleteFunc(f.env, func(kv string) bool { return strings.HasPrefix(kv, "MCP_CONNECT_TIMEOUT_MS=") })
	server := testkit.BuildTestServer(t)
	b := f.load(fmt.Sprintf(`version: 1
name: slowstart
state_dir: ./state
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 0}
health: {probe_timeout: 20s, prewarm_timeout: 30s}
servers:
  notes: {command: %s, args: ["--mode", "slow-start=10s"]}
jobs:
  - {name: j1, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(server),
		jsonString(prompt("j1", `mcp__notes__echo {"message":"after a slow start"}`))))
	s := f.run(b)
	if j := jobResult(s, "j1"); j.Status != StatusDone || j.Attempts != 1 {
		logNight(t, b.StateDir, s.Journal)
		t.Fatalf("j1 = %+v, want done in one attempt", j)
	}
	results := f.api.SessionToolResults("j1")
	if len(results) != 1 || results[0].IsError || !strings.Contains(results[0].Content, "after a slow start") {
		t.Errorf("the call did not reach the server: %+v", results)
	}
}
