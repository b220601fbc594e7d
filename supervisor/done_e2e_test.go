package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/report"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// TestNightDoneMeansDone is issue 10's proof, through the real CLI on
// every supported version, in one night:
//   - default: no allowed_tools; its declared server's tool runs;
//   - denied: its allowed_tools exclude web, whose tool it calls: failed
//     with the denial, not retried though it has retries;
//   - verify: its check fails once, printing a line the retry's prompt
//     gets (the fake model calls what it reads), then passes;
//   - kill: its check kills the web server; after: the next job on web
//     waits for it (its session's init says failed) and is never done;
//   - memory: its server is down from the preflight on;
//
// and the report built from the journal shows every outage (preflight's
// included) and each server's state at the end of the night.
func TestNightDoneMeansDone(t *testing.T) { testkit.ForEachClaude(t, testNightDoneMeansDone) }

func testNightDoneMeansDone(t *testing.T, version string) {
	f := newNightFixture(t)
	server := testkit.BuildTestServer(t)
	web, webPID := testkit.StartHTTPTestServer(t, server)

	script := func(name, body string) string {
		p := filepath.Join(f.dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	marker := filepath.Join(f.dir, "checked-once")
	check := script("check.sh", fmt.Sprintf(`if [ ! -e %[1]s ]; then
  touch %[1]s
  echo "3 tests, 1 failure"
  echo 'CALL mcp__files__echo {"message":"verify said: TestTotals failed"}'
  exit 1
fi
echo ok
`, marker))
	kill := script("kill.sh", fmt.Sprintf("kill -9 %d\n", webPID))

	b := f.load(fmt.Sprintf(`version: 1
name: done
state_dir: ./state
max_parallel: 1
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 0, on_unhealthy: defer, max_defer: 3s}
health: {ttl: 10m, backoff: 1s, max_backoff: 2s, probe_timeout: 3s, prewarm_timeout: 20s}
servers:
  web: {type: http, url: %s}
  files: {command: %s}
  memory: {type: http, url: "http://127.0.0.1:1/mcp"}
jobs:
  - {name: default, servers: [web], prompt: %s}
  - {name: denied, servers: [web, files], allowed_tools: [mcp__files], retries: 2, prompt: %s}
  - {name: verify, servers: [files], retries: 1, verify: [%s], prompt: %s}
  - {name: kill, servers: [files], verify: {command: [%s], timeout: 10s}, prompt: %s}
  - {name: after, servers: [web], needs: [kill], prompt: %s}
  - {name: memory, servers: [memory], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(web), jsonString(server),
		jsonString(prompt("default", `mcp__web__echo {"message":"default ran"}`)),
		jsonString(prompt("denied", `mcp__web__echo {"message":"not allowed"}`)),
		jsonString(check), jsonString(prompt("verify", `mcp__files__echo {"message":"first try"}`)),
		jsonString(kill), jsonString(prompt("kill", `mcp__files__echo {"message":"kill"}`)),
		jsonString(prompt("after", `mcp__web__echo {"message":"after the kill"}`)),
		jsonString(prompt("memory", `mcp__memory__echo {"message":"m"}`))))

	s := f.run(b)
	byName := map[string]plan.JobResult{}
	for _, j := range s.Jobs {
		byName[j.Name] = j
	}

	if j := byName["default"]; j.Status != StatusDone {
		t.Errorf("default: %s (%s), want done", j.Status, j.Reason)
	}
	if rs := f.api.SessionToolResults("default"); len(rs) != 1 || rs[0].IsError || !strings.Contains(rs[0].Content, "default ran") {
		t.Errorf("default: its tool did not run: %+v", rs)
	}

	const denial = "permission denied: mcp__web__echo (not allowed for this job)"
	if j := byName["denied"]; j.Status != StatusFailed || j.Reason != denial || j.Attempts != 1 {
		t.Errorf("denied: %s after %d attempts (%q), want failed once with %q", j.Status, j.Attempts, j.Reason, denial)
	}

	if j := byName["verify"]; j.Status != StatusDone || j.Attempts != 2 {
		t.Errorf("verify: %s after %d attempts (%s), want done on the second", j.Status, j.Attempts, j.Reason)
	}
	var told bool
	for _, r := range f.api.SessionToolResults("verify") {
		told = told || strings.Contains(r.Content, "verify said: TestTotals failed")
	}
	if !told {
		t.Errorf("verify: the retry's model did not get the check's output: %+v", f.api.SessionToolResults("verify"))
	}

	if j := byName["kill"]; j.Status != StatusDone {
		t.Errorf("kill: %s (%s)", j.Status, j.Reason)
	}
	if j := byName["after"]; j.Status == StatusDone || j.Deferrals == 0 {
		t.Errorf("after: %s with %d deferrals (%s); a job whose server was killed must wait, not pass", j.Status, j.Deferrals, j.Reason)
	}
	for _, r := range f.api.SessionToolResults("after") {
		if !r.IsError {
			t.Errorf("after: a call to the killed server worked: %+v", r)
		}
	}
	if j := byName["memory"]; j.Status != StatusSkipped || j.Attempts != 0 {
		t.Errorf("memory: %s after %d attempts, want skipped without starting", j.Status, j.Attempts)
	}

	events := readJournalTypes(t, s.Journal)
	var retried, afterStopped, preflightDown int
	for _, ev := range events {
		if ev.Type == journal.ServerState && ev.Server == "memory" && ev.By == "preflight" && ev.Status == journal.Unhealthy {
			preflightDown++
		}
		if ev.Job == "verify" && ev.Type == journal.JobRetried && ev.Verify != nil && !ev.Verify.OK &&
			strings.Contains(ev.Verify.Output, "1 failure") {
			retried++
		}
		if ev.Job == "after" && ev.Type == journal.JobDeferred && ev.Attempt > 0 {
			afterStopped++
		}
	}
	if retried != 1 {
		t.Errorf("verify: %d job-retried lines with the check's output, want 1", retried)
	}
	if preflightDown != 1 {
		t.Errorf("memory: %d unhealthy lines by the preflight in the journal, want 1", preflightDown)
	}
	if afterStopped == 0 {
		t.Errorf("after: no attempt was stopped and sent back to wait")
	}

	night, err := report.Build(s.Journal, "")
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]report.Server{}
	for _, srv := range night.Servers {
		servers[srv.Name] = srv
	}
	if m := servers["memory"]; len(m.Outages) == 0 || m.Status != "unhealthy" || m.StatusFrom != "night" {
		t.Errorf("memory: %+v, want its preflight outage and unhealthy at the end of the night", m)
	}
	if w := servers["web"]; len(w.Outages) == 0 || w.Status != "unhealthy" {
		t.Errorf("web: %+v, want the outage after the kill and unhealthy at the end", w)
	}
	if fs := servers["files"]; len(fs.Outages) != 0 || fs.Status != "healthy" {
		t.Errorf("files: %+v, want no outage and healthy at the end", fs)
	}
	var md strings.Builder
	if err := night.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"denied: mcp__web__echo", "could not use: web", "verified:"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, md.String())
		}
	}
	t.Logf("the report:\n%s", md.String())
}
