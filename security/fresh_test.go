package security_test

import (
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

// `run --fresh` after a supervisor was SIGKILLed mid-session: the dead
// night's session (still running its long tool call) is killed and
// its MCP config, which holds the server's resolved key, is removed, before
// the fresh night runs.
func TestFreshRunEndsTheDeadNight(t *testing.T) {
	testkit.ForEachClaude(t, testFreshRunEndsTheDeadNight)
}

func testFreshRunEndsTheDeadNight(t *testing.T, version string) {
	bin := testkit.BuildNightwatch(t)
	api := fakeapi.Start(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	const key = "freshkeyW3e6R9t2Y5u8I1o4"
	batch := filepath.Join(dir, "night.yaml")
	writeBatch := func(prompt string) {
		writeFile(t, batch, fmt.Sprintf(`version: 1
name: fresh
state_dir: ./state
agent: {command: %q}
defaults: {timeout: 2m, retries: 0}
servers:
  notes: {command: %q, env: {NOTES_API_KEY: %q}}
jobs:
  - {name: slow, servers: [notes], allowed_tools: [mcp__notes], prompt: %q}
`, testkit.ClaudeBinOf(t, version), testkit.BuildTestServer(t), key, prompt), 0o600)
	}
	// The tool call lasts ten minutes: the session it holds can only end
	// early by the fresh night's kill, however long the steps below take.
	writeBatch("SESSION slow\nCALL mcp__notes__slow {\"ms\":600000}")
	state := filepath.Join(dir, "state")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	logPath := filepath.Join(dir, "supervisor.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()

	first := exec.Command(bin, "run", batch)
	first.Env, first.Dir, first.Stdout, first.Stderr = env, dir, logf, logf
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	// Once the session is in its tool call, SIGKILL the supervisor.
	var session journal.Event
	deadline := time.Now().Add(90 * time.Second)
	for session.PID == 0 {
		paths, _ := filepath.Glob(statedir.Journals(state))
		for _, p := range paths {
			events, _ := journal.Read(p)
			for _, ev := range events {
				if ev.Type == journal.SessionProcess && ev.Job == "slow" {
					session = ev
				}
			}
		}
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			t.Fatalf("the session never started:\n%s", readFile(t, logPath))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() { _ = proc.KillGroupID(session.PID) })
	// The model's first answer is the tool call.
	for api.Requests() < 1 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	_ = first.Process.Kill()
	_ = first.Wait()
	left, _ := filepath.Glob(statedir.AttemptFiles(state, session.Run, statedir.AttemptMCPConfig))
	if len(left) != 1 || !strings.Contains(readFile(t, left[0]), key) || !processRunning(session.PID) {
		t.Fatalf("the attack needs the dead night's session running (%v) and its mcp.json with the key on disk (%v)",
			processRunning(session.PID), left)
	}

	// The fresh night: the same batch, now with a quick job.
	writeBatch("SESSION quick\nCALL mcp__notes__echo {\"message\":\"fresh\"}")
	fresh := exec.Command(bin, "run", "--fresh", batch)
	fresh.Env, fresh.Dir, fresh.Stdout, fresh.Stderr = env, dir, logf, logf
	if err := fresh.Run(); err != nil {
		t.Fatalf("run --fresh: %v\n%s", err, readFile(t, logPath))
	}
	if n := len(api.SessionToolResults("quick")); n != 1 {
		t.Errorf("the fresh night ran its job %d times, want once", n)
	}
	// The kill is sent before the fresh night goes on; let the kernel finish
	// it (a minute: only a survivor runs it out).
	for end := time.Now().Add(time.Minute); processRunning(session.PID) && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if processRunning(session.PID) {
		t.Errorf("the dead night's session (pgid %d) is still running after run --fresh", session.PID)
	}
	walkFiles(t, state, func(path string, fi os.FileInfo) {
		if !fi.IsDir() && strings.Contains(readFile(t, path), key) {
			rel, _ := filepath.Rel(state, path)
			t.Errorf("%s still holds the server's key after run --fresh", rel)
		}
	})
}
