package session

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// Plan is what an attempt would run, for `nightwatch run --dry-run`:
// nothing is written and nothing started, and no secret is in it.
type Plan struct {
	Job string `json:"job"`
	// Argv is the exact command, the hook's files at the paths the attempt
	// would use.
	Argv    []string `json:"argv"`
	Dir     string   `json:"dir"`
	Allowed []string `json:"allowed"`
	// AllowedFrom is "its servers" or "its allowed_tools".
	AllowedFrom string `json:"allowedFrom"`
	// MCPConfig is the session's MCP config, secrets masked.
	MCPConfig string `json:"mcpConfig"`
	// EnvNames are the names of the session's environment variables.
	EnvNames []string `json:"envNames"`
	// ServersOnly are the variables left out of the session's environment
	// because only servers use them (the MCP config carries them).
	ServersOnly []string `json:"serversOnly,omitempty"`
	Verify      []string `json:"verify,omitempty"`
}

// DryRun is the plan of spec's attempt. A job whose MCP config cannot be
// built (a required variable unset) is an error naming it.
func DryRun(spec Spec) (Plan, error) {
	if err := checkSpec(spec); err != nil {
		return Plan{}, err
	}
	b, job := spec.Batch, spec.Job
	dir := statedir.Attempt(b.StateDir, spec.RunID, job.Name, spec.Attempt)
	f := attemptFiles(spec, dir)
	env := Environ(b, spec.Env)
	cfg, err := launchConfig(spec.Binary, b, job, env) // what Prepare writes
	if err != nil {
		return Plan{}, fmt.Errorf("job %s: MCP config: %w", job.Name, err)
	}
	mcpConfigFile(spec, &f, cfg)
	if _, _, _, err := settingsOf(spec, &f); err != nil {
		return Plan{}, fmt.Errorf("job %s: %w", job.Name, err)
	}
	var secrets []string
	for _, srv := range b.ServersOf(job) {
		secrets = append(secrets, srv.MCP.Secrets()...)
		for _, k := range srv.RequiresEnv {
			if v, ok := lookup(env, k); ok {
				secrets = append(secrets, v)
			}
		}
	}
	cmd := Command(context.Background(), spec, f)
	p := Plan{Job: job.Name, Dir: cmd.Dir, Allowed: job.Allowed(), AllowedFrom: job.AllowedSource(),
		MCPConfig: redact.String(string(cfg), secrets...)}
	for _, a := range cmd.Args {
		p.Argv = append(p.Argv, redact.String(a, secrets...))
	}
	for _, kv := range cmd.Env {
		name, _, _ := strings.Cut(kv, "=")
		p.EnvNames = append(p.EnvNames, name)
	}
	slices.Sort(p.EnvNames)
	p.ServersOnly = serverOnly(b, job, env)
	if job.Verify != nil {
		p.Verify = job.Verify.Command
	}
	return p, nil
}

// Print writes the plan for people.
func (p Plan) Print(w io.Writer) {
	quoted := make([]string, len(p.Argv))
	for i, a := range p.Argv {
		quoted[i] = text.ShellQuote(a)
	}
	fmt.Fprintf(w, "job %s\n  in %s\n  command: %s\n", p.Job, p.Dir, strings.Join(quoted, " "))
	allowed := strings.Join(p.Allowed, ", ")
	if allowed == "" {
		allowed = "no tool rule"
	}
	fmt.Fprintf(w, "  allowed tools: %s (from %s)\n", allowed, p.AllowedFrom)
	if len(p.Verify) > 0 {
		fmt.Fprintf(w, "  verify: %s\n", strings.Join(p.Verify, " "))
	}
	fmt.Fprintf(w, "  environment: %s\n", strings.Join(p.EnvNames, " "))
	if len(p.ServersOnly) > 0 {
		fmt.Fprintf(w, "  left out for the servers only (session_env keeps one): %s\n", strings.Join(p.ServersOnly, " "))
	}
	fmt.Fprintf(w, "  MCP config:\n")
	for _, line := range strings.Split(strings.TrimRight(p.MCPConfig, "\n"), "\n") {
		fmt.Fprintf(w, "    %s\n", line)
	}
}
