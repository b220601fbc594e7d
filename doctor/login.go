package doctor

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/agentlogin"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

const loginTitle = "agent login"

// loginNames are the variables that log the CLI in by themselves.
var loginNames = agentlogin.Names

// tokenFix is how a night gets a login it can always read.
const tokenFix = agentlogin.TokenFix

// login checks that the agent can log in from the night's environment:
// the launchd/cron base environment, the batch's env and env_file, and the
// EnvironmentVariables / Environment= of installed nightwatch launchd and
// systemd entries. It asks the CLI itself (`claude auth status`, run with
// exactly that environment; internal/agentlogin) and explains where the
// login it found lives. Only variable names are ever shown, never values.
func (e *env) login(ctx context.Context) []Check {
	if e.agentBroken {
		return []Check{{ID: "agent-login", Title: loginTitle, Level: Warn,
			Detail: "not checked: Claude Code itself does not run (see the agent check)",
			Fix:    "repair the agent first, then run doctor again"}}
	}
	nightEnv, sources := e.nightLoginEnv()
	bin := e.agentBin()
	path, err := lookPath(bin, e.Getenv)
	if err != nil {
		return []Check{{ID: "agent-login", Title: loginTitle, Level: Warn,
			Detail: fmt.Sprintf("cannot check the agent's login: %s not found", bin),
			Fix:    "install Claude Code (see the agent check), then run doctor again"}}
	}
	st, err := agentlogin.Query(ctx, path, e.Cwd, nightEnv, e.AgentTimeout)
	if err != nil {
		return []Check{{ID: "agent-login", Title: loginTitle, Level: Warn,
			Detail: fmt.Sprintf("%s auth status (night's environment): %v", path, err),
			Fix:    "run `claude auth status` by hand; " + tokenFix}}
	}
	from := "the night's environment"
	if len(sources) > 0 {
		from += " (" + strings.Join(sources, ", ") + ")"
	}
	w := agentlogin.Where{GOOS: runtime.GOOS, Home: e.Home}
	if d, ok := e.Getenv("CLAUDE_CONFIG_DIR"); ok {
		w.ConfigDir = d
	}
	v := agentlogin.Judge(st, from, w)
	if !st.LoggedIn {
		if shell := agentlogin.ShellOnly(e.Getenv, nightEnv); shell != "" {
			v.Detail += "; your shell has " + shell + " but the night does not"
		}
	}
	level := OK
	switch v.Level {
	case agentlogin.Fail:
		level = Fail
	case agentlogin.Warn:
		level = Warn
	}
	return []Check{{ID: "agent-login", Title: loginTitle, Level: level, Detail: v.Detail, Fix: v.Fix}}
}

// nightLoginEnv is the environment a night starts claude with, and where its
// login variables came from (names only).
func (e *env) nightLoginEnv() ([]string, []string) {
	base := e.nightBase()
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	var sources []string
	add := func(src string, vars map[string]string) {
		for k, v := range vars {
			m[k] = v
			for _, n := range loginNames {
				if k == n && v != "" {
					sources = append(sources, k+" from "+src)
				}
			}
		}
	}
	if e.batch != nil {
		vars := e.batch.Env
		nightGetenv := func(name string) (string, bool) { v, ok := base[name]; return v, ok }
		if night, err := jobs.LoadWith(e.batch.File, nightGetenv, jobs.LoadOptions{AgentOptional: true}); err == nil {
			vars = night.Env
		}
		add("the batch's env/env_file", vars)
	}
	for _, ent := range e.installedEntries() {
		add(ent.name, ent.env)
	}
	// The CLI reads its login from HOME (or CLAUDE_CONFIG_DIR) and a
	// settings apiKeyHelper; both are the same for the night.
	if d, ok := e.Getenv("CLAUDE_CONFIG_DIR"); ok && m["CLAUDE_CONFIG_DIR"] == "" {
		m["CLAUDE_CONFIG_DIR"] = d
	}
	m["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
	sort.Strings(sources)
	return environ(m), sources
}

type installedEntry struct {
	name string
	env  map[string]string
	// kind is the scheduler (launchd, systemd), path the entry's file.
	kind, path string
}

var (
	plistEnvRE  = regexp.MustCompile(`(?s)<key>EnvironmentVariables</key>\s*<dict>(.*?)</dict>`)
	plistPairRE = regexp.MustCompile(`(?s)<key>([^<]*)</key>\s*<string>([^<]*)</string>`)
)

// installedEntries reads the environment of nightwatch's launchd agents
// (dev.nightwatch.*.plist) and systemd user services (nightwatch-*.service)
// that run this batch (every one of them without a batch).
func (e *env) installedEntries() []installedEntry {
	var out []installedEntry
	batchFile := ""
	if e.batch != nil {
		batchFile = e.batch.File
	}
	plists, _ := filepath.Glob(filepath.Join(e.LaunchAgentsDir, "dev.nightwatch.*.plist"))
	for _, p := range plists {
		b, err := atomicfile.Read(p, maxUnitSize)
		if err != nil || (batchFile != "" && !bytes.Contains(b, []byte(html.EscapeString(batchFile)))) {
			continue
		}
		vars := map[string]string{}
		if m := plistEnvRE.FindSubmatch(b); m != nil {
			for _, kv := range plistPairRE.FindAllSubmatch(m[1], -1) {
				vars[html.UnescapeString(string(kv[1]))] = html.UnescapeString(string(kv[2]))
			}
		}
		out = append(out, installedEntry{name: "launchd " + filepath.Base(p), env: vars, kind: "launchd", path: p})
	}
	units, _ := filepath.Glob(filepath.Join(e.SystemdUserDir, "nightwatch-*.service"))
	for _, p := range units {
		b, err := atomicfile.Read(p, maxUnitSize)
		if err != nil || (batchFile != "" && !bytes.Contains(b, []byte(batchFile))) {
			continue
		}
		vars := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			v, ok := strings.CutPrefix(strings.TrimSpace(line), "Environment=")
			if !ok {
				continue
			}
			v = strings.Trim(v, `"`)
			v = strings.ReplaceAll(v, "%%", "%")
			if k, val, ok := strings.Cut(v, "="); ok {
				vars[k] = val
			}
		}
		out = append(out, installedEntry{name: "systemd " + filepath.Base(p), env: vars, kind: "systemd", path: p})
	}
	return out
}
