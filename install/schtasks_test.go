package install

import (
	"context"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/robfig/cron/v3"

	"github.com/nightwatch-dev/nightwatch/internal/command"
)

// testNow is the install time of every schtasks test: triggers start the
// next day, 2027-01-01.
var testNow = func() time.Time { return time.Date(2026, 12, 31, 10, 0, 0, 0, time.UTC) }

// node is any XML element, read back without the generator's types.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Kids    []node     `xml:",any"`
}

func (n *node) all(name string) []*node {
	var out []*node
	for i := range n.Kids {
		if n.Kids[i].XMLName.Local == name {
			out = append(out, &n.Kids[i])
		}
	}
	return out
}

func (n *node) get(t *testing.T, path ...string) *node {
	t.Helper()
	cur := n
	for _, p := range path {
		kids := cur.all(p)
		if len(kids) != 1 {
			t.Fatalf("<%s> has %d <%s>, want 1", cur.XMLName.Local, len(kids), p)
		}
		cur = kids[0]
	}
	return cur
}

func (n *node) text(t *testing.T, path ...string) string {
	t.Helper()
	return strings.TrimSpace(n.get(t, path...).Text)
}

func (n *node) names() []string {
	var out []string
	for _, k := range n.Kids {
		out = append(out, k.XMLName.Local)
	}
	return out
}

// taskSchema is the part of the Task Scheduler schema the generator may
// emit: each element's allowed children ("" = text only). An element or a
// child not listed fails the test.
var taskSchema = map[string][]string{
	"Task":                     {"RegistrationInfo", "Triggers", "Principals", "Settings", "Actions"},
	"RegistrationInfo":         {"Description", "URI"},
	"Triggers":                 {"CalendarTrigger"},
	"CalendarTrigger":          {"Repetition", "StartBoundary", "Enabled", "ScheduleByDay", "ScheduleByWeek", "ScheduleByMonth", "ScheduleByMonthDayOfWeek"},
	"Repetition":               {"Interval", "Duration", "StopAtDurationEnd"},
	"ScheduleByDay":            {"DaysInterval"},
	"ScheduleByWeek":           {"WeeksInterval", "DaysOfWeek"},
	"ScheduleByMonth":          {"DaysOfMonth", "Months"},
	"ScheduleByMonthDayOfWeek": {"Weeks", "DaysOfWeek", "Months"},
	"DaysOfMonth":              {"Day"},
	"Weeks":                    {"Week"},
	"DaysOfWeek":               {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"},
	"Months":                   {"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"},
	"Principals":               {"Principal"},
	"Principal":                {"LogonType", "RunLevel"},
	"Settings": {"MultipleInstancesPolicy", "DisallowStartIfOnBatteries", "StopIfGoingOnBatteries", "AllowHardTerminate",
		"StartWhenAvailable", "RunOnlyIfNetworkAvailable", "AllowStartOnDemand", "Enabled", "Hidden", "RunOnlyIfIdle", "WakeToRun", "ExecutionTimeLimit"},
	"Actions": {"Exec"},
	"Exec":    {"Command", "Arguments", "WorkingDirectory"},
}

func checkSchema(t *testing.T, n *node) {
	t.Helper()
	allowed, known := taskSchema[n.XMLName.Local]
	for _, k := range n.Kids {
		if !known || !slices.Contains(allowed, k.XMLName.Local) {
			t.Errorf("<%s> inside <%s>: not an element the generator may emit", k.XMLName.Local, n.XMLName.Local)
			continue
		}
		checkSchema(t, &k)
	}
	if known && len(n.Kids) == 0 && len(allowed) > 0 && n.XMLName.Local != "DaysOfWeek" && n.XMLName.Local != "Months" {
		t.Errorf("<%s> is empty", n.XMLName.Local)
	}
}

// parseTask reads a task document (UTF-8 text whose declaration says
// UTF-16, as File.Content holds it) and checks it against taskSchema.
func parseTask(t *testing.T, content []byte) *node {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(content)))
	d.Strict = true
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		if !strings.EqualFold(label, "UTF-16") {
			t.Errorf("declared encoding %q, want UTF-16", label)
		}
		return r, nil
	}
	var root node
	if err := d.Decode(&root); err != nil {
		t.Fatalf("task XML: %v\n%s", err, content)
	}
	if root.XMLName.Local != "Task" || root.XMLName.Space != taskNS {
		t.Fatalf("root %v, want Task in %s", root.XMLName, taskNS)
	}
	checkSchema(t, &root)
	return &root
}

func TestSchtasksTask(t *testing.T) {
	special := "with space & <ampersand> \"q\""
	if runtime.GOOS == "windows" {
		special = "with space & ampersand (x)" // < > " are not allowed in a Windows name
	}
	for _, dirName := range []string{"plain", special} {
		t.Run(dirName, func(t *testing.T) {
			f := newFixture(t, dirName)
			o := f.options()
			o.Now = testNow
			p, err := PlanInstall(Schtasks, o)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			if err := Apply(context.Background(), p, rec.run); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(f.home, "AppData", "Local", "nightwatch", "schtasks", "nightwatch-nightly.xml")
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) < 2 || raw[0] != 0xFF || raw[1] != 0xFE || len(raw)%2 != 0 {
				t.Fatalf("the file is not UTF-16LE with a BOM: % x", raw[:min(8, len(raw))])
			}
			units := make([]uint16, 0, len(raw)/2)
			for i := 2; i < len(raw); i += 2 {
				units = append(units, uint16(raw[i])|uint16(raw[i+1])<<8)
			}
			text := string(utf16.Decode(units))
			if text != string(p.Files[0].Content) {
				t.Fatalf("the file decodes to another document:\n%s", text)
			}
			task := parseTask(t, []byte(text))

			if got := task.text(t, "RegistrationInfo", "URI"); got != `\nightwatch\nightly` {
				t.Errorf("URI %q", got)
			}
			trig := task.get(t, "Triggers").all("CalendarTrigger")
			if len(trig) != 1 {
				t.Fatalf("%d triggers, want 1", len(trig))
			}
			if got := trig[0].text(t, "StartBoundary"); got != "2027-01-01T02:00:00" {
				t.Errorf("StartBoundary %q", got)
			}
			if got := trig[0].text(t, "ScheduleByDay", "DaysInterval"); got != "1" {
				t.Errorf("DaysInterval %q", got)
			}
			exec := task.get(t, "Actions", "Exec")
			if got := exec.text(t, "Command"); got != f.bin {
				t.Errorf("Command %q, want %q", got, f.bin)
			}
			if got := command.SplitCommandLine(exec.text(t, "Arguments")); !reflect.DeepEqual(got, []string{"run", f.batch.File}) {
				t.Errorf("Arguments read back as %q", got)
			}
			if got := exec.text(t, "WorkingDirectory"); got != f.batch.Dir {
				t.Errorf("WorkingDirectory %q", got)
			}
			for k, want := range map[string]string{
				"MultipleInstancesPolicy": "IgnoreNew", "StartWhenAvailable": "true",
				"ExecutionTimeLimit": "PT0S", "Enabled": "true", "DisallowStartIfOnBatteries": "false",
			} {
				if got := task.text(t, "Settings", k); got != want {
					t.Errorf("Settings/%s = %q, want %q", k, got, want)
				}
			}
			if got := task.text(t, "Principals", "Principal", "LogonType"); got != "InteractiveToken" {
				t.Errorf("LogonType %q", got)
			}
			// No environment goes into a task: not the secrets, not even
			// the plain GH_HOST (the notes name it instead).
			for _, v := range []string{f.env["API_KEY"], f.env["GITHUB_TOKEN"], f.env["GH_HOST"], "fail", "FAIL_OPEN"} {
				if strings.Contains(text, v) {
					t.Errorf("the task holds %q", v)
				}
			}
			if !strings.Contains(strings.Join(p.Notes, "\n"), "GH_HOST") {
				t.Errorf("the notes do not say GH_HOST is not carried: %q", p.Notes)
			}
			want := [][]string{{"schtasks", "/Create", "/XML", path, "/TN", `\nightwatch\nightly`, "/F"}}
			if !reflect.DeepEqual(rec.runs, want) {
				t.Errorf("commands %q, want %q", rec.runs, want)
			}
			out := printed(p)
			for _, s := range []string{"schtasks /Create /XML", "<Command>", "as UTF-16LE"} {
				if !strings.Contains(out, s) {
					t.Errorf("dry run lacks %q:\n%s", s, out)
				}
			}
			if strings.Contains(out, f.env["API_KEY"]) || strings.Contains(out, f.env["GITHUB_TOKEN"]) {
				t.Error("the dry run shows a secret")
			}
		})
	}
}

// TestSchtasksTriggersMatchCron reads the generated triggers back from the
// XML, computes when Task Scheduler would start the task over 800 days
// (a leap day included), and holds that to robfig/cron's own Next().
func TestSchtasksTriggersMatchCron(t *testing.T) {
	for _, line := range []string{
		"0 2 * * *",
		"30 3 * * 1-5",
		"0 0 1 * *",
		"0 9 */2 * 1", // both day fields restricted: either matches
		"15 14 1-7 * 5",
		"*/15 9-17 * * 1-5", // one progression: one trigger, repeated
		"0 9,17 * * *",
		"0 1,2,4 * * *",
		"0 3 ? jan-mar MON-FRI", // weekdays of some months
		"0 0 29 2 *",
		"0 12 * 6 *", // every day of one month
		"5/20 * * * *",
		"0,30 * * * *",
		"@weekly",
		"0 0 * * 0,6",
		"45 23 31 * *",
	} {
		t.Run(line, func(t *testing.T) {
			s, err := parseSchedule(line)
			if err != nil {
				t.Fatal(err)
			}
			triggers, err := s.taskTriggers(testNow())
			if err != nil {
				t.Fatal(err)
			}
			j := &job{name: "n", bin: "/bin/nightwatch", file: "/b/n.yaml", dir: "/b", sched: s}
			content, err := buildTaskXML(j, triggers)
			if err != nil {
				t.Fatal(err)
			}
			task := parseTask(t, content)
			from := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
			to := from.AddDate(0, 0, 800)
			got := simulate(t, task.get(t, "Triggers").all("CalendarTrigger"), to)
			sched, err := cron.ParseStandard(line)
			if err != nil {
				t.Fatal(err)
			}
			var want []time.Time
			for next := sched.Next(from.Add(-time.Second)); next.Before(to); next = sched.Next(next) {
				want = append(want, next)
			}
			if len(want) == 0 {
				t.Fatal("cron never fires in the span")
			}
			if !slices.EqualFunc(got, want, time.Time.Equal) {
				i := 0
				for i < len(got) && i < len(want) && got[i].Equal(want[i]) {
					i++
				}
				show := func(ts []time.Time) string {
					if i < len(ts) {
						return ts[i].Format(time.DateTime + " Mon")
					}
					return "(none)"
				}
				t.Fatalf("Task Scheduler starts %d times, cron %d; first difference at #%d: task %s, cron %s",
					len(got), len(want), i, show(got), show(want))
			}
		})
	}
}

// simulate computes the starts of CalendarTriggers before to, reading only
// the XML: the day each trigger's schedule allows from its StartBoundary's
// date, at its time, then every Repetition/Interval while less than the
// Duration has passed.
func simulate(t *testing.T, triggers []*node, to time.Time) []time.Time {
	t.Helper()
	seen := map[time.Time]bool{}
	for _, tr := range triggers {
		sb, err := time.Parse("2006-01-02T15:04:05", tr.text(t, "StartBoundary"))
		if err != nil {
			t.Fatal(err)
		}
		if tr.text(t, "Enabled") != "true" {
			t.Fatal("a disabled trigger")
		}
		var interval, duration time.Duration
		if reps := tr.all("Repetition"); len(reps) == 1 {
			interval = isoDuration(t, reps[0].text(t, "Interval"))
			duration = isoDuration(t, reps[0].text(t, "Duration"))
			if duration < interval {
				t.Errorf("Repetition Duration %v is shorter than its Interval %v", duration, interval)
			}
		}
		day0 := time.Date(sb.Year(), sb.Month(), sb.Day(), 0, 0, 0, 0, time.UTC)
		tod := sb.Sub(day0)
		for d := day0; d.Before(to); d = d.AddDate(0, 0, 1) {
			if !dayMatches(t, tr, d, day0) {
				continue
			}
			start := d.Add(tod)
			for k := time.Duration(0); ; k++ {
				at := start.Add(k * interval)
				if at.Before(to) {
					seen[at] = true
				}
				if interval == 0 || (k+1)*interval >= duration {
					break
				}
			}
		}
	}
	var out []time.Time
	for ts := range seen {
		out = append(out, ts)
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

func dayMatches(t *testing.T, tr *node, d, day0 time.Time) bool {
	t.Helper()
	has := func(n *node, name string) bool { return len(n.all(name)) == 1 }
	monthOK := func(n *node) bool { return has(n.get(t, "Months"), d.Month().String()) }
	dowOK := func(n *node) bool { return has(n.get(t, "DaysOfWeek"), d.Weekday().String()) }
	kinds := 0
	match := false
	if n := tr.all("ScheduleByDay"); len(n) == 1 {
		kinds++
		every, _ := strconv.Atoi(n[0].text(t, "DaysInterval"))
		match = every > 0 && int(d.Sub(day0).Hours()/24)%every == 0
	}
	if n := tr.all("ScheduleByWeek"); len(n) == 1 {
		kinds++
		if n[0].text(t, "WeeksInterval") != "1" {
			t.Fatal("the simulator reads WeeksInterval 1 only")
		}
		match = dowOK(n[0])
	}
	if n := tr.all("ScheduleByMonth"); len(n) == 1 {
		kinds++
		dayOK := false
		for _, dn := range n[0].get(t, "DaysOfMonth").all("Day") {
			if strings.TrimSpace(dn.Text) == strconv.Itoa(d.Day()) {
				dayOK = true
			}
		}
		match = dayOK && monthOK(n[0])
	}
	if n := tr.all("ScheduleByMonthDayOfWeek"); len(n) == 1 {
		kinds++
		last := d.AddDate(0, 0, 7).Month() != d.Month()
		weekOK := false
		for _, w := range n[0].get(t, "Weeks").all("Week") {
			ws := strings.TrimSpace(w.Text)
			if ws == strconv.Itoa((d.Day()-1)/7+1) || ws == "Last" && last {
				weekOK = true
			}
		}
		match = weekOK && dowOK(n[0]) && monthOK(n[0])
	}
	if kinds != 1 {
		t.Fatalf("a trigger with %d schedules", kinds)
	}
	return match
}

// isoDuration reads the PTnHnM durations the generator writes.
func isoDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	rest, ok := strings.CutPrefix(s, "PT")
	if !ok || rest == "" {
		t.Fatalf("duration %q", s)
	}
	d, err := time.ParseDuration(strings.ToLower(rest))
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

func TestSchtasksRefusals(t *testing.T) {
	for _, tc := range []struct{ sched, dir, want string }{
		{"CRON_TZ=Asia/Tokyo 0 2 * * *", "b", "local time"},
		{"* * * * *", "b", "more than the 48"},
		{"0,1 * * * *", "b", ""}, // 48 starts, one alternative: fits
		{"0,1,3 * * * *", "b", "more than the 48"},
		{"0,1 * 1 * 1", "b", "more than the 48"}, // 48 starts × two day alternatives
		{"0 * * * *", "b", ""},                   // one progression: one trigger
		{"0 2 * * *", "100%night", "%"},
	} {
		f := newFixture(t, tc.dir)
		f.batch.Schedule = tc.sched
		o := f.options()
		o.Now = testNow
		_, err := PlanInstall(Schtasks, o)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.sched, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s in %s: err = %v, want %q", tc.sched, tc.dir, err, tc.want)
		}
	}
}

func TestCheckBinaryByPlatform(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "nightwatch.exe")
	plain := filepath.Join(dir, "nightwatch")
	for _, p := range []string{exe, plain} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil { // no execute bit, as Windows reports it
			t.Fatal(err)
		}
	}
	if err := checkBinary(exe, "windows"); err != nil {
		t.Errorf("an .exe on Windows: %v", err)
	}
	if err := checkBinary(plain, "windows"); err == nil {
		t.Error("a file without .exe accepted on Windows")
	}
	if err := checkBinary(exe, "linux"); err == nil {
		t.Error("a file without an execute bit accepted on Linux")
	}
}

// TestWindowsPathsWithTilde: a "~" starting a component of a Windows path
// is refused as on the other platforms; an 8.3 short name's "~" is not.
func TestWindowsPathsWithTilde(t *testing.T) {
	if err := absPath("batch folder", `C:\Users\~\night`); err == nil || !strings.Contains(err.Error(), "contains a ~") {
		t.Errorf(`C:\Users\~\night: %v`, err)
	}
	if err := absPath("batch folder", `~\night`); err == nil {
		t.Error(`~\night accepted`)
	}
	if err := absPath("batch folder", `C:\PROGRA~1\night`); err != nil && strings.Contains(err.Error(), "contains a ~") {
		t.Errorf("an 8.3 short name refused: %v", err)
	}
}
