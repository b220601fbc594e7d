// Package doctor looks for the setups that make an overnight batch fail
// quietly: the traps of the article nightwatch is built from (fail-open
// left on, a ~ in a launchd path, a shadowed server, a key that only the
// login shell has, a stuck or unwritable cache) and nightwatch's own
// (hooks not registered or switched off, a matcher that misses MCP tools,
// servers the hook cannot see, reconnect commands that need a shell, a
// Claude Code outside the tested range). Every warning and failure carries
// the exact fix.
package doctor

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/agentlogin"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// Level is how bad a check's finding is.
type Level string

const (
	OK   Level = "ok"
	Warn Level = "warn"
	Fail Level = "fail"
)

// Check is one finding. ID is stable (scripts and tests key on it); one ID
// may appear several times, once per problem found.
type Check struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Level  Level  `json:"level"`
	Detail string `json:"detail"`
	// Fix is the exact fix for a warn or fail, "" for ok.
	Fix string `json:"fix,omitempty"`
}

// Options say what to examine. Zero values mean "this machine, now".
type Options struct {
	// BatchFile is an optional batch file: its servers, env, cache and
	// agent are checked as the night will see them.
	BatchFile string
	Home, Cwd string
	// Getenv is the current (operator's) environment; nil = os.LookupEnv.
	Getenv func(string) (string, bool)
	// Environ is the same environment as NAME=VALUE lines, needed to start
	// servers with it and to name what the night lacks. Nil: os.Environ()
	// when Getenv is nil, else os.Environ()'s names looked up in Getenv.
	Environ []string
	// ProbeTimeout bounds each server probe (default: the batch's
	// probe_timeout, else the knob, 5 s).
	ProbeTimeout time.Duration
	// AgentTimeout bounds each run of the agent (`--version`, `auth
	// status`); default 30 s, because the first start of a 200 MB CLI from
	// a cold disk on a busy laptop can take more than 10 s, and a real hang
	// is still cut.
	AgentTimeout time.Duration
	// LaunchAgentsDir and SystemdUserDir default to ~/Library/LaunchAgents
	// and ~/.config/systemd/user.
	LaunchAgentsDir, SystemdUserDir string
	// ClaudeBin is the agent to check; "" = the batch's agent.command, else
	// "claude" looked up in PATH.
	ClaudeBin string
	// ManagedSettingsDir holds Claude Code's managed-settings.json; "" =
	// this OS's place (/etc/claude-code, or /Library/Application
	// Support/ClaudeCode on macOS).
	ManagedSettingsDir string
}

// env is the context every check shares.
type env struct {
	Options
	knobs knobs.Knobs
	batch *jobs.Batch // nil without a batch or when it does not load
	// agentBroken is set by the agent check when the CLI cannot be run
	// (not found, no answer): the login check then does not try it again.
	agentBroken bool
}

// Run performs every check. It never fails itself: what it cannot examine
// becomes a check of its own.
func Run(ctx context.Context, o Options) []Check {
	e := &env{Options: withDefaults(o)}
	e.knobs = knobs.FromEnv(e.Getenv, e.Home)
	var checks []Check
	if e.BatchFile != "" {
		b, err := jobs.LoadWith(e.BatchFile, e.Getenv, jobs.LoadOptions{AgentOptional: true})
		if err != nil {
			checks = append(checks, Check{ID: "batch", Title: "batch file", Level: Fail,
				Detail: oneLine(err.Error()), Fix: "fix the lines named above; the other checks ran without the batch"})
		} else {
			e.batch = b
			checks = append(checks, Check{ID: "batch", Title: "batch file", Level: OK, Detail: b.File + " loads"})
			for _, c := range b.Cautions {
				checks = append(checks, Check{ID: "batch", Title: "batch file", Level: Warn, Detail: oneLine(c),
					Fix: "as the line says; the night runs, but this is a mistake"})
			}
		}
	}
	for _, c := range []func(context.Context) []Check{
		e.failOpen, e.hooksOff, e.configPath, e.shadowed, e.env, e.cache, e.hooks, e.hookTimeouts, e.definitions, e.reconnect, e.agent,
		e.allowedTools, e.serverEnv, e.schtasks, e.hookPaths, e.entrySecrets, e.cluster,
	} {
		checks = append(checks, c(ctx)...)
	}
	// After the agent check, which says whether the CLI runs at all.
	checks = append(checks, e.login(ctx)...)
	return checks
}

func withDefaults(o Options) Options {
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	if o.AgentTimeout <= 0 {
		o.AgentTimeout = agentlogin.DefaultTimeout
	}
	if o.Cwd == "" {
		o.Cwd, _ = os.Getwd()
	}
	if o.Getenv == nil {
		o.Getenv = os.LookupEnv
		if o.Environ == nil {
			o.Environ = os.Environ()
		}
	}
	if o.Environ == nil {
		// Getenv alone cannot be listed: take the process's names and the
		// values Getenv gives them.
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			if v, ok := o.Getenv(name); ok {
				o.Environ = append(o.Environ, name+"="+v)
			}
		}
	}
	if o.LaunchAgentsDir == "" {
		o.LaunchAgentsDir = filepath.Join(o.Home, "Library", "LaunchAgents")
	}
	if o.ManagedSettingsDir == "" {
		o.ManagedSettingsDir = managedSettingsDir()
	}
	if o.SystemdUserDir == "" {
		o.SystemdUserDir = filepath.Join(o.Home, ".config", "systemd", "user")
	}
	return o
}

// Failed reports whether any check failed (the command exits 1).
func Failed(checks []Check) bool {
	for _, c := range checks {
		if c.Level == Fail {
			return true
		}
	}
	return false
}

// Print writes one line per check, the fix indented under each warning
// and failure:
//
//	ok   fail-open      not set anywhere
//	fail config-path    NIGHTWATCH_MCP_CONFIG="/Users/~/x": …
//	       fix: …
func Print(w io.Writer, checks []Check) {
	// The ids line up in one column, as wide as the longest
	// (cluster-connection) when one is longer than the usual 14.
	width := 14
	for _, c := range checks {
		width = max(width, len(c.ID))
	}
	for _, c := range checks {
		fmt.Fprintf(w, "%-4s %-*s %s\n", c.Level, width, c.ID, c.Detail)
		if c.Fix != "" && c.Level != OK {
			for i, line := range strings.Split(c.Fix, "\n") {
				prefix := "       fix: "
				if i > 0 {
					prefix = "            "
				}
				fmt.Fprintf(w, "%s%s\n", prefix, line)
			}
		}
	}
}

func ok(id, title, detail string) Check {
	return Check{ID: id, Title: title, Level: OK, Detail: detail}
}

// oneLine keeps a multi-line error on one output line.
func oneLine(s string) string { return text.OneLine(strings.ReplaceAll(s, "\n", "; "), 0) }
