package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

const hookPathTitle = "hook command path"

// hookPaths looks for a nightwatch hook registered with a Windows path
// written with backslashes and no quotes ("C:\Users\you\bin\nightwatch.exe
// hook"): Claude Code runs a hook's command line through a shell (Git Bash
// on Windows, unless the hook sets "shell": "powershell"), which reads \U,
// \b… as escapes and looks for "C:Usersyoubinnightwatch.exe", so the hook
// never runs and nothing is protected.
func (e *env) hookPaths(context.Context) []Check {
	var out []Check
	for _, sf := range e.settingsFiles() {
		data, err := os.ReadFile(sf.path)
		if err != nil {
			continue // the hooks check reports a missing or unreadable file
		}
		var s struct {
			Hooks map[string][]struct {
				Hooks []struct {
					Command string `json:"command"`
					Shell   string `json:"shell"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if json.Unmarshal(data, &s) != nil {
			continue
		}
		for event, matchers := range s.Hooks {
			for _, m := range matchers {
				for _, h := range m.Hooks {
					if !strings.EqualFold(h.Shell, "powershell") && backslashProgram(h.Command) {
						out = append(out, Check{ID: "hook-path", Title: hookPathTitle, Level: Fail,
							Detail: fmt.Sprintf("%s: %s hook %q: the shell Claude Code runs it with (Git Bash on Windows) drops unquoted backslashes, so the hook never starts", sf.path, event, h.Command),
							Fix:    fmt.Sprintf("write the path with forward slashes: %q", slashProgram(h.Command))})
					}
				}
			}
		}
	}
	return out
}

// backslashProgram reports a command line whose first word is a nightwatch
// path holding a backslash outside quotes.
func backslashProgram(cmd string) bool {
	cmd = strings.TrimSpace(cmd)
	if cmd == "" || cmd[0] == '"' || cmd[0] == '\'' {
		return false
	}
	prog, _, _ := strings.Cut(cmd, " ")
	return strings.Contains(prog, `\`) && strings.Contains(strings.ToLower(prog), "nightwatch")
}

func slashProgram(cmd string) string {
	cmd = strings.TrimSpace(cmd)
	prog, rest, _ := strings.Cut(cmd, " ")
	out := strings.ReplaceAll(prog, `\`, "/")
	if rest != "" {
		out += " " + rest
	}
	return out
}
