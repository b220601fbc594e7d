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

func TestOnCalendar(t *testing.T) {
	for _, tc := range []struct {
		sched string
		want  []string
	}{
		{"0 2 * * *", []string{"*-*-* 02:00:00"}},
		{"*/15 * * * 1-5", []string{"Mon..Fri *-*-* *:00/15:00"}},
		{"30 1 * * 1-5", []string{"Mon..Fri *-*-* 01:30:00"}},
		{"*/30 * * * *", []string{"*-*-* *:00/30:00"}},
		{"0 0 1 * *", []string{"*-*-01 00:00:00"}},
		{"0 22 * * 0,6", []string{"Sat,Sun *-*-* 22:00:00"}},
		{"0 3 * * 0-5", []string{"Mon..Fri,Sun *-*-* 03:00:00"}},
		{"5 8-10,12 * */3 *", []string{"*-01/3-* 08..10,12:05:00"}},
		{"0 9 1,15 * 1", []string{"*-*-01,15 09:00:00", "Mon *-*-* 09:00:00"}},
		{"CRON_TZ=Asia/Tokyo 0 2 * * *", []string{"*-*-* 02:00:00 Asia/Tokyo"}},
	} {
		t.Run(tc.sched, func(t *testing.T) {
			s, err := parseSchedule(tc.sched)
			if err != nil {
				t.Fatal(err)
			}
			got := s.onCalendar()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			analyze, err := exec.LookPath("systemd-analyze")
			if err != nil {
				return // the text comparison above is the check
			}
			for _, expr := range got {
				out, err := exec.Command(analyze, "calendar", expr).CombinedOutput()
				if err != nil {
					t.Errorf("systemd-analyze calendar %q: %v\n%s", expr, err, out)
				}
			}
		})
	}
}

func TestSystemdUnits(t *testing.T) {
	for _, dirName := range []string{"plain", "100% it's a $HOME & \"dir\""} {
		t.Run(dirName, func(t *testing.T) {
			f := newFixture(t, dirName)
			f.batch.Schedule = "*/15 * * * 1-5"
			p := f.plan(t, Systemd)
			rec := &recorder{}
			if err := Apply(context.Background(), p, rec.run); err != nil {
				t.Fatal(err)
			}
			unitDir := filepath.Join(f.home, ".config", "systemd", "user")
			svcPath := filepath.Join(unitDir, "nightwatch-nightly.service")
			tmrPath := filepath.Join(unitDir, "nightwatch-nightly.timer")
			read := func(path string) string {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
					t.Errorf("%s mode %v, want 0600", path, fi.Mode().Perm())
				}
				return string(data)
			}
			svcText, tmrText := read(svcPath), read(tmrPath)
			svc, tmr := parseUnit(t, svcText), parseUnit(t, tmrText)
			logs := filepath.Join(f.batch.StateDir, "logs")
			esc := func(s string) string { return strings.ReplaceAll(s, "%", "%%") }
			checks := []struct {
				unit map[string]map[string][]string
				sec  string
				key  string
				want []string
			}{
				{svc, "Service", "Type", []string{"oneshot"}},
				{svc, "Service", "ExecStart", []string{quoteUnit(esc(f.bin)) + ` "run" ` + execArg(f.batch.File)}},
				{svc, "Service", "WorkingDirectory", []string{esc(f.batch.Dir)}},
				{svc, "Service", "StandardOutput", []string{"append:" + esc(filepath.Join(logs, "systemd.out.log"))}},
				{svc, "Service", "StandardError", []string{"append:" + esc(filepath.Join(logs, "systemd.err.log"))}},
				{svc, "Service", "Environment", []string{
					`"GH_HOST=` + f.env["GH_HOST"] + `"`,
					`"HOME=` + esc(f.home) + `"`,
					`"PATH=/usr/local/bin:/usr/bin:/bin"`,
				}},
				{tmr, "Timer", "OnCalendar", []string{"Mon..Fri *-*-* *:00/15:00"}},
				{tmr, "Timer", "Persistent", []string{"true"}},
				{tmr, "Timer", "Unit", []string{"nightwatch-nightly.service"}},
				{tmr, "Install", "WantedBy", []string{"timers.target"}},
			}
			for _, c := range checks {
				if got := c.unit[c.sec][c.key]; !reflect.DeepEqual(got, c.want) {
					t.Errorf("[%s] %s = %q, want %q", c.sec, c.key, got, c.want)
				}
			}
			// The ExecStart words are absolute paths, and "$" is doubled so
			// systemd does not substitute it.
			if strings.Contains(f.batch.File, "$") && !strings.Contains(svcText, "$$HOME") {
				t.Errorf("ExecStart does not escape $:\n%s", svcText)
			}
			wantRuns := [][]string{
				{"systemctl", "--user", "daemon-reload"},
				{"systemctl", "--user", "enable", "--now", "nightwatch-nightly.timer"},
				{"systemctl", "--user", "restart", "nightwatch-nightly.timer"},
			}
			if !reflect.DeepEqual(rec.runs, wantRuns) {
				t.Errorf("commands %q, want %q", rec.runs, wantRuns)
			}
			verify(t, svcPath, tmrPath)
		})
	}
}

// verify runs systemd-analyze verify on the generated units when the tool
// exists; it reads the files exactly as systemd will.
func verify(t *testing.T, paths ...string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not found: checked the parsed unit text only")
		return
	}
	cmd := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...)
	out, err := cmd.CombinedOutput()
	// verify also reports problems of units it pulls in from the host
	// (timers.target's dependencies); only lines about ours count.
	var ours []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "nightwatch-") {
			ours = append(ours, line)
		}
	}
	switch {
	case len(ours) > 0:
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	case err != nil:
		t.Logf("systemd-analyze verify exited with %v, about other units only:\n%s", err, out)
	}
}

func TestSystemdUninstall(t *testing.T) {
	f := newFixture(t, "b")
	if err := Apply(context.Background(), f.plan(t, Systemd), (&recorder{}).run); err != nil {
		t.Fatal(err)
	}
	p, err := PlanUninstall(Systemd, f.options())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	if err := ApplyUninstall(context.Background(), p, rec.run); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nightwatch-nightly.service", "nightwatch-nightly.timer"} {
		if _, err := os.Stat(filepath.Join(f.home, ".config", "systemd", "user", name)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", name, err)
		}
	}
	want := [][]string{
		{"systemctl", "--user", "disable", "--now", "nightwatch-nightly.timer"},
		{"systemctl", "--user", "daemon-reload"},
	}
	if !reflect.DeepEqual(rec.runs, want) {
		t.Errorf("commands %q, want %q", rec.runs, want)
	}
}
