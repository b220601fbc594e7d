package install

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// A cluster's worker (`nightwatch worker FILE`) is not a night: it is a
// long-lived process that must be up before and during the night, taking
// the night's attempts from the shared queue. Each scheduler gets it as
// its own entry, beside the night's (a host may run both), kept running
// where the scheduler can: a systemd service that restarts, a launchd
// agent kept alive, a Task Scheduler task started at logon and restarted
// on failure; cron can only start it at boot.

// WorkerOptions install the batch's worker instead of its night. Its
// entry has its own name, so the night's entry beside it is untouched.
type WorkerOptions struct {
	Labels      []string // the worker's --label flags
	MaxParallel int      // its --max-parallel; 0 = the batch's max_parallel
}

// labelRe is a worker label: a host label as a job's hosts: names it
// (1–128 letters, digits, '.', '_', '-'), and not starting with '-', which
// would read as a flag in the worker's command line.
var labelRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._-]{0,127}$`) })

// checkWorker refuses a worker the batch cannot have.
func checkWorker(w *WorkerOptions) error {
	for _, l := range w.Labels {
		if !labelRe().MatchString(l) || strings.Contains(l, "..") || l == "." {
			return fmt.Errorf("install: worker label %q: a label is 1–128 letters, digits, '.', '_' or '-', not starting with '-', without \"..\" (as a job's hosts: names it)", l)
		}
	}
	if w.MaxParallel < 0 {
		return fmt.Errorf("install: worker --max-parallel %d: must be at least 1 (or unset for the batch's max_parallel)", w.MaxParallel)
	}
	return nil
}

// errNoCluster is the refusal of a worker for a batch that runs on one
// host.
func errNoCluster(file string) error {
	return fmt.Errorf("install: %s has no cluster: section: a worker takes the attempts of a night that runs over several hosts; add `cluster: {database_env: NIGHTWATCH_DATABASE_URL}` to it, or install the night without --worker", file)
}

// workerArgs are the worker's arguments after the binary.
func (j *job) workerArgs() []string {
	args := []string{"worker", j.file}
	for _, l := range j.worker.Labels {
		args = append(args, "--label", l)
	}
	if j.worker.MaxParallel > 0 {
		args = append(args, "--max-parallel", strconv.Itoa(j.worker.MaxParallel))
	}
	return args
}

// The worker's entry names. Each is the night's with a suffix, so that
// `systemctl --user status`, `launchctl print` and the Task Scheduler
// window show the two side by side; doctor's globs (nightwatch-*.service,
// dev.nightwatch.*.plist, schtasks\nightwatch-*.xml) find them as well.

func systemdWorkerUnit(name string) string { return "nightwatch-" + name + "-worker.service" }

func systemdWorkerPath(home, name string) string {
	return filepath.Join(home, ".config", "systemd", "user", systemdWorkerUnit(name))
}

func launchdWorkerLabel(name string) string { return launchdLabel(name) + ".worker" }

func plistWorkerPath(home, name string) string {
	return filepath.Join(home, "Library", "LaunchAgents", launchdWorkerLabel(name)+".plist")
}

// cronWorkerMarker ends the worker's crontab line. It is never a suffix of
// a night's marker nor the reverse ("# nightwatch:" vs "# nightwatch-worker:",
// and a batch name holds no '#' or ' '), so updating one leaves the other.
func cronWorkerMarker(name string) string { return "# nightwatch-worker:" + name }

// SchtasksWorkerName is the task name of a batch's worker:
// \nightwatch\<name>.worker.
func SchtasksWorkerName(name string) string { return SchtasksName(name + ".worker") }

func schtasksWorkerXMLPath(home, name string) string { return schtasksXMLPath(home, name+".worker") }

// planWorkerEntry plans the worker's entry on kind's scheduler.
func planWorkerEntry(kind Kind, j *job, uid int) (*Plan, error) {
	switch kind {
	case Launchd:
		return planLaunchdWorker(j, uid)
	case Systemd:
		return planSystemdWorker(j)
	case Cron:
		return planCronWorker(j)
	default:
		return planSchtasksWorker(j)
	}
}

// planSystemdWorker writes a user service that systemd keeps running: no
// timer, enabled into default.target so the user manager starts it (at
// boot with lingering). restart makes a running worker take a changed
// unit.
func planSystemdWorker(j *job) (*Plan, error) {
	for _, p := range []string{j.bin, j.file, j.dir, j.logDir} {
		if strings.ContainsAny(p, "\n") {
			return nil, fmt.Errorf("install: %q: a path with a newline cannot go into a unit file", p)
		}
	}
	unit := systemdWorkerUnit(j.name)
	return &Plan{
		Files: []File{{Path: systemdWorkerPath(j.home, j.name), Mode: fileMode, Content: []byte(workerServiceUnit(j))}},
		Commands: [][]string{
			{"systemctl", "--user", "daemon-reload"},
			{"systemctl", "--user", "enable", "--now", unit},
			{"systemctl", "--user", "restart", unit},
		},
		Notes: []string{
			"a user service runs only while your user manager runs: run `loginctl enable-linger` once so the worker starts at boot and keeps running while you are logged out",
			"the worker's status and restarts: systemctl --user status " + unit,
		},
	}, nil
}

func workerServiceUnit(j *job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Unit]\nDescription=nightwatch worker of batch %s\n", j.name)
	b.WriteString("\n[Service]\nType=simple\n")
	words := []string{quoteUnit(specifierEscape(j.bin))}
	for _, a := range j.workerArgs() {
		words = append(words, execArg(a))
	}
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(words, " "))
	fmt.Fprintf(&b, "WorkingDirectory=%s\n", specifierEscape(j.dir))
	for _, e := range j.env {
		fmt.Fprintf(&b, "Environment=%s\n", quoteUnit(specifierEscape(e.name+"="+e.value)))
	}
	fmt.Fprintf(&b, "StandardOutput=append:%s\n", specifierEscape(filepath.Join(j.logDir, "worker.out.log")))
	fmt.Fprintf(&b, "StandardError=append:%s\n", specifierEscape(filepath.Join(j.logDir, "worker.err.log")))
	// A worker that exits with an error (its database unreachable at
	// start: exit 2) comes back; one stopped by SIGTERM exits 0 and stays
	// stopped. 10 s apart keeps it under systemd's start limit (5 in 10 s).
	b.WriteString("Restart=on-failure\nRestartSec=10\n")
	// SIGTERM ends the worker's sessions as "stopped" so they run again
	// elsewhere; the default 90 s is close, 60 s is what the worker is
	// given before SIGKILL ends them as crashes.
	b.WriteString("TimeoutStopSec=60\n")
	b.WriteString("\n[Install]\nWantedBy=default.target\n")
	return b.String()
}

// planLaunchdWorker writes a LaunchAgent that launchd starts when it is
// loaded (install, login) and starts again whenever it exits.
func planLaunchdWorker(j *job, uid int) (*Plan, error) {
	path := plistWorkerPath(j.home, j.name)
	label := launchdWorkerLabel(j.name)
	domain := "gui/" + strconv.Itoa(uid)
	return &Plan{
		Files:    []File{{Path: path, Mode: fileMode, Content: buildWorkerPlist(j, label)}},
		Prepare:  [][]string{{"launchctl", "bootout", domain + "/" + label}},
		Commands: [][]string{{"launchctl", "bootstrap", domain, path}},
		Notes: []string{
			"a LaunchAgent runs in your login session: the worker runs while you are logged in (on a dedicated worker Mac, turn on automatic login)",
			"the worker's status: launchctl print " + domain + "/" + label,
		},
	}, nil
}

func buildWorkerPlist(j *job, label string) []byte {
	w := &plistWriter{}
	w.WriteString(xml.Header)
	w.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	w.WriteString(`<plist version="1.0">` + "\n")
	w.open("dict")
	w.keyString("Label", label)
	w.elem("key", "ProgramArguments")
	w.open("array")
	for _, a := range append([]string{j.bin}, j.workerArgs()...) {
		w.elem("string", a)
	}
	w.close("array")
	w.keyString("WorkingDirectory", j.dir)
	w.elem("key", "EnvironmentVariables")
	w.open("dict")
	for _, e := range j.env {
		w.keyString(e.name, e.value)
	}
	w.close("dict")
	w.keyString("StandardOutPath", filepath.Join(j.logDir, "worker.out.log"))
	w.keyString("StandardErrorPath", filepath.Join(j.logDir, "worker.err.log"))
	// The worker must be up before the night: started when the agent is
	// loaded, and again whenever it exits (bootout stops it for good).
	w.elem("key", "RunAtLoad")
	w.indent()
	w.WriteString("<true/>\n")
	w.elem("key", "KeepAlive")
	w.indent()
	w.WriteString("<true/>\n")
	// At most one restart every 10 s, as systemd's RestartSec.
	w.elem("key", "ThrottleInterval")
	w.elem("integer", "10")
	// launchd sends SIGTERM and kills after 20 s by default; the worker's
	// sessions need time to end "stopped", as TimeoutStopSec=60.
	w.elem("key", "ExitTimeOut")
	w.elem("integer", "60")
	w.close("dict")
	w.WriteString("</plist>\n")
	return w.Bytes()
}

// planCronWorker writes an @reboot line: cron has no way to keep a process
// running, so it only starts the worker at boot. robfig/cron does not read
// @reboot (the daemon never runs it); the line is written, not parsed.
func planCronWorker(j *job) (*Plan, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "mkdir -p %s && cd %s &&", text.ShellQuote(j.logDir), text.ShellQuote(j.dir))
	for _, e := range j.env {
		fmt.Fprintf(&b, " %s=%s", e.name, text.ShellQuote(e.value))
	}
	b.WriteString(" " + text.ShellQuote(j.bin))
	for _, a := range j.workerArgs() {
		b.WriteString(" " + text.ShellQuote(a))
	}
	fmt.Fprintf(&b, " >> %s 2>&1", text.ShellQuote(filepath.Join(j.logDir, "worker.log")))
	return &Plan{
		CrontabMarker: cronWorkerMarker(j.name),
		CrontabLine:   "@reboot " + cronEscape(b.String()) + " " + cronWorkerMarker(j.name),
		Notes: []string{
			"the crontab is kept by cron, readable by you and root only",
			"cron starts the worker at boot only: it is not running now (start it by hand this once), and cron will not restart it if it dies; prefer systemd or launchd, which keep it running",
		},
	}, nil
}

// planSchtasksWorker writes a task started at the user's logon (the
// principal is the interactive user: a boot trigger would need a stored
// password) and restarted by Task Scheduler when a run fails. /End first
// stops a running worker so that the one /Run starts takes the new task.
func planSchtasksWorker(j *job) (*Plan, error) {
	if err := schtasksPaths(j); err != nil {
		return nil, err
	}
	name := SchtasksWorkerName(j.name)
	t := baseTaskXML(j, "nightwatch worker of batch "+j.name+" ("+j.file+")", name, j.workerArgs())
	t.Triggers = taskTriggers{Logon: []logonTrigger{{Enabled: true, UserID: j.winUser}}}
	t.Settings.StartWhenAvailable = false // a logon trigger has no missed start
	t.Settings.RestartOnFailure = &taskRestart{Interval: "PT1M", Count: 999}
	content, err := marshalTask(t)
	if err != nil {
		return nil, err
	}
	path := schtasksWorkerXMLPath(j.home, j.name)
	p := &Plan{
		Files:   []File{{Path: path, Mode: fileMode, Content: content, UTF16: true}},
		Prepare: [][]string{{"schtasks", "/End", "/TN", name}},
		Commands: [][]string{
			{"schtasks", "/Create", "/XML", path, "/TN", name, "/F"},
			{"schtasks", "/Run", "/TN", name},
		},
		Notes: []string{
			"Task Scheduler has no per-task environment: the worker runs with your user's environment variables, and `nightwatch worker` reads the batch's env and env_file itself",
			"the worker starts at your logon and runs while you are logged on (LogonType InteractiveToken, no password stored); Task Scheduler restarts it every minute after a run it counts as failed, but may not count a worker's own error exit as one: check it with schtasks /Query /TN " + name,
			"the task's output is not captured: the worker's sessions log under " + j.logDir,
		},
	}
	if j.winUser == "" {
		p.Notes = append(p.Notes, "USERNAME is not set: the logon trigger names no user, which Task Scheduler lets only an administrator register")
	}
	if nc := notCarried(j); nc != "" {
		p.Notes = append(p.Notes, nc)
	}
	return p, nil
}

// notANight refuses to take over, or remove, the entry of another batch's
// night. The worker's names are the night's with a suffix a batch name may
// also end in: the worker of "x" and the night of a batch "x-worker"
// (systemd) or "x.worker" (launchd, Task Scheduler) share one file. A
// night's entry has a calendar, a worker's never has.
func notANight(kind Kind, home, name string) error {
	var path string
	var night []byte
	switch kind {
	case Launchd:
		path, night = plistWorkerPath(home, name), []byte("<key>StartCalendarInterval</key>")
	case Systemd:
		path, night = systemdWorkerPath(home, name), []byte("\nType=oneshot\n")
	case Schtasks:
		// The file is UTF-16LE; the element, encoded the same, without
		// the byte-order mark.
		path, night = schtasksWorkerXMLPath(home, name), utf16LE([]byte("<CalendarTrigger>"))[2:]
	default:
		return nil // cron's worker marker is never a night's
	}
	data, err := atomicfile.Read(path, 1<<20)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("install: %w", err)
	case bytes.Contains(data, night):
		return fmt.Errorf("install: %s is the night of another batch, not the worker of %s: the two share this name; rename one of the batches", path, name)
	}
	return nil
}

// planUninstallWorker fills p with what removes the worker's entry, and
// only it: the night's entry beside it stays.
func planUninstallWorker(p *Plan, home, name string, uid int) error {
	if err := notANight(p.Kind, home, name); err != nil {
		return err
	}
	switch p.Kind {
	case Launchd:
		p.Prepare = [][]string{{"launchctl", "bootout", fmt.Sprintf("gui/%d/%s", uid, launchdWorkerLabel(name))}}
		p.Remove = []string{plistWorkerPath(home, name)}
	case Systemd:
		p.Prepare = [][]string{{"systemctl", "--user", "disable", "--now", systemdWorkerUnit(name)}}
		p.Remove = []string{systemdWorkerPath(home, name)}
		p.Commands = [][]string{{"systemctl", "--user", "daemon-reload"}}
	case Cron:
		p.CrontabMarker = cronWorkerMarker(name)
		p.Notes = append(p.Notes, "a worker cron started at boot keeps running until it is stopped (kill its process) or the host reboots")
	case Schtasks:
		// /End stops the running worker; /Delete alone would leave it.
		p.Prepare = [][]string{{"schtasks", "/End", "/TN", SchtasksWorkerName(name)}, {"schtasks", "/Delete", "/TN", SchtasksWorkerName(name), "/F"}}
		p.Remove = []string{schtasksWorkerXMLPath(home, name)}
	}
	return nil
}
