package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/journal"
)

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

func script(session string, calls ...string) string {
	p := "SESSION " + session
	for _, c := range calls {
		p += "\nCALL " + c
	}
	return q(p)
}

// readJournal reads the run's journal through the journal package; a torn
// last line (the supervisor is writing) is left out.
func readJournal(t *testing.T, stateDir string) []journal.Event {
	t.Helper()
	paths, _ := filepath.Glob(statedir.Journals(stateDir))
	if len(paths) != 1 {
		return nil
	}
	events, err := journal.Read(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// TestRunSurvivesSIGKILL kills the supervisor with SIGKILL while a job is
// in the middle of its session, twice, and starts it again each time: the
// night resumes, the session the dead supervisor left running is killed,
// and every job ends done exactly once. It runs on every supported CLI.
func TestRunSurvivesSIGKILL(t *testing.T) {
	testkit.ForEachClaude(t, testRunSurvivesSIGKILL)
}

func testRunSurvivesSIGKILL(t *testing.T, version string) {
	bin := testkit.BuildNightwatch(t)
	api := fakeapi.Start(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	_ = os.MkdirAll(home, 0o700)
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: resumable
state_dir: ./state
agent: {command: %s}
defaults: {timeout: 2m, retries: 2}
health: {backoff: 1s, prewarm_timeout: 30s}
servers:
  notes: {command: %s}
jobs:
  - {name: first, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
  - {name: slow, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
  - {name: third, servers: [notes], allowed_tools: [mcp__notes], needs: [slow], prompt: %s}
  - {name: fourth, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
`, q(testkit.ClaudeBinOf(t, version)), q(testkit.BuildTestServer(t)),
		script("first", `mcp__notes__echo {"message":"1"}`),
		script("slow", `mcp__notes__slow {"ms":6000}`),
		script("third", `mcp__notes__echo {"message":"3"}`),
		script("fourth", `mcp__notes__echo {"message":"4"}`))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "run", batch, "--maintenance-interval", "300ms")
		cmd.Env = env
		cmd.Dir = dir
		logf, _ := os.OpenFile(filepath.Join(dir, "supervisor.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	var leftPids []int
	for kill := 1; kill <= 2; kill++ {
		cmd := start()
		// Kill the supervisor once the slow job's session is under way.
		deadline := time.Now().Add(90 * time.Second)
		for {
			var pid int
			for _, l := range readJournal(t, state) {
				if l.Type == journal.SessionProcess && l.Job == "slow" && l.Attempt == kill {
					pid = l.PID
				}
			}
			if pid != 0 {
				leftPids = append(leftPids, pid)
				time.Sleep(1500 * time.Millisecond)
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(dir, "supervisor.log"))
				t.Fatalf("the slow job never started (kill %d):\n%s", kill, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	final := start()
	done := make(chan error, 1)
	go func() { done <- final.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "supervisor.log"))
			t.Fatalf("the resumed night did not finish cleanly: %v\n%s", err, log)
		}
	case <-time.After(3 * time.Minute):
		_ = final.Process.Kill()
		t.Fatal("the resumed night did not finish")
	}
	finished := map[string]int{}
	resumes := 0
	for _, l := range readJournal(t, state) {
		if l.Type == journal.JobFinished && l.Status == journal.Done {
			finished[l.Job]++
		}
		if l.Type == journal.RunResumed {
			resumes++
		}
	}
	for _, j := range []string{"first", "slow", "third", "fourth"} {
		if finished[j] != 1 {
			t.Errorf("%s finished done %d times, want exactly once", j, finished[j])
		}
	}
	if resumes != 2 {
		t.Errorf("want 2 resumes, got %d", resumes)
	}
	if n := len(api.SessionToolResults("first")); n != 1 {
		t.Errorf("the first job ran %d sessions; a done job must not run again", n)
	}
	for _, pid := range leftPids {
		if proc.Alive(pid) && !zombie(pid) {
			t.Errorf("session pid %d of a killed supervisor is still running", pid)
		}
	}

	// The finished night wrote its morning report; `report` rebuilds it.
	log, _ := os.ReadFile(filepath.Join(dir, "supervisor.log"))
	reports, _ := filepath.Glob(filepath.Join(state, "reports", "*.html"))
	if len(reports) != 1 || !strings.Contains(string(log), "report: "+reports[0]) {
		t.Errorf("want one report written and named at the end of run, got %v\n%s", reports, log)
	}
	logCmd := exec.Command(bin, "logs", batch)
	logCmd.Env = env
	if out, err := logCmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"message":"done"`) {
		t.Errorf("logs: %v\n%.600s", err, out)
	}
	if logs, _ := filepath.Glob(filepath.Join(state, "logs", "*.log")); len(logs) != 1 {
		t.Errorf("want one run log (the resumed run appends to it), got %v", logs)
	} else if fi, _ := os.Stat(logs[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %o", fi.Mode().Perm())
	}
	for format, want := range map[string]string{"md": "4 jobs: 4 done", "html": "<svg", "json": `"runId"`} {
		cmd := exec.Command(bin, "report", batch, "--format", format)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("report --format %s: %v, want %q in:\n%.600s", format, err, want, out)
		}
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// TestInvalidBatchExitsTwo: each command that reads a batch refuses an
// invalid one with exit 2 and a message naming file:line.
func TestInvalidBatchExitsTwo(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	dir := t.TempDir()
	cases := map[string]struct{ yaml, want string }{
		"unknown key":    {"version: 1\nname: x\nbogus: 1\njobs: []\n", "bad.yaml:3"},
		"unknown server": {"version: 1\nname: x\nagent: {command: /bin/true}\nservers: {}\njobs:\n  - name: a\n    prompt: hi\n    servers: [nope]\n", "bad.yaml:8"},
		"needs cycle":    {"version: 1\nname: x\nagent: {command: /bin/true}\njobs:\n  - {name: a, prompt: p, needs: [b]}\n  - {name: b, prompt: p, needs: [a]}\n", "bad.yaml:"},
		"tilde path":     {"version: 1\nname: x\nagent: {command: /bin/true}\nstate_dir: /Users/~/state\njobs: []\n", "bad.yaml:4"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "bad.yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, sub := range []string{"run", "preflight"} {
				cmd := exec.Command(bin, sub, path)
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
				out, err := cmd.CombinedOutput()
				ee, ok := err.(*exec.ExitError)
				if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
					t.Errorf("%s: exit %v, want 2 with %q:\n%s", sub, err, c.want, out)
				}
			}
		})
	}
}

// TestReadingCommandsNeedNotTheNightsVariables: the night's variables
// often live only in its scheduler's environment (an env the operator's
// shell does not have); status, report and logs read its files and start
// nothing, so they work without them, while run still refuses.
func TestReadingCommandsNeedNotTheNightsVariables(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	batch := filepath.Join(dir, "night.yaml")
	yaml := "version: 1\nname: nightly\nstate_dir: ./state\nenv:\n  ANTHROPIC_BASE_URL: ${NIGHT_API_URL}\n" +
		"agent:\n  command: ${NIGHT_CLAUDE}\njobs:\n  - {name: digest, prompt: p}\n"
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	night, err := os.ReadFile(filepath.Join("..", "..", "report", "testdata", "night.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(state, "runs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "runs", "20270114T010000Z-c0de.jsonl"), night, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", batch}, "20270114T010000Z-c0de"},
		{[]string{"report", batch, "--format", "md"}, "# Night 20270114T010000Z-c0de"},
		{[]string{"reset", batch, "--all"}, ""},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %v, want %q in:\n%.800s", c.args[0], err, c.want, out)
		}
	}
	cmd := exec.Command(bin, "run", batch)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "${NIGHT_CLAUDE} is not set") {
		t.Errorf("run: %v, want exit 2 naming the unset variable:\n%s", err, out)
	}
}
