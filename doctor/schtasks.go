package doctor

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/nightwatch-dev/nightwatch/install"
	"github.com/nightwatch-dev/nightwatch/internal/command"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

const schtasksTitle = "Task Scheduler task"

// schtasks checks the Task Scheduler tasks `nightwatch install schtasks`
// wrote (the XML kept in %USERPROFILE%\AppData\Local\nightwatch\schtasks)
// as the launchd and systemd entries are checked: a fail-open or hook-off
// switch in the command line, a binary or batch file that is not there any
// more, a secret written into it. Task Scheduler keeps its own copy of a
// registered task; an edit made in its window afterwards is not seen here
// (`schtasks /Query /XML /TN \nightwatch\<name>` shows it).
func (e *env) schtasks(ctx context.Context) []Check {
	files := globFiles(install.SchtasksDir(e.Home), "*.xml")
	if len(files) == 0 {
		return nil
	}
	var out []Check
	add := func(id string, level Level, detail, fix string) {
		title := schtasksTitle
		switch id {
		case "fail-open":
			title = failOpenTitle
		case "hooks-off":
			title = hooksOffTitle
		}
		out = append(out, Check{ID: id, Title: title, Level: level, Detail: detail, Fix: fix})
	}
	reinstall := "fix the batch, then run `nightwatch install schtasks FILE` again (it replaces the task)"
	for _, p := range files {
		execs, err := readTaskXML(p)
		if err != nil {
			add("schtasks", Warn, fmt.Sprintf("cannot read task %s: %v", p, err), "reinstall it: nightwatch install schtasks FILE")
			continue
		}
		if queryRegistered {
			// What Task Scheduler runs is its own copy: read it back.
			name := install.SchtasksName(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "nightwatch-"), ".xml"))
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			data, err := queryTask(qctx, name)
			cancel()
			var registered []taskExec
			if err == nil {
				registered, err = parseTaskXML(data)
			}
			switch {
			case err != nil:
				add("schtasks", Warn, fmt.Sprintf("%s is there but the task %s cannot be read back from Task Scheduler: %v (not registered?)", p, name, err),
					"register it again: nightwatch install schtasks FILE")
			case !slices.Equal(registered, execs):
				add("schtasks", Warn, fmt.Sprintf("the registered task %s runs something else than %s (edited in Task Scheduler?); the registered one is checked", name, p),
					"reinstall it: nightwatch install schtasks FILE")
				execs, p = registered, name
			}
		}
		for _, x := range execs {
			line := x.Command + " " + x.Arguments
			args := command.SplitCommandLine(x.Arguments)
			if failOpenCommand(line) {
				add("fail-open", Fail, p+": the task's command line turns fail-open on: "+line+" (the hook lets every call through to dead servers)",
					"remove --fail-open / the fail-open variable: "+reinstall)
			}
			if slices.Contains(args, "--bare") || hooksOffAssign.MatchString(line) {
				add("hooks-off", Fail, p+": the task's command line switches Claude Code's hooks off: "+line+" (nightwatch neither blocks nor learns)",
					"remove --bare / the variable: "+reinstall)
			}
			if secretInCommand(line) {
				add("schtasks", Fail, p+": the task's command line holds a secret value (a task is readable by backup tools and `schtasks /Query`)",
					"put the value in the batch's env_file, then: "+reinstall)
			}
			if x.Command == "" {
				add("schtasks", Fail, p+": the task has no command", reinstall)
			} else if fi, err := os.Stat(x.Command); err != nil || !fi.Mode().IsRegular() {
				add("schtasks", Fail, fmt.Sprintf("%s: the task runs %s, which is not there (moved or uninstalled?): the night will not start", p, x.Command),
					"reinstall from the nightwatch you use now: nightwatch install schtasks FILE")
			}
			if i := slices.Index(args, "run"); i >= 0 && i+1 < len(args) {
				batch := args[i+1]
				if !filepath.IsAbs(batch) && x.WorkingDirectory != "" {
					batch = filepath.Join(x.WorkingDirectory, batch)
				}
				if _, err := os.Stat(batch); err != nil {
					add("schtasks", Fail, fmt.Sprintf("%s: the task's batch file %s is not there: the night will fail at once", p, batch),
						"restore it, or remove the task: nightwatch uninstall schtasks FILE (or schtasks /Delete /TN <name> /F)")
				}
			}
		}
	}
	if len(out) == 0 {
		out = append(out, ok("schtasks", schtasksTitle, fmt.Sprintf("%d task file(s) in %s: binary and batch present, no switch or secret", len(files), install.SchtasksDir(e.Home))))
	}
	return out
}

// queryRegistered says whether doctor reads each task back from Task
// Scheduler (only Windows has one); queryTask does it. Tests replace both.
var (
	queryRegistered = runtime.GOOS == "windows"
	queryTask       = func(ctx context.Context, name string) ([]byte, error) {
		res, err := proc.Run(ctx, proc.Spec{Argv: []string{"schtasks", "/Query", "/XML", "/TN", name}, Grace: time.Second})
		if err != nil {
			return nil, fmt.Errorf("schtasks /Query: %w", err)
		}
		return res.Stdout, nil
	}
)

// hooksOffAssign finds an inline assignment of a hook-off variable
// (`set CLAUDE_CODE_SIMPLE=1&& …` in a cmd.exe command line).
var hooksOffAssign = regexp.MustCompile(`\b(?:` + strings.Join(hooksOffEnv, "|") + `)=("[^"]*"|\S*)`)

// assign finds NAME=value words, for the secret check.
var assign = regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)`)

// secretInCommand reports a command line with a value that looks secret:
// one the redactor would hide, or an assignment to a sensitive name.
func secretInCommand(line string) bool {
	if redact.String(line) != line {
		return true
	}
	for _, m := range assign.FindAllStringSubmatch(line, -1) {
		if redact.SensitiveName(m[1]) && !slices.Contains(knobs.EnvFailOpen, m[1]) && strings.Trim(m[2], `"`) != "" {
			return true
		}
	}
	return false
}

// taskExec is one Actions/Exec of a task.
type taskExec struct {
	Command          string `xml:"Command"`
	Arguments        string `xml:"Arguments"`
	WorkingDirectory string `xml:"WorkingDirectory"`
}

// readTaskXML reads the Exec actions of a task file, in UTF-16 (with a
// byte-order mark, as install and Task Scheduler write it) or UTF-8.
func readTaskXML(path string) ([]taskExec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseTaskXML(data)
}

// parseTaskXML reads the Exec actions of a task document: UTF-16 with a
// byte-order mark, UTF-16LE without one (as a console program may write
// it), or UTF-8.
func parseTaskXML(data []byte) ([]taskExec, error) {
	if len(data) >= 2 && data[0] == '<' && data[1] == 0 {
		data = append([]byte{0xFF, 0xFE}, data...)
	}
	if bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) {
		if len(data)%2 != 0 {
			return nil, fmt.Errorf("odd length for UTF-16")
		}
		be := data[0] == 0xFE
		units := make([]uint16, 0, len(data)/2-1)
		for i := 2; i < len(data); i += 2 {
			u := uint16(data[i]) | uint16(data[i+1])<<8
			if be {
				u = uint16(data[i])<<8 | uint16(data[i+1])
			}
			units = append(units, u)
		}
		data = []byte(string(utf16.Decode(units)))
	}
	var task struct {
		Actions struct {
			Exec []taskExec `xml:"Exec"`
		} `xml:"Actions"`
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	// The text is UTF-8 now, whatever the declaration says.
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	if err := dec.Decode(&task); err != nil {
		return nil, err
	}
	for i := range task.Actions.Exec {
		x := &task.Actions.Exec[i]
		x.Command = strings.TrimSpace(x.Command)
		x.Arguments = strings.TrimSpace(x.Arguments)
		x.WorkingDirectory = strings.TrimSpace(x.WorkingDirectory)
	}
	return task.Actions.Exec, nil
}
