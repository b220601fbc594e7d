// Package preflight checks a batch before its night: it wakes up and probes
// every server a job needs, all at once, has the health check record each
// verdict by its own rule, and collects what the batch should know (the
// traps of internal/traps, shadowed definitions, the agent's login, what
// each job will be allowed). Printing it is cmd/nightwatch's; acting on it
// is the night's.
package preflight

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/internal/agentlogin"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/traps"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/session"
)

// Defaults for a batch whose health section leaves the timeouts at zero.
const (
	defaultPrewarmTimeout = 2 * time.Minute
	// defaultMCPTimeout is Claude Code's MCP_TIMEOUT default: how long a
	// session waits for a server to connect before the first turn.
	defaultMCPTimeout = 30 * time.Second
)

// Row is one server's line in the preflight table.
type Row struct {
	Server    string        `json:"server"`
	Transport string        `json:"transport"`
	Verdict   probe.Verdict `json:"verdict"`
	Latency   time.Duration `json:"latency"` // the verdict probe's handshake time
	Tools     int           `json:"tools"`   // -1 when unknown
	Reason    string        `json:"reason"`
	// Prewarmed is true when the pre-warm step reached the server: a stdio
	// server answered within the prewarm timeout, an HTTP endpoint gave an
	// answer that is not "come back later".
	Prewarmed bool `json:"prewarmed"`
	// Usable is the health check's verdict (healthcheck.Reachable): a 401
	// to a probe that carried the server's own token answered, and is
	// still down for the night.
	Usable bool `json:"usable"`
	// ToolHints are the server's tools' annotations (read-only or not),
	// for the jobs' side-effect ledgers; nil when not listed.
	ToolHints map[string]probe.ToolHints `json:"-"`
}

// Report is the outcome of a preflight.
type Report struct {
	Rows     []Row    `json:"rows"`
	Warnings []string `json:"warnings,omitempty"`
	// Healthy is true when every server a job needs is reachable; it
	// drives the command's exit code.
	Healthy bool `json:"healthy"`
	// Jobs say what each job's session will be allowed.
	Jobs []Job `json:"jobs,omitempty"`
	// Login is the agent's login as the night sees it (with
	// Options.Login).
	Login *Login `json:"login,omitempty"`
}

// Login is the agent-login verdict (internal/agentlogin).
type Login struct {
	Level  string `json:"level"` // ok, warn, fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Job is what one job's session will be allowed.
type Job struct {
	Job     string   `json:"job"`
	Allowed []string `json:"allowed"`
	// From is "its servers" or "its allowed_tools".
	From string `json:"from"`
	// Unallowed are declared servers no rule allows a tool of.
	Unallowed []string `json:"unallowed,omitempty"`
}

// Options are the dependencies of Run.
type Options struct {
	// Checker records every verdict, by the rule and transitions the
	// hooks use, in its cache (so each session's first call is a cache hit)
	// and its events file (the night journals them, by the preflight). Nil
	// records nothing.
	Checker *healthcheck.Checker
	// Getenv looks up the supervisor's environment (os.LookupEnv); the
	// batch's env is laid over it, as the night will have it.
	Getenv func(string) (string, bool)
	// Warn receives problems with nightwatch's own state (a cache that
	// cannot be written); facts about the batch go into the report.
	Warn func(string)
	// Environ is the base environment of stdio servers; nil means
	// os.Environ(). The batch's env is laid over it.
	Environ []string
	// Home is the user's home folder, for finding Claude Code's own MCP
	// config; "" means os.UserHomeDir().
	Home string
	// Login asks the agent whether it is logged in from the night's
	// environment (Environ with the batch's env; `claude auth status`,
	// no model turn) and puts the verdict in the report.
	Login bool
	// LoginEnv is the night's base environment for the login check; nil
	// means Environ.
	LoginEnv []string
}

// Run pre-warms and probes every server that some job needs, all at
// once, has the Checker record each verdict (the health check's rule and
// transitions, announced by the preflight) and collects warnings about the
// batch. It never fails: a server that cannot be reached is a row with its
// reason.
func Run(ctx context.Context, b *jobs.Batch, opts Options) Report {
	needed, cwds, unknown := neededServers(b)
	rep := Report{Healthy: len(unknown) == 0}
	rep.Warnings = append(rep.Warnings, unknown...)
	rep.Warnings = append(rep.Warnings, b.Cautions...)
	rep.Warnings = append(rep.Warnings, failOpenWarnings(b, opts.Getenv)...)
	for _, s := range needed {
		if len(s.MCP.Missing) > 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("server %q uses unset variables: %s (the text stays literal, as in Claude Code)",
				s.Name, strings.Join(s.MCP.Missing, ", ")))
		}
	}
	rep.Warnings = append(rep.Warnings, shadowWarnings(b, needed, opts)...)
	for _, j := range b.Jobs {
		pj := Job{Job: j.Name, Allowed: j.Allowed(), From: j.AllowedSource(), Unallowed: j.Unallowed()}
		rep.Jobs = append(rep.Jobs, pj)
		if len(pj.Unallowed) > 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("job %q allows no tool of %s: every call to it will be denied and the job will fail",
				j.Name, strings.Join(pj.Unallowed, ", ")))
		}
	}

	if opts.Login {
		rep.Login = checkLogin(ctx, b, opts)
		if rep.Login.Level == string(agentlogin.Fail) {
			rep.Healthy = false
		}
	}
	sessionEnviron := environ.Overlay(opts.Environ, b.Env)
	probeTimeout, prewarmTimeout := timeoutsFor(b, opts.Getenv)

	rep.Rows = make([]Row, len(needed))
	records := make([]healthcheck.ProbeRecord, len(needed))
	var wg sync.WaitGroup
	for i, s := range needed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv := s.MCP // a copy: the batch is shared with the night
			if srv.Name == "" {
				srv.Name = s.Name
			}
			po := probe.Options{Timeout: probeTimeout, ListTools: true, Cwd: cwds[s.Name], Environ: sessionEnviron}
			row, res := preflightOne(ctx, &srv, po, prewarmTimeout)
			row.Usable = healthcheck.Reachable(&srv, res)
			records[i] = healthcheck.ProbeRecord{Server: &srv, Result: res}
			rep.Rows[i] = row
		}()
	}
	wg.Wait()
	for _, r := range records {
		if r.Server == nil {
			continue
		}
		if r.Result.SlowDiscover {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("server %q leaves server/discover unanswered: Claude Code 2.1.332 waits about 3 s for it in every session before it falls back to initialize (MCP_PROTOCOL_NEGOTIATION=legacy in the batch's env skips the wait)", r.Server.Name))
		}
		if r.Result.LegacySSE {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("server %q is type http but serves the legacy SSE transport: Claude Code 2.1.332 falls back to it, 2.1.197 fails it; write type: sse", r.Server.Name))
		}
	}
	if opts.Checker != nil {
		// One locked write for all verdicts, not one per server in turn.
		opts.Checker.RecordPreflight(records)
	}
	for _, r := range rep.Rows {
		if !r.Usable {
			rep.Healthy = false
		}
	}
	return rep
}

// preflightOne pre-warms one server and gives its verdict: the row and the
// probe result that goes into the cache.
func preflightOne(ctx context.Context, srv *mcpconfig.Server, po probe.Options, prewarm time.Duration) (Row, probe.Result) {
	row := Row{Server: srv.Name, Transport: string(srv.Transport)}
	var res probe.Result
	switch srv.Transport {
	case mcpconfig.Stdio:
		// One probe with the long timeout is the pre-warm: the first start
		// of an `npx -y` or `uvx` server downloads it, which must happen
		// now and not inside a session. Its answer is also the verdict; a
		// second probe would only say the same thing faster.
		po.Timeout = prewarm
		res = probe.Probe(ctx, srv, po)
		row.Prewarmed = res.Verdict.Reachable()
	case mcpconfig.HTTP, mcpconfig.SSE:
		// One MCP client: the probe package's, with its headers and its
		// redirect rule (credentials never go to another host or to
		// plain http).
		w := probe.Wake(ctx, srv, prewarm, probe.WakeOptions{})
		row.Prewarmed = w.Awake
		res = probe.Probe(ctx, srv, po)
		if w.Attempts > 1 && res.Verdict.Reachable() {
			res.Reason += fmt.Sprintf(" (woke up after %d attempts)", w.Attempts)
		}
	default:
		res = probe.Probe(ctx, srv, po) // says why it cannot probe it
	}
	row.Verdict, row.Latency, row.Tools, row.Reason = res.Verdict, res.Latency, res.Tools, res.Reason
	row.ToolHints = res.ToolHints
	return row, res
}

// neededServers returns the batch servers some job uses, in file order,
// the cwd of the first job using each (a stdio server starts there in a
// session) and a message per job naming a server the batch lacks.
func neededServers(b *jobs.Batch) (needed []*jobs.Server, cwds map[string]string, unknown []string) {
	byName := map[string]*jobs.Server{}
	for _, s := range b.Servers {
		byName[s.Name] = s
	}
	cwds = map[string]string{}
	for _, j := range b.Jobs {
		for _, name := range j.Servers {
			if byName[name] == nil {
				unknown = append(unknown, fmt.Sprintf("job %q needs server %q, which the batch does not define", j.Name, name))
				continue
			}
			if _, seen := cwds[name]; !seen {
				cwds[name] = j.Cwd
			}
		}
	}
	for _, s := range b.Servers {
		if _, ok := cwds[s.Name]; ok {
			needed = append(needed, s)
		}
	}
	return needed, cwds, unknown
}

// failOpenWarnings reports fail-open as the night will see it: the batch's
// own setting, and the variables in its env or the supervisor's.
func failOpenWarnings(b *jobs.Batch, getenv func(string) (string, bool)) []string {
	var out []string
	if b.FailOpen {
		out = append(out, "fail-open is on (fail_open in the batch): the hook lets calls to unhealthy servers through; for debugging only")
	}
	// The batch's env wins over the supervisor's, as in a session.
	where := map[string]string{}
	night := func(name string) (string, bool) {
		if v, ok := b.Env[name]; ok {
			where[name] = "the batch's env"
			return v, true
		}
		if getenv == nil {
			return "", false
		}
		where[name] = "the supervisor's environment"
		return getenv(name)
	}
	for _, fv := range traps.FailOpenVars(night) {
		name, v, where := fv.Name, fv.Value, where[fv.Name]
		switch {
		case !fv.Known:
			out = append(out, fmt.Sprintf("%s=%q in %s is not a yes/no value", name, v, where))
		case fv.On && b.FailOpen:
			out = append(out, fmt.Sprintf("%s=%s in %s: sessions fail open", name, v, where))
		case fv.On:
			out = append(out, fmt.Sprintf("%s=%s is set in %s; sessions do not get it because the batch does not ask for fail-open", name, v, where))
		}
	}
	return out
}

// shadowWarnings names batch servers that Claude Code's own config, as
// seen from each job's cwd, also defines. Sessions run with
// --strict-mcp-config, so those definitions are ignored; a user who edits
// them expecting the night to change should know.
func shadowWarnings(b *jobs.Batch, needed []*jobs.Server, opts Options) []string {
	home := opts.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	isNeeded := map[string]bool{}
	for _, s := range needed {
		isNeeded[s.Name] = true
	}
	sources := map[string]map[string]bool{} // server → files defining it
	seenCwd := map[string]bool{}
	for _, j := range b.Jobs {
		if seenCwd[j.Cwd] {
			continue
		}
		seenCwd[j.Cwd] = true
		r := mcpconfig.Resolve(mcpconfig.Options{Cwd: j.Cwd, Home: home, Getenv: getenv})
		for name, srv := range r.Servers {
			if !isNeeded[name] {
				continue
			}
			if sources[name] == nil {
				sources[name] = map[string]bool{}
			}
			sources[name][srv.Source] = true
			for _, d := range r.Shadowed[name] {
				sources[name][d.Source] = true
			}
		}
	}
	var out []string
	for _, s := range needed {
		if len(sources[s.Name]) == 0 {
			continue
		}
		files := make([]string, 0, len(sources[s.Name]))
		for f := range sources[s.Name] {
			files = append(files, f)
		}
		sort.Strings(files)
		out = append(out, fmt.Sprintf("server %q is also defined in %s; sessions run with --strict-mcp-config, so that definition is shadowed and the batch's is used",
			s.Name, strings.Join(files, ", ")))
	}
	return out
}

// timeoutsFor returns the verdict probe's timeout and the pre-warm's. The
// pre-warm (for stdio also the verdict) allows at least what Claude Code
// allows a server to start in, MCP_TIMEOUT: a server that needs 8 s to
// answer its handshake is usable in a session and must not be called down
// here.
func timeoutsFor(b *jobs.Batch, getenv func(string) (string, bool)) (probeTimeout, prewarm time.Duration) {
	probeTimeout = b.Health.ProbeTimeout
	if probeTimeout <= 0 {
		probeTimeout = probe.DefaultTimeout
	}
	prewarm = b.Health.PrewarmTimeout
	if prewarm <= 0 {
		prewarm = defaultPrewarmTimeout
	}
	// A pre-warm shorter than a probe would be a stricter test, not a
	// more patient one.
	return probeTimeout, max(prewarm, probeTimeout, mcpStartupTimeout(b, getenv))
}

// mcpStartupTimeout is how long Claude Code waits for a server to connect:
// MCP_TIMEOUT (milliseconds) from the batch's env, else the supervisor's,
// else 30 s.
func mcpStartupTimeout(b *jobs.Batch, getenv func(string) (string, bool)) time.Duration {
	v, ok := b.Env["MCP_TIMEOUT"]
	if !ok && getenv != nil {
		v, ok = getenv("MCP_TIMEOUT")
	}
	if ms, err := strconv.Atoi(strings.TrimSpace(v)); ok && err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return defaultMCPTimeout
}

// checkLogin asks the agent, in the night's environment, whether it is
// logged in (doctor's agent-login, without the installed entries).
func checkLogin(ctx context.Context, b *jobs.Batch, opts Options) *Login {
	base := opts.LoginEnv
	if base == nil {
		base = opts.Environ
	}
	if base == nil {
		base = os.Environ()
	}
	env := session.Environ(b, base)
	st, err := agentlogin.Query(ctx, b.Agent.Command, b.Dir, env, agentlogin.DefaultTimeout)
	if err != nil {
		return &Login{Level: string(agentlogin.Warn), Fix: "run `claude auth status` by hand; " + agentlogin.TokenFix,
			Detail: fmt.Sprintf("cannot ask %s for its login: %v", b.Agent.Command, err)}
	}
	home, _ := os.UserHomeDir()
	if opts.Home != "" {
		home = opts.Home
	}
	w := agentlogin.Where{GOOS: runtime.GOOS, Home: home}
	w.ConfigDir, _ = environ.Lookup(env)("CLAUDE_CONFIG_DIR")
	v := agentlogin.Judge(st, "the night's environment", w)
	return &Login{Level: string(v.Level), Detail: v.Detail, Fix: v.Fix}
}
