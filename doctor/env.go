package doctor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

const envTitle = "night environment"

// launchdPATH is the PATH launchd gives a job (cron's is shorter still).
const launchdPATH = "/usr/bin:/bin:/usr/sbin:/sbin"

// nightBase is the environment launchd starts a job with: no login shell,
// so nothing from .zshrc. The batch's env and env_file are added by the
// loader.
func (e *env) nightBase() map[string]string {
	user, _ := e.Getenv("USER")
	if user == "" {
		user, _ = e.Getenv("LOGNAME")
	}
	if user == "" {
		user = filepath.Base(e.Home)
	}
	return map[string]string{"PATH": launchdPATH, "HOME": e.Home, "USER": user}
}

// env checks the variables the batch's servers need against the
// environment the night will have, then probes each stdio server with both
// environments to catch the article's launchd trap for real.
func (e *env) env(ctx context.Context) []Check {
	if e.BatchFile == "" {
		return []Check{ok("env", envTitle, "no batch given: nothing to check for the night")}
	}
	if e.batch == nil {
		return []Check{{ID: "env", Title: envTitle, Level: Warn, Detail: "the batch does not load; servers not checked", Fix: "fix the batch file first"}}
	}
	var out []Check
	base := e.nightBase()
	nightGetenv := func(name string) (string, bool) { v, ok := base[name]; return v, ok }
	// Load the batch as the night will: what resolves from the shell now
	// may not resolve then (requires_env, ${VAR} with no default, a bare
	// command found only on the shell's PATH).
	night, err := jobs.LoadWith(e.batch.File, nightGetenv, jobs.LoadOptions{AgentOptional: true})
	if err != nil {
		var le *jobs.LoadError
		if errors.As(err, &le) {
			for _, p := range le.Problems {
				out = append(out, Check{ID: "env", Title: envTitle, Level: Fail,
					Detail: "under launchd/cron (PATH=" + launchdPATH + ", HOME, USER only): " + p.Error(),
					Fix:    "write the value into the batch's env or env_file (" + e.batch.File + "); a night has no login shell"})
			}
		} else {
			out = append(out, Check{ID: "env", Title: envTitle, Level: Fail, Detail: err.Error(), Fix: "fix the batch file"})
		}
		night = nil
	}
	for _, w := range batchWarnings(night) {
		out = append(out, Check{ID: "env", Title: envTitle, Level: Warn, Detail: "under launchd/cron: " + w,
			Fix: "add the folder of the program to PATH in the batch's env"})
	}
	nightEnv := environ(base)
	envSource := e.batch
	if night != nil {
		envSource = night
	}
	for k, v := range envSource.Env {
		nightEnv = setEnv(nightEnv, k, v)
	}
	out = append(out, e.launchdTrap(ctx, night, nightEnv)...)
	if len(out) == 0 {
		out = append(out, ok("env", envTitle, fmt.Sprintf("%d server(s) get what they need from the night's environment", len(e.batch.Servers))))
	}
	return out
}

func batchWarnings(b *jobs.Batch) []string {
	if b == nil {
		return nil
	}
	return b.Warnings
}

// launchdTrap probes every stdio server twice, with the current
// environment and with the night's, in parallel. Passing now and failing
// then is the trap: "works when I try it by hand, fails in the overnight
// batch".
func (e *env) launchdTrap(ctx context.Context, night *jobs.Batch, nightEnv []string) []Check {
	timeout := e.ProbeTimeout
	if timeout <= 0 {
		timeout = e.batch.Health.ProbeTimeout
	}
	type result struct{ now, night probe.Result }
	results := make([]result, len(e.batch.Servers))
	var wg sync.WaitGroup
	for i, s := range e.batch.Servers {
		if s.MCP.Transport != mcpconfig.Stdio {
			continue
		}
		nightSrv := &s.MCP
		if night != nil {
			if ns := night.Server(s.Name); ns != nil {
				nightSrv = &ns.MCP // the command as the night resolves it
			}
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			results[i].now = probe.Probe(ctx, &s.MCP, probe.Options{Timeout: timeout, Cwd: e.Cwd, Environ: e.Environ, InheritEnviron: true})
		}()
		go func() {
			defer wg.Done()
			results[i].night = probe.Probe(ctx, nightSrv, probe.Options{Timeout: timeout, Cwd: e.Cwd, Environ: nightEnv})
		}()
	}
	wg.Wait()

	var out []Check
	for i, s := range e.batch.Servers {
		if s.MCP.Transport != mcpconfig.Stdio {
			continue
		}
		r := results[i]
		switch {
		case r.now.Verdict.Reachable() && !r.night.Verdict.Reachable():
			likely, others := missingNames(e.Environ, nightEnv, s)
			names := append(likely, others...)
			what := "missing " + strings.Join(names, ", ")
			if len(likely) > 0 {
				what = "missing " + strings.Join(likely, ", ")
			} else if len(names) == 0 {
				what = "the environments differ only in standard variables"
			}
			out = append(out, Check{ID: "env", Title: envTitle, Level: Fail,
				Detail: fmt.Sprintf("server %q works in your shell, fails under launchd/cron: %s (night probe: %s)", s.Name, what, r.night.Reason),
				Fix:    fmt.Sprintf("list what %q needs in its env (or requires_env) or in the batch's env / env_file: %s", s.Name, strings.Join(firstN(orAll(likely, names), 8), ", "))})
		case !r.now.Verdict.Reachable() && !r.night.Verdict.Reachable():
			out = append(out, Check{ID: "env", Title: envTitle, Level: Warn,
				Detail: fmt.Sprintf("server %q fails in your shell too: %s: %s", s.Name, r.now.Verdict, r.now.Reason),
				Fix:    "nightwatch preflight " + e.batch.File + "   # probes every server and says why"})
		}
	}
	return out
}

// standardNames are variables every shell has that no MCP server needs
// from the operator: leaving them out keeps the diff readable.
var standardNames = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "SHLVL", "_", "TERM",
	"TERM_PROGRAM", "TERM_PROGRAM_VERSION", "TERM_SESSION_ID", "COLORTERM", "LANG", "LANGUAGE", "TMPDIR", "TMUX", "TMUX_PANE",
	"DISPLAY", "EDITOR", "VISUAL", "PAGER", "LESS", "MAIL", "HOSTNAME", "TZ", "COLUMNS", "LINES", "MANPATH", "INFOPATH",
	"ITERM_SESSION_ID", "ITERM_PROFILE", "COMMAND_MODE", "__CF_USER_TEXT_ENCODING", "__CFBundleIdentifier", "LS_COLORS", "CLICOLOR",
	"GOPATH", "GOROOT", "GOCACHE", "GOFLAGS", "GOTOOLCHAIN", "GOPROXY", "GOMODCACHE", "GOARCH", "GOOS", "GOTRACEBACK", "GODEBUG"}

var standardPrefixes = []string{"LC_", "SSH_", "XDG_", "DBUS_", "GPG_", "HOMEBREW_", "CGO_", "CLAUDECODE", "CLAUDE_CODE_", "NIGHTWATCH_", "ECC_", "VSCODE_", "WT_"}

// missingNames lists the variables set now and absent at night, minus
// standard ones. likely are those the server's command line or config
// mentions (a flag --require-env=NOTES_API_KEY, a wrapper's argument);
// the others are sorted with key-looking names first.
func missingNames(now, night []string, s *jobs.Server) (likely, others []string) {
	has := map[string]bool{}
	for _, kv := range night {
		name, _, _ := strings.Cut(kv, "=")
		has[name] = true
	}
	mention := s.MCP.Command + " " + strings.Join(s.MCP.Args, " ") + " " + string(s.MCP.Raw)
	for _, kv := range now {
		name, _, _ := strings.Cut(kv, "=")
		if name == "" || has[name] || slices.Contains(standardNames, name) || hasAnyPrefix(name, standardPrefixes) {
			continue
		}
		if strings.Contains(mention, name) {
			likely = append(likely, name)
		} else {
			others = append(others, name)
		}
	}
	slices.Sort(likely)
	slices.SortFunc(others, func(a, b string) int {
		if ka, kb := secretLike(a), secretLike(b); ka != kb {
			if ka {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return likely, others
}

func secretLike(name string) bool {
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH", "API"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func orAll(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}

func environ(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func setEnv(env []string, name, value string) []string {
	out := slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
	return append(out, name+"="+value)
}
