package install

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strconv"
)

func launchdLabel(name string) string { return "dev.nightwatch." + name }

func plistPath(home, name string) string {
	return filepath.Join(home, "Library", "LaunchAgents", launchdLabel(name)+".plist")
}

// planLaunchd writes a LaunchAgent and loads it into the user's GUI domain.
// bootout first: bootstrap refuses a label that is already loaded, and a
// reinstall must pick up the new file.
func planLaunchd(j *job, uid int) (*Plan, error) {
	intervals, err := j.sched.launchdIntervals()
	if err != nil {
		return nil, err
	}
	path := plistPath(j.home, j.name)
	content := buildPlist(j, intervals)
	domain := "gui/" + strconv.Itoa(uid)
	return &Plan{
		Files:    []File{{Path: path, Mode: fileMode, Content: content}},
		Prepare:  [][]string{{"launchctl", "bootout", domain + "/" + j.label}},
		Commands: [][]string{{"launchctl", "bootstrap", domain, path}},
	}, nil
}

// plistWriter emits property-list XML; every string goes through
// xml.EscapeText so a path with "&" or "<" stays a valid document.
type plistWriter struct {
	bytes.Buffer
	depth int
}

func (w *plistWriter) indent() {
	for range w.depth {
		w.WriteByte('\t')
	}
}

func (w *plistWriter) elem(tag, text string) {
	w.indent()
	fmt.Fprintf(w, "<%s>", tag)
	_ = xml.EscapeText(w, []byte(text)) // writes to a bytes.Buffer: no error
	fmt.Fprintf(w, "</%s>\n", tag)
}

func (w *plistWriter) open(tag string) {
	w.indent()
	fmt.Fprintf(w, "<%s>\n", tag)
	w.depth++
}

func (w *plistWriter) close(tag string) {
	w.depth--
	w.indent()
	fmt.Fprintf(w, "</%s>\n", tag)
}

func (w *plistWriter) keyString(k, v string) { w.elem("key", k); w.elem("string", v) }

// calendarKeys is the order of a StartCalendarInterval dict's keys.
var calendarKeys = []string{"Month", "Day", "Weekday", "Hour", "Minute"}

func buildPlist(j *job, intervals []map[string]int) []byte {
	w := &plistWriter{}
	w.WriteString(xml.Header)
	w.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	w.WriteString(`<plist version="1.0">` + "\n")
	w.open("dict")
	w.keyString("Label", j.label)
	w.elem("key", "ProgramArguments")
	w.open("array")
	for _, a := range []string{j.bin, "run", j.file} {
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
	w.keyString("StandardOutPath", filepath.Join(j.logDir, "launchd.out.log"))
	w.keyString("StandardErrorPath", filepath.Join(j.logDir, "launchd.err.log"))
	w.elem("key", "StartCalendarInterval")
	// One dict when one entry suffices, as launchd.plist(5) shows it;
	// an array of dicts otherwise.
	if len(intervals) > 1 {
		w.open("array")
	}
	for _, iv := range intervals {
		w.open("dict")
		for _, k := range calendarKeys {
			if v, ok := iv[k]; ok {
				w.elem("key", k)
				w.elem("integer", strconv.Itoa(v))
			}
		}
		w.close("dict")
	}
	if len(intervals) > 1 {
		w.close("array")
	}
	// The night starts at its time, not whenever the agent is loaded
	// (login, install).
	w.elem("key", "RunAtLoad")
	w.indent()
	w.WriteString("<false/>\n")
	w.close("dict")
	w.WriteString("</plist>\n")
	return w.Bytes()
}
