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

// TestInstallWorkerCommand: --worker installs the worker of a cluster's
// batch (dry run: nothing written) and is refused, naming the file, for a
// batch without cluster:; the worker's flags are refused without --worker.
func TestInstallWorkerCommand(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	dir := t.TempDir()
	single := "version: 1\nname: ops\nschedule: \"30 2 * * 1-5\"\nstate_dir: ./state\nagent: {command: /bin/sh}\n" +
		"servers:\n  notes: {command: /bin/cat}\njobs:\n  - {name: a, servers: [notes], prompt: hi}\n"
	write := func(name, yaml string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clustered := write("night.yaml", single+"cluster: {database_env: NIGHTWATCH_DATABASE_URL}\n")
	alone := write("alone.yaml", single)
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "NIGHTWATCH_DATABASE_URL=postgres://nw:pw-cli-77@db/nw"}
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		want     []string
		wantNone []string
	}{
		{"systemd worker", []string{"install", "systemd", clustered, "--worker", "--label", "linux", "--max-parallel", "2", "--dry-run"}, 0,
			[]string{"nightwatch-ops-worker.service", `ExecStart="` + bin + `" "worker" "` + clustered + `" "--label" "linux" "--max-parallel" "2"`,
				"Restart=on-failure", "enable --now nightwatch-ops-worker.service"},
			[]string{"OnCalendar", "pw-cli-77"}},
		{"cron worker", []string{"install", "cron", clustered, "--worker", "--dry-run"}, 0,
			[]string{"@reboot ", "# nightwatch-worker:ops", "at boot only"}, []string{"pw-cli-77"}},
		{"uninstall worker", []string{"uninstall", "launchd", clustered, "--worker", "--dry-run"}, 0,
			[]string{"dev.nightwatch.ops.worker.plist", "launchctl bootout gui/"}, nil},
		{"no cluster", []string{"install", "systemd", alone, "--worker", "--dry-run"}, 2,
			[]string{alone, "no cluster: section"}, []string{"[Service]"}},
		{"label without --worker", []string{"install", "systemd", clustered, "--label", "linux", "--dry-run"}, 2,
			[]string{"--label and --max-parallel", "--worker"}, []string{"[Service]"}},
		{"max-parallel without --worker", []string{"install", "launchd", clustered, "--max-parallel", "2", "--dry-run"}, 2,
			[]string{"--worker"}, []string{"<plist"}},
		{"bad label", []string{"install", "systemd", clustered, "--worker", "--label", "a b", "--dry-run"}, 2,
			[]string{`label "a b"`}, []string{"[Service]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := run(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantNone {
				if strings.Contains(out, w) {
					t.Errorf("output holds %q:\n%s", w, out)
				}
			}
		})
	}
	for _, d := range []string{".config", "Library"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !os.IsNotExist(err) {
			t.Errorf("--dry-run wrote %s: %v", d, err)
		}
	}
}
