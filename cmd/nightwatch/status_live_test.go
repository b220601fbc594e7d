package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// TestStatusOfRunningNight runs a night and looks at it from other
// processes, as an operator in another terminal does (or for a night
// launchd started): `status` finds the night through the batch's state
// folder and shows its running job, the job waiting for it and why, and
// the supervisor's pid; `status --watch` and `logs --follow` end by
// themselves when the night ends. A job with max_turns: 1 and three calls
// to make is stopped by its budget and fails as budget exceeded, not
// retried, journaled with its limit. On every supported CLI.
func TestStatusOfRunningNight(t *testing.T) {
	testkit.ForEachClaude(t, testStatusOfRunningNight)
}

func testStatusOfRunningNight(t *testing.T, version string) {
	bin := testkit.BuildNightwatch(t)
	api := fakeapi.Start(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	_ = os.MkdirAll(home, 0o700)
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: watched
state_dir: ./state
max_cost_usd: 5
agent: {command: %s}
defaults: {timeout: 2m, retries: 2}
health: {backoff: 1s, prewarm_timeout: 30s}
servers:
  notes: {command: %s}
jobs:
  - {name: thrifty, servers: [notes], allowed_tools: [mcp__notes], max_turns: 1, prompt: %s}
  - {name: slow, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
  - {name: after, servers: [notes], allowed_tools: [mcp__notes], needs: [slow], prompt: %s}
`, q(testkit.ClaudeBinOf(t, version)), q(testkit.BuildTestServer(t)),
		script("thrifty", `mcp__notes__echo {"message":"1"}`, `mcp__notes__echo {"message":"2"}`, `mcp__notes__echo {"message":"3"}`),
		script("slow", `mcp__notes__slow {"ms":5000}`),
		script("after", `mcp__notes__echo {"message":"4"}`))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, dir
		return cmd
	}
	night := command("run", batch, "--maintenance-interval", "300ms")
	var nightOut bytes.Buffer
	night.Stdout, night.Stderr = &nightOut, &nightOut
	if err := night.Start(); err != nil {
		t.Fatal(err)
	}
	nightDone := make(chan error, 1)
	go func() { nightDone <- night.Wait() }()
	t.Cleanup(func() {
		_ = night.Process.Kill()
		if t.Failed() {
			t.Logf("the night's output:\n%s", nightOut.String())
		}
	})

	// Once the slow job's session runs, look from other processes.
	bound := time.Now().Add(90 * time.Second)
	for !sessionOf(t, state, "slow") {
		if time.Now().After(bound) {
			t.Fatalf("the slow job never started")
		}
		time.Sleep(100 * time.Millisecond)
	}
	follow := command("logs", batch, "--follow")
	var followOut bytes.Buffer
	follow.Stdout, follow.Stderr = &followOut, &followOut
	watch := command("status", batch, "--watch", "--interval", "200ms")
	var watchOut bytes.Buffer
	watch.Stdout, watch.Stderr = &watchOut, &watchOut
	for _, c := range []*exec.Cmd{follow, watch} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill() })
	}

	out, err := command("status", batch, "--json").Output()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	var view struct {
		Night plan.Live `json:"night"`
		PID   int       `json:"pid"`
	}
	if err := json.Unmarshal(out, &view); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	lv := view.Night
	if view.PID != night.Process.Pid || lv.Batch != "watched" || lv.Total != 3 || !lv.Ended.IsZero() || lv.MaxCostUSD != 5 {
		t.Errorf("status: pid %d (the night is %d), batch %q, %d jobs, ended %v, max cost %v", view.PID, night.Process.Pid, lv.Batch, lv.Total, lv.Ended, lv.MaxCostUSD)
	}
	if len(lv.Running) != 1 || lv.Running[0].Name != "slow" || lv.Running[0].Since.IsZero() {
		t.Errorf("running: %+v", lv.Running)
	}
	if len(lv.Waiting) != 1 || lv.Waiting[0].Name != "after" || lv.Waiting[0].Why != "needs slow" {
		t.Errorf("waiting: %+v", lv.Waiting)
	}

	text, err := command("status", batch).CombinedOutput()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, text)
	}
	t.Logf("nightwatch status %s:\n%s", filepath.Base(batch), text)
	for _, want := range []string{"night " + lv.RunID + " of watched", fmt.Sprintf("running (pid %d)", night.Process.Pid),
		"of max_cost_usd $5.00", "after  waiting", "needs slow", "notes"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}

	select {
	case err := <-nightDone:
		if err == nil {
			t.Errorf("the night exited 0 with a job failed")
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the night did not end")
	}
	for name, c := range map[string]*exec.Cmd{"logs --follow": follow, "status --watch": watch} {
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not end with the night", name)
		}
	}
	if !strings.Contains(watchOut.String(), "running") || !strings.Contains(watchOut.String(), ": ended ") {
		t.Errorf("status --watch printed:\n%s", watchOut.String())
	}
	if !strings.Contains(followOut.String(), "the night ended at") {
		t.Errorf("logs --follow printed:\n%s", followOut.String())
	}

	var budget *journal.Event
	finished := map[string]journal.Status{}
	for _, ev := range readJournal(t, state) {
		if ev.Type == journal.JobRetried && ev.Job == "thrifty" {
			t.Errorf("the budget stop was retried: %+v", ev)
		}
		if ev.Type == journal.JobFinished {
			finished[ev.Job] = ev.Status
			if ev.Job == "thrifty" {
				budget = &ev
			}
		}
	}
	if finished["slow"] != journal.Done || finished["after"] != journal.Done || finished["thrifty"] != journal.Failed {
		t.Errorf("finished: %v", finished)
	}
	if budget == nil || budget.Budget == nil || budget.Budget.Limit != journal.BudgetMaxTurns || budget.Budget.Max != 1 ||
		!strings.HasPrefix(budget.Reason, "budget exceeded: max_turns 1") {
		t.Errorf("thrifty's end: %+v", budget)
	}
	if calls := len(api.SessionToolResults("thrifty")); calls >= 3 {
		t.Errorf("thrifty made all %d calls", calls)
	}
}

// sessionOf says whether job's session has started in the night of the
// state folder.
func sessionOf(t *testing.T, state, job string) bool {
	for _, ev := range readJournal(t, state) {
		if ev.Type == journal.SessionProcess && ev.Job == job {
			return true
		}
	}
	return false
}
