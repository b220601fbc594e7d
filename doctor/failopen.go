package doctor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/claudesettings"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/traps"
)

const failOpenTitle = "fail-open"

// failOpen looks for fail-open everywhere the night could pick it up: the
// article's hook ran all night blocking nothing because
// ECC_MCP_HEALTH_FAIL_OPEN=1 was left in a launchd plist.
func (e *env) failOpen(context.Context) []Check {
	var out []Check
	found := func(where, detail, fix string) {
		out = append(out, Check{ID: "fail-open", Title: failOpenTitle, Level: Fail,
			Detail: where + ": " + detail + " (the hook lets every call through to dead servers)", Fix: fix})
	}
	for _, fv := range traps.FailOpenVars(e.Getenv) {
		if fv.On {
			found("environment", fmt.Sprintf("%s=%s", fv.Name, fv.Value), fmt.Sprintf("unset %s (and remove it from your shell profile)", fv.Name))
		}
	}
	if e.batch != nil && e.batch.FailOpen {
		found(e.batch.File, "fail_open: true", "remove `fail_open: true` from "+e.batch.File)
	}
	for _, p := range globFiles(e.LaunchAgentsDir, "*.plist") {
		vars, args, err := readPlist(p)
		if err != nil {
			out = append(out, Check{ID: "fail-open", Title: failOpenTitle, Level: Warn,
				Detail: fmt.Sprintf("cannot read launchd plist %s: %v", p, err), Fix: "check it with: plutil -lint " + p})
			continue
		}
		for _, fv := range traps.FailOpenVars(traps.MapLookup(vars, asString)) {
			if fv.On {
				found(p, fmt.Sprintf("EnvironmentVariables sets %s=%s", fv.Name, fv.Value),
					fmt.Sprintf("delete the <key>%s</key> entry from %s, then: launchctl unload %s && launchctl load %s", fv.Name, p, p, p))
			}
		}
		if slices.Contains(args, "--fail-open") {
			found(p, "ProgramArguments has --fail-open", "delete --fail-open from ProgramArguments in "+p+", then reload it with launchctl")
		}
	}
	for _, p := range globFiles(e.SystemdUserDir, "*.service") {
		for _, fv := range traps.FailOpenVars(traps.MapLookup(systemdEnv(p), asString)) {
			if fv.On {
				found(p, fmt.Sprintf("Environment=%s=%s", fv.Name, fv.Value),
					fmt.Sprintf("delete %s from the Environment= line of %s, then: systemctl --user daemon-reload", fv.Name, p))
			}
		}
	}
	for _, sf := range e.settingsFiles() {
		s, err := readSettings(sf.path)
		if err != nil || s == nil {
			continue // unreadable settings are the hooks check's finding
		}
		for _, fv := range traps.FailOpenVars(traps.MapLookup(s.Env, func(v any) string { return fmt.Sprint(v) })) {
			if fv.On {
				found(sf.path, fmt.Sprintf(`"env" sets %s=%s`, fv.Name, fv.Value), fmt.Sprintf(`delete %q from the "env" object of %s`, fv.Name, sf.path))
			}
		}
		for _, h := range s.commands() {
			if failOpenCommand(h.command) {
				found(sf.path, fmt.Sprintf("%s hook command %q turns fail-open on", h.event, h.command),
					fmt.Sprintf("remove --fail-open / the fail-open variable from that command in %s", sf.path))
			}
		}
	}
	if len(out) == 0 {
		out = append(out, ok("fail-open", failOpenTitle, "not set anywhere"))
	}
	return out
}

func truthy(v string) bool { b, _ := knobs.ParseBool(v); return b }

func asString(s string) string { return s }

var failOpenAssign = regexp.MustCompile(`\b(?:NIGHTWATCH_FAIL_OPEN|ECC_MCP_HEALTH_FAIL_OPEN)=("[^"]*"|'[^']*'|\S*)`)

// failOpenCommand reports a hook command line that turns fail-open on: a
// --fail-open flag or an inline VAR=1 assignment.
func failOpenCommand(cmd string) bool {
	if slices.Contains(strings.Fields(cmd), "--fail-open") {
		return true
	}
	for _, m := range failOpenAssign.FindAllStringSubmatch(cmd, -1) {
		if truthy(strings.Trim(m[1], `"'`)) {
			return true
		}
	}
	return false
}

func globFiles(dir, pattern string) []string {
	matches, _ := filepath.Glob(filepath.Join(dir, pattern))
	return matches
}

// readPlist returns a launchd plist's EnvironmentVariables and
// ProgramArguments. It reads the XML itself (no plutil on Linux): the
// top-level dict is walked key by key and other values are skipped.
func readPlist(path string) (vars map[string]string, args []string, err error) {
	data, err := atomicfile.Read(path, maxUnitSize)
	if err != nil {
		return nil, nil, err
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = false // DOCTYPE and friends are fine
	vars = map[string]string{}
	depth := 0 // element depth; the top-level dict is at 2 (plist > dict)
	key := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return vars, args, nil
		}
		if err != nil {
			return nil, nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth != 3 {
				continue
			}
			switch {
			case t.Name.Local == "key":
				err = dec.DecodeElement(&key, &t)
				key = strings.TrimSpace(key)
				depth--
			case key == "EnvironmentVariables" && t.Name.Local == "dict":
				vars, err = stringDict(dec)
				depth--
			case key == "ProgramArguments" && t.Name.Local == "array":
				args, err = stringArray(dec)
				depth--
			}
			if err != nil {
				return nil, nil, err
			}
		case xml.EndElement:
			depth--
		}
	}
}

// stringDict reads <key>K</key><string>V</string> pairs up to </dict>.
func stringDict(dec *xml.Decoder) (map[string]string, error) {
	out := map[string]string{}
	key := ""
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			var s string
			if err := dec.DecodeElement(&s, &t); err != nil {
				return nil, err
			}
			if t.Name.Local == "key" {
				key = strings.TrimSpace(s)
			} else if key != "" {
				out[key] = strings.TrimSpace(s) // <true/> reads as ""
				if t.Name.Local == "true" {
					out[key] = "true"
				}
				key = ""
			}
		case xml.EndElement:
			return out, nil
		}
	}
}

// stringArray reads <string> items up to </array>.
func stringArray(dec *xml.Decoder) ([]string, error) {
	var out []string
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			var s string
			if err := dec.DecodeElement(&s, &t); err != nil {
				return nil, err
			}
			out = append(out, strings.TrimSpace(s))
		case xml.EndElement:
			return out, nil
		}
	}
}

// systemdEnv reads the Environment= lines of a unit: each holds
// space-separated NAME=VALUE words, a word optionally in double quotes.
func systemdEnv(path string) map[string]string {
	out := map[string]string{}
	data, err := atomicfile.Read(path, maxUnitSize)
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, isEnv := strings.CutPrefix(line, "Environment=")
		if !isEnv {
			continue
		}
		for _, word := range unitWords(rest) {
			if name, v, ok := strings.Cut(word, "="); ok {
				out[name] = v
			}
		}
	}
	return out
}

// unitWords splits a systemd value at blanks outside double quotes.
func unitWords(s string) []string {
	var words []string
	var w strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// settings is the part of a Claude Code settings file the doctor reads.
type settings struct {
	Env   map[string]any         `json:"env"`
	Hooks map[string][]hookMatch `json:"hooks"`
	// DisableAllHooks turns every hook off, nightwatch's included.
	DisableAllHooks bool `json:"disableAllHooks"`
	// AllowManagedHooksOnly (honoured in managed settings) runs only the
	// hooks of the managed settings.
	AllowManagedHooksOnly bool `json:"allowManagedHooksOnly"`
}

type hookMatch struct {
	Matcher string `json:"matcher"`
	Hooks   []struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		// Timeout is the hook's timeout in seconds (nil: Claude Code's
		// default, 600 s).
		Timeout *float64 `json:"timeout"`
	} `json:"hooks"`
}

type hookCommand struct {
	event, matcher, command string
	timeout                 *float64
}

func (s *settings) commands() []hookCommand {
	var out []hookCommand
	for event, ms := range s.Hooks {
		for _, m := range ms {
			for _, h := range m.Hooks {
				out = append(out, hookCommand{event, m.Matcher, h.Command, h.Timeout})
			}
		}
	}
	return out
}

// settingsFile is one Claude Code settings file and whether it is seen by
// every session (the user's and the managed ones) or by one project's.
type settingsFile struct {
	path    string
	user    bool
	managed bool
}

// envClaudeConfigDir moves Claude Code's user folder (~/.claude, which holds
// settings.json) and its ~/.claude.json (to <dir>/.claude.json).
const envClaudeConfigDir = "CLAUDE_CONFIG_DIR"

// claudeConfigDirs are the user folders Claude Code reads settings from:
// CLAUDE_CONFIG_DIR (the operator's, then the batch's when it sets another)
// or ~/.claude.
func (e *env) claudeConfigDirs() []string {
	var dirs []string
	if d, ok := e.Getenv(envClaudeConfigDir); ok && d != "" {
		dirs = append(dirs, d)
	} else {
		dirs = append(dirs, filepath.Join(e.Home, ".claude"))
	}
	if e.batch != nil {
		if d := e.batch.Env[envClaudeConfigDir]; d != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// managedSettingsDir is where Claude Code reads the organisation's managed
// settings on this OS.
func managedSettingsDir() string { return claudesettings.ManagedDir() }

// settingsFiles lists every settings file Claude Code reads for a session
// in Cwd, the user's first: user settings (following CLAUDE_CONFIG_DIR),
// the project's shared and local settings, and the managed settings
// (managed-settings.json and the managed-settings.d drop-ins).
func (e *env) settingsFiles() []settingsFile {
	var files []settingsFile
	seen := map[string]bool{}
	add := func(f settingsFile) {
		if !seen[f.path] { // cwd = home: the same file, read once
			seen[f.path] = true
			files = append(files, f)
		}
	}
	for _, dir := range e.claudeConfigDirs() {
		add(settingsFile{path: filepath.Join(dir, "settings.json"), user: true})
	}
	for _, name := range []string{"settings.json", "settings.local.json"} {
		add(settingsFile{path: filepath.Join(e.Cwd, ".claude", name)})
	}
	managed := e.ManagedSettingsDir
	add(settingsFile{path: filepath.Join(managed, "managed-settings.json"), user: true, managed: true})
	for _, p := range globFiles(filepath.Join(managed, "managed-settings.d"), "*.json") {
		add(settingsFile{path: p, user: true, managed: true})
	}
	return files
}

// readSettings returns nil, nil for a file that does not exist.
func readSettings(path string) (*settings, error) {
	data, err := atomicfile.Read(path, maxUnitSize)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s settings
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return &s, nil
}
