package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

const hooksOffTitle = "hooks switched off"

// hooksOffEnv are the variables that make Claude Code run no hooks at all:
// CLAUDE_CODE_SIMPLE is what --bare sets, CLAUDE_CODE_SAFE_MODE starts
// without hooks and plugins. Either one silently unprotects every session
// that inherits it.
var hooksOffEnv = []string{"CLAUDE_CODE_SAFE_MODE", "CLAUDE_CODE_SIMPLE"}

// hooksOff looks for the switches that turn nightwatch's hook off without a
// word: the variables above anywhere the night's environment comes from
// (this shell, the batch's env and env_file, launchd and systemd entries,
// the "env" of every settings file), --bare in the batch's agent.args, and
// disableAllHooks / allowManagedHooksOnly in every settings file.
func (e *env) hooksOff(context.Context) []Check {
	var out []Check
	found := func(where, detail, fix string) {
		out = append(out, Check{ID: "hooks-off", Title: hooksOffTitle, Level: Fail,
			Detail: where + ": " + detail + " (Claude Code then runs no hooks: nightwatch neither blocks nor learns)", Fix: fix})
	}
	for _, name := range hooksOffEnv {
		if v, set := e.Getenv(name); set && truthy(v) {
			found("environment", fmt.Sprintf("%s=%s", name, v), fmt.Sprintf("unset %s (and remove it from your shell profile)", name))
		}
	}
	if b := e.batch; b != nil {
		for _, name := range hooksOffEnv {
			if v, set := b.Env[name]; set && truthy(v) {
				where := "the env of " + b.File
				if b.EnvFile != "" {
					where = "the env or env_file (" + b.EnvFile + ") of " + b.File
				}
				found(b.File, fmt.Sprintf("the night's environment sets %s=%s", name, v), fmt.Sprintf("remove %s from %s", name, where))
			}
		}
		if slices.Contains(b.Agent.Args, "--bare") {
			found(b.File, "agent.args has --bare", "remove --bare from agent.args in "+b.File)
		}
	}
	for _, p := range globFiles(e.LaunchAgentsDir, "*.plist") {
		vars, args, err := readPlist(p)
		if err != nil {
			continue // the fail-open check reports an unreadable plist
		}
		for _, name := range hooksOffEnv {
			if v, set := vars[name]; set && truthy(v) {
				found(p, fmt.Sprintf("EnvironmentVariables sets %s=%s", name, v),
					fmt.Sprintf("delete the <key>%s</key> entry from %s, then: launchctl unload %s && launchctl load %s", name, p, p, p))
			}
		}
		if slices.Contains(args, "--bare") {
			found(p, "ProgramArguments has --bare", "delete --bare from ProgramArguments in "+p+", then reload it with launchctl")
		}
	}
	for _, p := range globFiles(e.SystemdUserDir, "*.service") {
		for name, v := range systemdEnv(p) {
			if slices.Contains(hooksOffEnv, name) && truthy(v) {
				found(p, fmt.Sprintf("Environment=%s=%s", name, v),
					fmt.Sprintf("delete %s from the Environment= line of %s, then: systemctl --user daemon-reload", name, p))
			}
		}
	}
	files := e.settingsFiles()
	managedHook := false // nightwatch registered in the managed settings themselves
	for _, sf := range files {
		if s, err := readSettings(sf.path); err == nil && s != nil && sf.managed {
			for _, h := range s.commands() {
				if nightwatchHook.MatchString(h.command) {
					managedHook = true
				}
			}
		}
	}
	for _, sf := range files {
		s, err := readSettings(sf.path)
		if err != nil || s == nil {
			continue // unreadable settings are the hooks check's finding
		}
		for _, name := range hooksOffEnv {
			if v, set := s.Env[name]; set && truthy(fmt.Sprint(v)) {
				found(sf.path, fmt.Sprintf(`"env" sets %s=%v`, name, v), fmt.Sprintf(`delete %q from the "env" object of %s`, name, sf.path))
			}
		}
		if s.DisableAllHooks {
			fix := fmt.Sprintf(`delete "disableAllHooks": true from %s (or set it to false)`, sf.path)
			if sf.managed {
				fix = fmt.Sprintf(`ask whoever manages this machine to delete "disableAllHooks": true from %s: managed settings win over every other file`, sf.path)
			}
			found(sf.path, `"disableAllHooks": true`, fix)
		}
		if s.AllowManagedHooksOnly && !managedHook {
			fix := fmt.Sprintf(`delete "allowManagedHooksOnly": true from %s`, sf.path)
			if sf.managed {
				fix = fmt.Sprintf(`ask whoever manages this machine to delete "allowManagedHooksOnly": true from %s, or to register nightwatch's hook in it (matcher "mcp__.*", command "/absolute/path/to/nightwatch hook")`, sf.path)
			}
			found(sf.path, `"allowManagedHooksOnly": true, and the managed settings do not register nightwatch: only managed hooks run`, fix)
		}
	}
	if len(out) == 0 {
		var read []string
		for _, sf := range files {
			read = append(read, sf.path)
		}
		out = append(out, ok("hooks-off", hooksOffTitle, "nothing turns hooks off ("+strings.Join(hooksOffEnv, ", ")+", --bare, disableAllHooks, allowManagedHooksOnly; settings read: "+strings.Join(read, ", ")+")"))
	}
	return out
}
