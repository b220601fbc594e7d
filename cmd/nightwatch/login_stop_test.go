package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// TestRunStopsAtPreflightOnARefusedLogin: the agent answers `auth status`
// logged out. `nightwatch run` starts no session: it stops at the
// preflight with the reason and the fix, skips every job with them,
// notifies, and exits non-zero. Before: the preflight only logged it and
// every job spent its session on the refused login.
func TestRunStopsAtPreflightOnARefusedLogin(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake agent is a shell script")
	}
	bin := testkit.BuildNightwatch(t)
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent")
	script := fmt.Sprintf(`#!/bin/sh
if [ "$1" = auth ]; then echo '{"loggedIn":false,"authMethod":"none"}'; exit 1; fi
printf '%%s\n' "$2" >> %s/ran.log
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0.01,"session_id":"s"}'
`, dir)
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf("version: 1\nname: login\nstate_dir: ./state\nagent: {command: %s}\n"+
		"notify: {command: [/bin/sh, -c, %s]}\njobs:\n  - {name: a, prompt: a}\n  - {name: b, prompt: b}\n",
		q(agent), q("cat > "+filepath.Join(dir, "notified")))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", batch)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("run: %v, want a non-zero exit; output:\n%s", err, out.String())
	}
	if ran, _ := os.ReadFile(filepath.Join(dir, "ran.log")); len(ran) > 0 {
		t.Errorf("sessions started although the login was refused: %q", ran)
	}
	paths, _ := filepath.Glob(statedir.Journals(filepath.Join(dir, "state")))
	if len(paths) != 1 {
		t.Fatalf("journals: %v", paths)
	}
	events, err := journal.Read(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var stopped bool
	skipped := map[string]string{}
	for _, ev := range events {
		switch ev.Type {
		case journal.NightStopped:
			stopped = ev.Class == "invalid-credentials"
		case journal.JobSkipped:
			skipped[ev.Job] = ev.Reason
		case journal.JobStarted:
			t.Errorf("%s started", ev.Job)
		}
	}
	if !stopped {
		t.Errorf("no night-stopped (invalid-credentials) line: %+v", events)
	}
	for _, j := range []string{"a", "b"} {
		if r := skipped[j]; !strings.Contains(r, "login was refused") || !strings.Contains(r, "fix:") {
			t.Errorf("%s skipped with %q, want the refused login and its fix", j, r)
		}
	}
	notified, _ := os.ReadFile(filepath.Join(dir, "notified"))
	if !strings.Contains(string(notified), "login was refused") {
		t.Errorf("notification %q, want the refused login", notified)
	}
	if !strings.Contains(out.String(), "skipped") {
		t.Errorf("the summary does not say the jobs were skipped:\n%s", out.String())
	}
}
