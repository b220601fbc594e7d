package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/robfig/cron/v3"
)

func TestLaunchdPlist(t *testing.T) {
	for _, dirName := range []string{
		"plain",
		"with space & ampersand",
		"it's <quoted> \"night\"",
	} {
		t.Run(dirName, func(t *testing.T) {
			f := newFixture(t, dirName)
			p := f.plan(t, Launchd)
			rec := &recorder{}
			if err := Apply(context.Background(), p, rec.run); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(f.home, "Library", "LaunchAgents", "dev.nightwatch.nightly.plist")
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
				"Label":            "dev.nightwatch.nightly",
				"ProgramArguments": []any{f.bin, "run", f.batch.File},
				"WorkingDirectory": f.batch.Dir,
				"EnvironmentVariables": map[string]any{
					"PATH":    "/usr/local/bin:/usr/bin:/bin",
					"HOME":    f.home,
					"GH_HOST": f.env["GH_HOST"],
				},
				"StandardOutPath":       filepath.Join(logs, "launchd.out.log"),
				"StandardErrorPath":     filepath.Join(logs, "launchd.err.log"),
				"StartCalendarInterval": map[string]any{"Hour": 2, "Minute": 0},
				"RunAtLoad":             false,
			}
			for k, w := range want {
				if got := pl[k]; !reflect.DeepEqual(got, w) {
					t.Errorf("%s = %#v, want %#v", k, got, w)
				}
			}
			for k := range pl {
				if _, ok := want[k]; !ok {
					t.Errorf("unexpected key %s", k)
				}
			}
			if fi, err := os.Stat(logs); err != nil || !fi.IsDir() {
				t.Errorf("log folder not created: %v", err)
			}
			wantRuns := [][]string{
				{"launchctl", "bootout", "gui/501/dev.nightwatch.nightly"},
				{"launchctl", "bootstrap", "gui/501", path},
			}
			if !reflect.DeepEqual(rec.runs, wantRuns) {
				t.Errorf("commands %q, want %q", rec.runs, wantRuns)
			}
		})
	}
}

func TestLaunchdIntervals(t *testing.T) {
	type d = map[string]int
	for _, tc := range []struct {
		sched string
		want  []d
	}{
		{"0 2 * * *", []d{{"Minute": 0, "Hour": 2}}},
		{"30 1 * * 1-5", []d{
			{"Minute": 30, "Hour": 1, "Weekday": 1}, {"Minute": 30, "Hour": 1, "Weekday": 2},
			{"Minute": 30, "Hour": 1, "Weekday": 3}, {"Minute": 30, "Hour": 1, "Weekday": 4},
			{"Minute": 30, "Hour": 1, "Weekday": 5},
		}},
		{"*/30 * * * *", []d{{"Minute": 0}, {"Minute": 30}}},
		{"0 0 1 * *", []d{{"Minute": 0, "Hour": 0, "Day": 1}}},
		{"@daily", []d{{"Minute": 0, "Hour": 0}}},
		{"15 3 * jan,jul SUN", []d{
			{"Minute": 15, "Hour": 3, "Month": 1, "Weekday": 0}, {"Minute": 15, "Hour": 3, "Month": 7, "Weekday": 0},
		}},
		// Both day fields restricted: cron's OR becomes two entries.
		{"0 9 1 * 1", []d{{"Minute": 0, "Hour": 9, "Day": 1}, {"Minute": 0, "Hour": 9, "Weekday": 1}}},
		{"* * * * *", []d{{}}},
	} {
		t.Run(tc.sched, func(t *testing.T) {
			s, err := parseSchedule(tc.sched)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.launchdIntervals()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestScheduleRefused(t *testing.T) {
	for _, tc := range []struct{ sched, want string }{
		{"", "no schedule"},
		{"   ", "no schedule"},
		{"@every 1h", "@every interval has no calendar form"},
	} {
		t.Run(tc.sched, func(t *testing.T) {
			_, err := parseSchedule(tc.sched)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	// Every line the daemon refuses is refused with the daemon's own error
	// (daemon.Run: "schedule %q: %w" of cron.ParseStandard's). A
	// day-of-week 7 is among them: robfig/cron knows 0-6 only, so the
	// installers must not schedule a night the daemon would never run.
	for _, line := range []string{
		"0 4 * * 7",
		"0 4 * * 5-7",
		"0 0 * * 8",
		"@reboot",
		"0 2 * *",
		"0 0 2 * * *",
		"61 * * * *",
		"0 24 * * *",
		"0 0 0 * *",
		"5-1 * * * *",
		"*/0 * * * *",
		"x * * * *",
		"CRON_TZ=Nowhere/Atlantis 0 2 * * *",
	} {
		t.Run(line, func(t *testing.T) {
			_, daemonErr := cron.ParseStandard(line)
			if daemonErr == nil {
				t.Fatalf("the daemon's parser accepts %q: the case proves nothing", line)
			}
			want := fmt.Sprintf("schedule %q: %v", line, daemonErr)
			if _, err := parseSchedule(line); err == nil || err.Error() != want {
				t.Errorf("err = %v, want the daemon's %q", err, want)
			}
		})
	}
	// robfig/cron panics on a time zone with no line after it; that is an
	// error here, as in the batch loader.
	if _, err := parseSchedule("TZ=UTC"); err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Errorf("TZ=UTC: err = %v, want unreadable", err)
	}
	// Valid for the daemon but not expressible by launchd.
	for _, tc := range []struct{ sched, want string }{
		{"CRON_TZ=Asia/Tokyo 0 2 * * *", "time zone"},
		{"0-58 0-22 1-2 * *", "more than"},
	} {
		s, err := parseSchedule(tc.sched)
		if err != nil {
			t.Fatalf("%s: %v", tc.sched, err)
		}
		if _, err := s.launchdIntervals(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.sched, err, tc.want)
		}
	}
	// PlanInstall passes the refusal on.
	f := newFixture(t, "b")
	f.batch.Schedule = "@every 30m"
	if _, err := PlanInstall(Launchd, f.options()); err == nil {
		t.Error("PlanInstall accepted @every")
	}
}

func TestLaunchdUninstall(t *testing.T) {
	f := newFixture(t, "b")
	rec := &recorder{}
	if err := Apply(context.Background(), f.plan(t, Launchd), rec.run); err != nil {
		t.Fatal(err)
	}
	p, err := PlanUninstall(Launchd, f.options())
	if err != nil {
		t.Fatal(err)
	}
	rec = &recorder{fail: func([]string) error { return os.ErrNotExist }} // not loaded: bootout fails
	if err := ApplyUninstall(context.Background(), p, rec.run); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.home, "Library", "LaunchAgents", "dev.nightwatch.nightly.plist")); !os.IsNotExist(err) {
		t.Errorf("plist still there: %v", err)
	}
	// A second uninstall finds nothing and is not an error.
	if err := ApplyUninstall(context.Background(), p, rec.run); err != nil {
		t.Error(err)
	}
}
