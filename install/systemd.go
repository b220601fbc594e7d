package install

import (
	"fmt"
	"path/filepath"
	"strings"
)

func systemdPaths(home, name string) (service, timer string) {
	dir := filepath.Join(home, ".config", "systemd", "user")
	return filepath.Join(dir, "nightwatch-"+name+".service"), filepath.Join(dir, "nightwatch-"+name+".timer")
}

// planSystemd writes a oneshot service and the timer that starts it.
// enable --now starts the timer; restart makes an already running timer
// take a changed schedule.
func planSystemd(j *job) (*Plan, error) {
	for _, p := range []string{j.bin, j.file, j.dir, j.logDir} {
		if strings.ContainsAny(p, "\n") {
			return nil, fmt.Errorf("install: %q: a path with a newline cannot go into a unit file", p)
		}
	}
	svcPath, tmrPath := systemdPaths(j.home, j.name)
	timer := filepath.Base(tmrPath)
	return &Plan{
		Files: []File{
			{Path: svcPath, Mode: fileMode, Content: []byte(serviceUnit(j))},
			{Path: tmrPath, Mode: fileMode, Content: []byte(timerUnit(j))},
		},
		Commands: [][]string{
			{"systemctl", "--user", "daemon-reload"},
			{"systemctl", "--user", "enable", "--now", timer},
			{"systemctl", "--user", "restart", timer},
		},
		Notes: []string{
			"a user timer fires only while your user manager runs: run `loginctl enable-linger` once so the night runs while you are logged out",
		},
	}, nil
}

func serviceUnit(j *job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Unit]\nDescription=nightwatch batch %s\n", j.name)
	b.WriteString("\n[Service]\nType=oneshot\n")
	// The executable word gets no $VAR substitution (systemd-analyze
	// verify looks for a literal "$$" in it), the arguments do.
	fmt.Fprintf(&b, "ExecStart=%s %s %s\n", quoteUnit(specifierEscape(j.bin)), execArg("run"), execArg(j.file))
	fmt.Fprintf(&b, "WorkingDirectory=%s\n", specifierEscape(j.dir))
	for _, e := range j.env {
		fmt.Fprintf(&b, "Environment=%s\n", quoteUnit(specifierEscape(e.name+"="+e.value)))
	}
	fmt.Fprintf(&b, "StandardOutput=append:%s\n", specifierEscape(filepath.Join(j.logDir, "systemd.out.log")))
	fmt.Fprintf(&b, "StandardError=append:%s\n", specifierEscape(filepath.Join(j.logDir, "systemd.err.log")))
	// A oneshot's start lasts its whole run: the default start timeout
	// (90s) would kill the night.
	b.WriteString("TimeoutStartSec=infinity\n")
	return b.String()
}

func timerUnit(j *job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Unit]\nDescription=nightwatch batch %s on its schedule\n\n[Timer]\n", j.name)
	for _, c := range j.sched.onCalendar() {
		fmt.Fprintf(&b, "OnCalendar=%s\n", c)
	}
	// A night missed while the machine was off runs when it is back.
	b.WriteString("Persistent=true\n")
	fmt.Fprintf(&b, "Unit=nightwatch-%s.service\n\n[Install]\nWantedBy=timers.target\n", j.name)
	return b.String()
}

// specifierEscape doubles "%": systemd expands %h, %u… in these settings.
func specifierEscape(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// quoteUnit double-quotes a value for systemd's word splitting.
func quoteUnit(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// execArg quotes one ExecStart word; "$" is doubled because ExecStart
// substitutes $VAR.
func execArg(s string) string {
	return quoteUnit(strings.ReplaceAll(specifierEscape(s), "$", "$$"))
}
