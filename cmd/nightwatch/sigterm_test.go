//go:build !windows

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// TestRunSIGTERMAsAJobFinishesRunsNothingTwice sends the real `nightwatch
// run` process SIGTERM the moment a job's only tool call has been answered,
// that is while its session is finishing, and starts the night again. Which
// side of the session's end the signal lands on is left to the machine, so
// the test holds either way: the stop journals the end that happened
// exactly once, nothing of the stopped session outlives the supervisor, the
// stop is never recorded as a server outage or a failed attempt, and the
// resumed night runs no job again that the first one ended done.
func TestRunSIGTERMAsAJobFinishesRunsNothingTwice(t *testing.T) {
	testkit.ForEachClaude(t, testRunSIGTERMAsAJobFinishes)
}

func testRunSIGTERMAsAJobFinishes(t *testing.T, version string) {
	bin := testkit.BuildNightwatch(t)
	api := fakeapi.Start(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	_ = os.MkdirAll(home, 0o700)
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: sigterm
state_dir: ./state
agent: {command: %s}
max_parallel: 1
defaults: {timeout: 2m, retries: 2}
health: {backoff: 1s, prewarm_timeout: 30s}
servers:
  notes: {command: %s}
jobs:
  - {name: first, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
  - {name: slow, servers: [notes], allowed_tools: [mcp__notes], needs: [first], prompt: %s}
  - {name: last, servers: [notes], allowed_tools: [mcp__notes], needs: [slow], prompt: %s}
`, q(testkit.ClaudeBinOf(t, version)), q(testkit.BuildTestServer(t)),
		script("first", `mcp__notes__echo {"message":"1"}`),
		script("slow", `mcp__notes__slow {"ms":1500}`),
		script("last", `mcp__notes__echo {"message":"3"}`))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	logPath := filepath.Join(dir, "supervisor.log")
	log := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	start := func() (*exec.Cmd, chan error) {
		cmd := exec.Command(bin, "run", batch, "--maintenance-interval", "300ms")
		cmd.Env, cmd.Dir = env, dir
		logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		_ = logf.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, done
	}
	wait := func(cmd *exec.Cmd, done chan error, what string) {
		select {
		case <-done:
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%s did not end:\n%s", what, log())
		}
	}

	first, firstDone := start()
	// The slow job's one call has been answered: its session is writing
	// its last turn and ending.
	var sessionPID int
	for deadline := time.Now().Add(2 * time.Minute); len(api.SessionToolResults("slow")) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			t.Fatalf("the slow job's call was never answered:\n%s", log())
		}
	}
	if err := first.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wait(first, firstDone, "the night after SIGTERM")

	stopped := readJournal(t, state)
	slowDone := false
	for _, ev := range stopped {
		switch {
		case ev.Type == journal.SessionProcess && ev.Job == "slow":
			sessionPID = ev.PID
		case ev.Type == journal.JobFinished && ev.Job == "slow":
			if ev.Status != journal.Done {
				t.Errorf("the stop ended the slow job %s (%s); a stop is not the job's failure", ev.Status, ev.Reason)
			}
			slowDone = true
		case ev.Type == journal.JobRetried:
			t.Errorf("the stop charged %s an attempt: %s", ev.Job, ev.Reason)
		case ev.Type == journal.RunFinished:
			t.Errorf("a stopped night must stay resumable, but it was journaled finished")
		}
	}
	t.Logf("the stopped night had ended the slow job done: %v", slowDone)
	if sessionPID == 0 {
		t.Fatalf("no session process journaled for the slow job:\n%s", log())
	}
	if proc.Alive(sessionPID) && !zombie(sessionPID) {
		t.Errorf("the slow job's session (pid %d) outlived the stopped supervisor", sessionPID)
	}

	second, secondDone := start()
	wait(second, secondDone, "the resumed night")
	if second.ProcessState.ExitCode() != 0 {
		t.Fatalf("the resumed night exited %d:\n%s", second.ProcessState.ExitCode(), log())
	}
	finished := map[string]int{}
	resumed := false
	for _, ev := range readJournal(t, state) {
		switch ev.Type {
		case journal.JobFinished:
			if ev.Status == journal.Done {
				finished[ev.Job]++
			}
		case journal.RunResumed:
			resumed = true
		case journal.ServerState, journal.ServerLost:
			if ev.Status == journal.Unhealthy || ev.Type == journal.ServerLost {
				t.Errorf("the stop was recorded as an outage of %s: %s %s", ev.Server, ev.Type, ev.Reason)
			}
		}
	}
	if !resumed {
		t.Errorf("the second run did not resume the stopped night:\n%s", log())
	}
	for _, job := range []string{"first", "slow", "last"} {
		if finished[job] != 1 {
			t.Errorf("%s finished done %d times, want exactly once", job, finished[job])
		}
	}
	if n := len(api.SessionToolResults("first")); n != 1 {
		t.Errorf("the first job's call was made %d times; a job the stopped night ended done ran again", n)
	}
	if n := len(api.SessionToolResults("slow")); slowDone && n != 1 {
		t.Errorf("the stopped night ended the slow job done, yet its call was made %d times", n)
	}
}
