package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

func TestDoctorAndInstallCommands(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	dir := t.TempDir()
	agent := filepath.Join(dir, "claude")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\necho '2.1.197 (Claude Code)'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf("version: 1\nname: ops\nschedule: \"30 2 * * 1-5\"\nstate_dir: ./state\nagent: {command: %s}\n"+
		"servers:\n  notes: {command: %s, reconnect: \"pm2 restart notes\"}\njobs:\n  - {name: a, servers: [notes], prompt: hi}\n",
		q(agent), q(testkit.BuildTestServer(t)))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(env []string, args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	out, code := run([]string{"ECC_MCP_HEALTH_FAIL_OPEN=1"}, "doctor", batch)
	if code != 1 || !strings.Contains(out, "fail fail-open") || !strings.Contains(out, "ECC_MCP_HEALTH_FAIL_OPEN") {
		t.Errorf("doctor with fail-open set: exit %d\n%s", code, out)
	}
	out, code = run(nil, "install", "systemd", batch, "--dry-run")
	if code != 0 || !strings.Contains(out, "OnCalendar=Mon..Fri *-*-* 02:30:00") || !strings.Contains(out, `ExecStart="`+bin+`" "run" "`+batch+`"`) {
		t.Errorf("install --dry-run: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".config", "systemd")); !os.IsNotExist(err) {
		t.Errorf("--dry-run wrote files: %v", err)
	}
}
