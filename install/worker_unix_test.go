//go:build unix

package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// These worker tests need POSIX modes, sh and a crontab; the Wine gate
// (scripts/wine-test.sh) builds for Windows, where this file is left out.

// splitExecStart reads an ExecStart= value back into argv as systemd does
// for the double-quoted words the writer emits: "\\" and "\"" unescaped,
// then "%%" and (in the arguments) "$$" turned back into one character.
func splitExecStart(t *testing.T, v string) []string {
	t.Helper()
	var out []string
	for v = strings.TrimSpace(v); v != ""; v = strings.TrimSpace(v) {
		if v[0] != '"' {
			t.Fatalf("ExecStart word not quoted: %q", v)
		}
		var w strings.Builder
		i := 1
		for ; i < len(v) && v[i] != '"'; i++ {
			if v[i] == '\\' && i+1 < len(v) {
				i++
			}
			w.WriteByte(v[i])
		}
		if i == len(v) {
			t.Fatalf("unterminated ExecStart word in %q", v)
		}
		word := strings.ReplaceAll(w.String(), "%%", "%")
		if len(out) > 0 {
			word = strings.ReplaceAll(word, "$$", "$")
		}
		out = append(out, word)
		v = v[i+1:]
	}
	return out
}

func TestWorkerSystemdUnit(t *testing.T) {
	for _, dirName := range []string{"plain", "100% it's a $HOME & \"dir\""} {
		t.Run(dirName, func(t *testing.T) {
			f, o := workerFixture(t, dirName, &WorkerOptions{Labels: []string{"linux", "gpu.a_1-x"}, MaxParallel: 4})
			p := planWorker(t, Systemd, o)
			rec := &recorder{}
			if err := Apply(context.Background(), p, rec.run); err != nil {
				t.Fatal(err)
			}
			unitDir := filepath.Join(f.home, ".config", "systemd", "user")
			path := filepath.Join(unitDir, "nightwatch-nightly-worker.service")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			if _, err := os.Stat(filepath.Join(unitDir, "nightwatch-nightly-worker.timer")); !os.IsNotExist(err) {
				t.Errorf("a worker has no timer: %v", err)
			}
			unit := parseUnit(t, string(data))
			logs := filepath.Join(f.batch.StateDir, "logs")
			esc := func(s string) string { return strings.ReplaceAll(s, "%", "%%") }
			for _, c := range []struct {
				sec, key string
				want     []string
			}{
				{"Service", "Type", []string{"simple"}},
				{"Service", "Restart", []string{"on-failure"}},
				{"Service", "RestartSec", []string{"10"}},
				{"Service", "TimeoutStopSec", []string{"60"}},
				{"Service", "WorkingDirectory", []string{esc(f.batch.Dir)}},
				{"Service", "StandardOutput", []string{"append:" + esc(filepath.Join(logs, "worker.out.log"))}},
				{"Service", "StandardError", []string{"append:" + esc(filepath.Join(logs, "worker.err.log"))}},
				{"Service", "Environment", []string{
					`"GH_HOST=` + f.env["GH_HOST"] + `"`,
					`"HOME=` + esc(f.home) + `"`,
					`"PATH=/usr/local/bin:/usr/bin:/bin"`,
				}},
				{"Service", "TimeoutStartSec", nil}, // a simple service's start is its exec
				{"Install", "WantedBy", []string{"default.target"}},
			} {
				if got := unit[c.sec][c.key]; !reflect.DeepEqual(got, c.want) {
					t.Errorf("[%s] %s = %q, want %q", c.sec, c.key, got, c.want)
				}
			}
			if _, ok := unit["Timer"]; ok {
				t.Error("a [Timer] section in the worker's service")
			}
			exec := unit["Service"]["ExecStart"]
			if len(exec) != 1 {
				t.Fatalf("ExecStart %q", exec)
			}
			wantArgv := []string{f.bin, "worker", f.batch.File, "--label", "linux", "--label", "gpu.a_1-x", "--max-parallel", "4"}
			if got := splitExecStart(t, exec[0]); !reflect.DeepEqual(got, wantArgv) {
				t.Errorf("ExecStart reads back as %q, want %q", got, wantArgv)
			}
			want := [][]string{
				{"systemctl", "--user", "daemon-reload"},
				{"systemctl", "--user", "enable", "--now", "nightwatch-nightly-worker.service"},
				{"systemctl", "--user", "restart", "nightwatch-nightly-worker.service"},
			}
			if !reflect.DeepEqual(rec.runs, want) {
				t.Errorf("commands %q, want %q", rec.runs, want)
			}
			if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, "loginctl enable-linger") {
				t.Errorf("no note about lingering:\n%s", notes)
			}
			verify(t, path)
		})
	}
}

func TestWorkerLaunchdPlist(t *testing.T) {
	for _, dirName := range []string{"plain", "it's <quoted> & \"night\""} {
		t.Run(dirName, func(t *testing.T) {
			f, o := workerFixture(t, dirName, &WorkerOptions{Labels: []string{"mac"}})
			p := planWorker(t, Launchd, o)
			rec := &recorder{}
			if err := Apply(context.Background(), p, rec.run); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(f.home, "Library", "LaunchAgents", "dev.nightwatch.nightly.worker.plist")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("plist mode %v, want 0600", fi.Mode().Perm())
			}
			pl := decodePlist(t, data)
			logs := filepath.Join(f.batch.StateDir, "logs")
			want := map[string]any{
				"Label":            "dev.nightwatch.nightly.worker",
				"ProgramArguments": []any{f.bin, "worker", f.batch.File, "--label", "mac"},
				"WorkingDirectory": f.batch.Dir,
				"EnvironmentVariables": map[string]any{
					"PATH":    "/usr/local/bin:/usr/bin:/bin",
					"HOME":    f.home,
					"GH_HOST": f.env["GH_HOST"],
				},
				"StandardOutPath":   filepath.Join(logs, "worker.out.log"),
				"StandardErrorPath": filepath.Join(logs, "worker.err.log"),
				"RunAtLoad":         true,
				"KeepAlive":         true,
				"ThrottleInterval":  10,
				"ExitTimeOut":       60,
			}
			for k, w := range want {
				if got := pl[k]; !reflect.DeepEqual(got, w) {
					t.Errorf("%s = %#v, want %#v", k, got, w)
				}
			}
			for k := range pl {
				if _, ok := want[k]; !ok {
					t.Errorf("unexpected key %s (a worker has no StartCalendarInterval)", k)
				}
			}
			wantRuns := [][]string{
				{"launchctl", "bootout", "gui/501/dev.nightwatch.nightly.worker"},
				{"launchctl", "bootstrap", "gui/501", path},
			}
			if !reflect.DeepEqual(rec.runs, wantRuns) {
				t.Errorf("commands %q, want %q", rec.runs, wantRuns)
			}
			if plutil, err := exec.LookPath("plutil"); err == nil {
				if out, err := exec.Command(plutil, "-lint", path).CombinedOutput(); err != nil {
					t.Errorf("plutil -lint: %v\n%s", err, out)
				}
			}
		})
	}
}

// TestWorkerCronLine runs the @reboot line's command through /bin/sh, as
// cron would at boot.
func TestWorkerCronLine(t *testing.T) {
	for _, dirName := range []string{"plain", "it's 100% a $(night) & `x` \"dir\""} {
		t.Run(dirName, func(t *testing.T) {
			f, o := workerFixture(t, dirName, &WorkerOptions{Labels: []string{"linux", "b.2"}, MaxParallel: 2})
			f.env["GH_HOST"] = "gh-'quoted' 50% $HOST"
			p := planWorker(t, Cron, o)
			line := p.CrontabLine
			if !strings.HasPrefix(line, "@reboot mkdir -p ") || !strings.HasSuffix(line, " # nightwatch-worker:nightly") {
				t.Fatalf("line %q", line)
			}
			if p.CrontabMarker != "# nightwatch-worker:nightly" {
				t.Errorf("marker %q", p.CrontabMarker)
			}
			if strings.Contains(strings.ReplaceAll(line, `\%`, ""), "%") {
				t.Errorf("unescaped %% in %q", line)
			}
			command := strings.ReplaceAll(strings.TrimPrefix(line, "@reboot "), `\%`, "%")
			cmd := exec.Command("sh", "-c", command)
			cmd.Env = []string{}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("sh -c: %v\n%s", err, out)
			}
			ran, err := os.ReadFile(filepath.Join(f.root, "ran"))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(string(ran), "\n")
			if got[0] != f.batch.Dir {
				t.Errorf("cwd %q, want %q", got[0], f.batch.Dir)
			}
			wantArgs := []string{"arg=worker", "arg=" + f.batch.File, "arg=--label", "arg=linux", "arg=--label", "arg=b.2", "arg=--max-parallel", "arg=2"}
			if !reflect.DeepEqual(got[1:1+len(wantArgs)], wantArgs) {
				t.Errorf("args %q, want %q", got[1:1+len(wantArgs)], wantArgs)
			}
			for _, kv := range []string{"GH_HOST=" + f.env["GH_HOST"], "HOME=" + f.home, "PATH=/usr/local/bin:/usr/bin:/bin"} {
				if !strings.Contains(string(ran), "\n"+kv+"\n") {
					t.Errorf("environment lacks %s", kv)
				}
			}
			if _, err := os.Stat(filepath.Join(f.batch.StateDir, "logs", "worker.log")); err != nil {
				t.Errorf("no log file: %v", err)
			}
			if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, "at boot only") || !strings.Contains(notes, "will not restart it") {
				t.Errorf("no note that cron neither starts it now nor restarts it:\n%s", notes)
			}
		})
	}
}

// The night's line and the worker's share the crontab: each install and
// uninstall touches its own line only, and a reinstall replaces it.
func TestWorkerCrontabBesideTheNight(t *testing.T) {
	table := fakeCrontab(t)
	ctx := context.Background()
	run := (&recorder{}).run
	f, wo := workerFixture(t, "b", &WorkerOptions{Labels: []string{"a"}})
	no := wo
	no.Worker = nil
	mine := "MAILTO=me@example.com\n0 5 * * * /usr/bin/backup # nightwatch:nightly-worker\n"
	if err := os.WriteFile(table, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	night := f.plan(t, Cron)
	worker := planWorker(t, Cron, wo)
	for range 2 { // twice: one line each
		for _, p := range []*Plan{night, worker} {
			if err := Apply(ctx, p, run); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := readFile(t, table), mine+night.CrontabLine+"\n"+worker.CrontabLine+"\n"; got != want {
		t.Fatalf("table %q, want %q", got, want)
	}
	// A changed worker replaces its own line, in place of the old one.
	wo.Worker = &WorkerOptions{Labels: []string{"b"}, MaxParallel: 3}
	worker2 := planWorker(t, Cron, wo)
	if err := Apply(ctx, worker2, run); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, table), mine+night.CrontabLine+"\n"+worker2.CrontabLine+"\n"; got != want {
		t.Fatalf("after a changed worker: %q, want %q", got, want)
	}
	un, err := PlanUninstall(Cron, wo)
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyUninstall(ctx, un, run); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, table), mine+night.CrontabLine+"\n"; got != want {
		t.Fatalf("after uninstalling the worker: %q, want %q", got, want)
	}
	// The night's uninstall leaves a worker's line.
	if err := Apply(ctx, worker, run); err != nil {
		t.Fatal(err)
	}
	nun, err := PlanUninstall(Cron, no)
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyUninstall(ctx, nun, run); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, table), mine+worker.CrontabLine+"\n"; got != want {
		t.Fatalf("after uninstalling the night: %q, want %q", got, want)
	}
}

func TestWorkerSchtasksThroughSchtasks(t *testing.T) {
	log := fakeSchtasks(t)
	ctx := context.Background()
	f, o := workerFixture(t, "b", &WorkerOptions{})
	p := planWorker(t, Schtasks, o)
	if err := Apply(ctx, p, RunCommand); err != nil {
		t.Fatal(err)
	}
	if registered, err := os.ReadFile(log + ".xml"); err != nil || string(registered) != string(utf16LE(p.Files[0].Content)) {
		t.Fatalf("schtasks /Create did not read the plan's file: %v", err)
	}
	un, err := PlanUninstall(Schtasks, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyUninstall(ctx, un, RunCommand); err != nil {
		t.Fatal(err)
	}
	xmlPath := filepath.Join(f.home, "AppData", "Local", "nightwatch", "schtasks", "nightwatch-nightly.worker.xml")
	want := strings.Join([]string{
		`/End /TN \nightwatch\nightly.worker`,
		"/Create /XML " + xmlPath + ` /TN \nightwatch\nightly.worker /F`,
		`/Run /TN \nightwatch\nightly.worker`,
		`/End /TN \nightwatch\nightly.worker`,
		`/Delete /TN \nightwatch\nightly.worker /F`,
	}, "\n") + "\n"
	if got := readFile(t, log); got != want {
		t.Errorf("schtasks ran:\n%s\nwant:\n%s", got, want)
	}
}
