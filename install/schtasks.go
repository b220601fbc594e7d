package install

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/nightwatch-dev/nightwatch/internal/command"
)

// Task Scheduler (Windows) has no per-task environment and no output
// redirection: the task runs `nightwatch.exe run FILE` directly, with the
// user's own environment (the user and system variables, not a shell's),
// and `run` reads the batch's env and env_file itself. The task is written
// as the XML Task Scheduler imports (`schtasks /Create /XML file /TN name`)
// and exports; schtasks stores its own copy, the file is kept for doctor
// and for a reinstall.

// taskFolder is the Task Scheduler folder of nightwatch's tasks.
const taskFolder = `\nightwatch\`

// SchtasksName is the task name of a batch: \nightwatch\<name>.
func SchtasksName(name string) string { return taskFolder + name }

// SchtasksDir is where the task XML files are kept:
// %USERPROFILE%\AppData\Local\nightwatch\schtasks.
func SchtasksDir(home string) string {
	return filepath.Join(home, "AppData", "Local", "nightwatch", "schtasks")
}

func schtasksXMLPath(home, name string) string {
	return filepath.Join(SchtasksDir(home), "nightwatch-"+name+".xml")
}

// maxTaskTriggers is how many triggers Task Scheduler accepts in one task.
const maxTaskTriggers = 48

// taskNS is the Task Scheduler schema's namespace.
const taskNS = "http://schemas.microsoft.com/windows/2004/02/mit/task"

// The task XML, in the order Task Scheduler itself exports it.
type (
	taskXML struct {
		XMLName          xml.Name         `xml:"Task"`
		Version          string           `xml:"version,attr"`
		NS               string           `xml:"xmlns,attr"`
		RegistrationInfo taskRegistration `xml:"RegistrationInfo"`
		Triggers         taskTriggers     `xml:"Triggers"`
		Principals       taskPrincipals   `xml:"Principals"`
		Settings         taskSettings     `xml:"Settings"`
		Actions          taskActions      `xml:"Actions"`
	}
	taskRegistration struct {
		Description string `xml:"Description"`
		URI         string `xml:"URI"`
	}
	taskTriggers struct {
		Calendar []calendarTrigger `xml:"CalendarTrigger"`
		// Logon starts a worker (install --worker); a night has none.
		Logon []logonTrigger `xml:"LogonTrigger,omitempty"`
	}
	logonTrigger struct {
		Enabled bool   `xml:"Enabled"`
		UserID  string `xml:"UserId,omitempty"`
	}
	calendarTrigger struct {
		Repetition    *taskRepetition `xml:"Repetition,omitempty"`
		StartBoundary string          `xml:"StartBoundary"`
		Enabled       bool            `xml:"Enabled"`
		ByDay         *byDay          `xml:"ScheduleByDay,omitempty"`
		ByWeek        *byWeek         `xml:"ScheduleByWeek,omitempty"`
		ByMonth       *byMonth        `xml:"ScheduleByMonth,omitempty"`
		ByMonthDOW    *byMonthDOW     `xml:"ScheduleByMonthDayOfWeek,omitempty"`
	}
	taskRepetition struct {
		Interval          string `xml:"Interval"`
		Duration          string `xml:"Duration"`
		StopAtDurationEnd bool   `xml:"StopAtDurationEnd"`
	}
	byDay struct {
		DaysInterval int `xml:"DaysInterval"`
	}
	byWeek struct {
		WeeksInterval int       `xml:"WeeksInterval"`
		DaysOfWeek    emptyTags `xml:"DaysOfWeek"`
	}
	byMonth struct {
		DaysOfMonth daysOfMonth `xml:"DaysOfMonth"`
		Months      emptyTags   `xml:"Months"`
	}
	byMonthDOW struct {
		Weeks      weeks     `xml:"Weeks"`
		DaysOfWeek emptyTags `xml:"DaysOfWeek"`
		Months     emptyTags `xml:"Months"`
	}
	daysOfMonth struct {
		Day []int `xml:"Day"`
	}
	weeks struct {
		Week []string `xml:"Week"`
	}
	taskPrincipals struct {
		Principal taskPrincipal `xml:"Principal"`
	}
	taskPrincipal struct {
		ID        string `xml:"id,attr"`
		LogonType string `xml:"LogonType"`
		RunLevel  string `xml:"RunLevel"`
	}
	taskSettings struct {
		MultipleInstancesPolicy    string `xml:"MultipleInstancesPolicy"`
		DisallowStartIfOnBatteries bool   `xml:"DisallowStartIfOnBatteries"`
		StopIfGoingOnBatteries     bool   `xml:"StopIfGoingOnBatteries"`
		AllowHardTerminate         bool   `xml:"AllowHardTerminate"`
		StartWhenAvailable         bool   `xml:"StartWhenAvailable"`
		RunOnlyIfNetworkAvailable  bool   `xml:"RunOnlyIfNetworkAvailable"`
		AllowStartOnDemand         bool   `xml:"AllowStartOnDemand"`
		Enabled                    bool   `xml:"Enabled"`
		Hidden                     bool   `xml:"Hidden"`
		RunOnlyIfIdle              bool   `xml:"RunOnlyIfIdle"`
		WakeToRun                  bool   `xml:"WakeToRun"`
		ExecutionTimeLimit         string `xml:"ExecutionTimeLimit"`
		// RestartOnFailure keeps a worker running; a night has none (its
		// retries are its own).
		RestartOnFailure *taskRestart `xml:"RestartOnFailure,omitempty"`
	}
	taskRestart struct {
		Interval string `xml:"Interval"`
		Count    int    `xml:"Count"`
	}
	taskActions struct {
		Context string   `xml:"Context,attr"`
		Exec    taskExec `xml:"Exec"`
	}
	taskExec struct {
		Command          string `xml:"Command"`
		Arguments        string `xml:"Arguments"`
		WorkingDirectory string `xml:"WorkingDirectory"`
	}
)

// emptyTags is a list of empty elements (<Monday/>, <January/>).
type emptyTags []string

func (t emptyTags) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	for _, name := range t {
		el := xml.StartElement{Name: xml.Name{Local: name}}
		if err := e.EncodeToken(el); err != nil {
			return err
		}
		if err := e.EncodeToken(el.End()); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

var (
	taskWeekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	taskMonths   = []string{"", "January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
)

// taskTimes are the times of day a schedule starts the night: either
// each start on its own, or one start repeated every interval minutes for
// duration minutes (one trigger instead of dozens: a task holds 48).
type taskTimes struct {
	starts             []int // minutes after midnight
	interval, duration int   // minutes; 0 = no repetition
}

// times computes the schedule's times of day. Every minute of every hour
// the line names is a start; when they form one progression of three or
// more with a step of at least 2 minutes ("*/15 9-17"), the first start
// repeats. The duration ends one minute after the last start, so no
// reading of where the repetition stops can add a start after it.
func (s *schedule) times() taskTimes {
	var all []int
	for _, h := range s.hour {
		for _, m := range s.minute {
			all = append(all, h*60+m)
		}
	}
	slices.Sort(all)
	if n := len(all); n >= 3 {
		if step := all[1] - all[0]; step >= 2 && isProgression(all, step) {
			return taskTimes{starts: all[:1], interval: step, duration: all[n-1] - all[0] + 1}
		}
	}
	return taskTimes{starts: all}
}

// taskTriggers translates the schedule into CalendarTriggers that start
// on the day after from (so that registering the task never counts as a
// missed start). Each day alternative of cron's rule becomes one schedule:
// every day (ScheduleByDay), weekdays (ScheduleByWeek, or
// ScheduleByMonthDayOfWeek with every week of the month when the months are
// restricted), or days of the month (ScheduleByMonth).
func (s *schedule) taskTriggers(from time.Time) ([]calendarTrigger, error) {
	if s.tz != "" {
		return nil, fmt.Errorf("schedule: Task Scheduler runs calendar triggers in local time (an offset would not follow daylight saving); drop the %s time zone or set the machine's", s.tz)
	}
	tt := s.times()
	var months emptyTags
	for _, m := range s.month {
		months = append(months, taskMonths[m])
	}
	allMonths := full(s.month, fMonth)
	var schedules []calendarTrigger
	for _, alt := range s.dayAlternatives() {
		dom, dow := alt[0], alt[1]
		var c calendarTrigger
		switch {
		case dom != nil:
			c.ByMonth = &byMonth{DaysOfMonth: daysOfMonth{Day: dom}, Months: months}
		case dow != nil:
			var days emptyTags
			for _, d := range dow {
				days = append(days, taskWeekdays[d])
			}
			if allMonths {
				c.ByWeek = &byWeek{WeeksInterval: 1, DaysOfWeek: days}
			} else {
				c.ByMonthDOW = &byMonthDOW{Weeks: weeks{Week: []string{"1", "2", "3", "4", "Last"}}, DaysOfWeek: days, Months: months}
			}
		case allMonths:
			c.ByDay = &byDay{DaysInterval: 1}
		default:
			var every []int
			for d := fDom.min; d <= fDom.max; d++ {
				every = append(every, d)
			}
			c.ByMonth = &byMonth{DaysOfMonth: daysOfMonth{Day: every}, Months: months}
		}
		schedules = append(schedules, c)
	}
	if n := len(tt.starts) * len(schedules); n > maxTaskTriggers {
		return nil, fmt.Errorf("schedule: expands to %d Task Scheduler triggers, more than the %d a task holds; use times that form one progression (\"*/15 9-17 * * *\") or fewer of them", n, maxTaskTriggers)
	}
	day := time.Date(from.Year(), from.Month(), from.Day()+1, 0, 0, 0, 0, time.UTC)
	var out []calendarTrigger
	for _, c := range schedules {
		for _, st := range tt.starts {
			t := c
			t.Enabled = true
			t.StartBoundary = day.Add(time.Duration(st) * time.Minute).Format("2006-01-02T15:04:05")
			if tt.interval > 0 {
				t.Repetition = &taskRepetition{Interval: isoMinutes(tt.interval), Duration: isoMinutes(tt.duration)}
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// isoMinutes writes minutes as an xs:duration: PT1H30M.
func isoMinutes(m int) string {
	s := "PT"
	if m >= 60 {
		s += strconv.Itoa(m/60) + "H"
	}
	if m%60 != 0 || m < 60 {
		s += strconv.Itoa(m%60) + "M"
	}
	return s
}

// planSchtasks writes the task XML and registers it; /F replaces a task
// of the same name, so a reinstall takes the new schedule.
func planSchtasks(j *job, now time.Time) (*Plan, error) {
	if err := schtasksPaths(j); err != nil {
		return nil, err
	}
	triggers, err := j.sched.taskTriggers(now)
	if err != nil {
		return nil, err
	}
	content, err := buildTaskXML(j, triggers)
	if err != nil {
		return nil, err
	}
	path := schtasksXMLPath(j.home, j.name)
	name := SchtasksName(j.name)
	p := &Plan{
		Files:    []File{{Path: path, Mode: fileMode, Content: content, UTF16: true}},
		Commands: [][]string{{"schtasks", "/Create", "/XML", path, "/TN", name, "/F"}},
		Notes: []string{
			"Task Scheduler has no per-task environment: the night runs with your user's environment variables, and `nightwatch run` reads the batch's env and env_file itself",
			"the task runs only while you are logged on (LogonType InteractiveToken, no password stored); to run it logged off, open it in Task Scheduler and choose \"Run whether user is logged on or not\"",
			"the task's output is not captured: the night's log is " + filepath.Join(j.logDir, "<run>.log") + " (`nightwatch logs`)",
		},
	}
	if nc := notCarried(j); nc != "" {
		p.Notes = append(p.Notes, nc)
	}
	return p, nil
}

// schtasksPaths refuses the paths Task Scheduler would change: it expands
// %VAR% in the command, the arguments and the folder, and an XML document
// cannot carry a control character.
func schtasksPaths(j *job) error {
	for _, c := range []struct{ what, p string }{{"nightwatch binary", j.bin}, {"batch file", j.file}, {"batch folder", j.dir}} {
		if strings.ContainsFunc(c.p, func(r rune) bool { return r == '%' || r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("install: the %s %q holds a %% or a control character: Task Scheduler would expand or mangle it; move it to a plain path", c.what, c.p)
		}
	}
	return nil
}

// notCarried is the note naming the variables the other schedulers write
// and a task cannot hold ("" when there are none).
func notCarried(j *job) string {
	var names []string
	for _, e := range j.env {
		if e.name != "PATH" && e.name != "HOME" {
			names = append(names, e.name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("NOT carried into the task (Task Scheduler has none): %s; put them in the batch's env: or env_file, or set them as user variables (setx)", strings.Join(names, ", "))
}

// buildTaskXML renders the task. The command is the binary itself, the
// arguments quoted by the C runtime's rules that nightwatch.exe reads them
// back with.
func buildTaskXML(j *job, triggers []calendarTrigger) ([]byte, error) {
	t := baseTaskXML(j, "nightwatch batch "+j.name+" ("+j.file+")", SchtasksName(j.name), []string{"run", j.file})
	t.Triggers = taskTriggers{Calendar: triggers}
	return marshalTask(t)
}

// baseTaskXML is the task of the night or of a worker, without triggers.
func baseTaskXML(j *job, description, uri string, args []string) taskXML {
	return taskXML{
		Version: "1.2",
		NS:      taskNS,
		RegistrationInfo: taskRegistration{
			Description: description,
			URI:         uri,
		},
		Principals: taskPrincipals{Principal: taskPrincipal{
			ID: "Author", LogonType: "InteractiveToken", RunLevel: "LeastPrivilege",
		}},
		Settings: taskSettings{
			// A night still running when the next start comes keeps
			// running; the new start is skipped (the batch lock would
			// refuse it anyway).
			MultipleInstancesPolicy: "IgnoreNew",
			AllowHardTerminate:      true,
			// A night missed while the machine was off runs when it is
			// back, as systemd's Persistent=true.
			StartWhenAvailable: true,
			AllowStartOnDemand: true,
			Enabled:            true,
			// The night has its own budgets; PT0S is "no limit", as
			// TimeoutStartSec=infinity for systemd.
			ExecutionTimeLimit: "PT0S",
		},
		Actions: taskActions{Context: "Author", Exec: taskExec{
			Command:          j.bin,
			Arguments:        command.JoinArgs(args),
			WorkingDirectory: j.dir,
		}},
	}
}

// marshalTask writes the task document (as UTF-8 text; Apply encodes it).
func marshalTask(t taskXML) ([]byte, error) {
	body, err := xml.MarshalIndent(t, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("install: task XML: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-16"?>` + "\n")
	b.Write(body)
	b.WriteString("\n")
	return b.Bytes(), nil
}

// utf16LE encodes text as UTF-16LE with a byte-order mark: the encoding
// Task Scheduler exports its tasks in, and the one its XML declaration
// names.
func utf16LE(text []byte) []byte {
	units := utf16.Encode([]rune(string(text)))
	out := make([]byte, 0, 2+2*len(units))
	out = append(out, 0xFF, 0xFE)
	for _, u := range units {
		out = append(out, byte(u), byte(u>>8))
	}
	return out
}
