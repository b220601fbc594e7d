package session

import (
	"maps"
	"slices"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// serverOnly names the variables of env (the session's environment before
// nightwatch's own) that only the batch's servers use, sorted: they are
// left out of the environment of `claude -p`, so that no process under it
// (a stdio server reading /proc/<pid>/environ of its ancestors, the
// model's Bash) finds another server's key there. The servers do not need
// them from the CLI: the session's MCP config carries every value resolved
// (a stdio server's env, an HTTP server's URL and headers), and exec-server
// gives each stdio server its own.
//
// A variable is the servers' when a server's definition references it
// (jobs.Server.Vars: ${VAR} in its MCP fields, requires_env), and also when
// its name is a secret's (redact.SensitiveName) and its value is that of
// such a variable (an alias: GH_AUTH_TOKEN=… with
// GITHUB_TOKEN=${GH_AUTH_TOKEN}). It stays in the session when the job
// keeps it for its own tools (session_env), when it is a base variable
// (PATH, HOME…) or the shell's PWD or OLDPWD (a folder a server names too
// is no secret), and when the CLI reads it itself (agentVariable): a server that takes
// ANTHROPIC_API_KEY or HTTPS_PROXY shares it with the CLI.
func serverOnly(b *jobs.Batch, job *jobs.Job, env []string) []string {
	used := b.ServerVars()
	if len(used) == 0 {
		return nil
	}
	keep := func(name string) bool {
		return environ.IsBase(name) || agentVariable(name, env) || job != nil && slices.Contains(job.SessionEnv, name)
	}
	lookup := environ.Lookup(env)
	out := map[string]bool{}
	values := map[string]bool{}
	for name := range used {
		if v, set := lookup(name); set && !keep(name) {
			out[name] = true
			if len(v) >= minAliasValue {
				values[v] = true
			}
		}
	}
	for _, kv := range env {
		name, v, _ := strings.Cut(kv, "=")
		if !out[name] && values[v] && redact.SensitiveName(name) && !keep(name) {
			out[name] = true
		}
	}
	return slices.Sorted(maps.Keys(out))
}

// minAliasValue is the shortest value that makes a secret-named variable
// an alias of a server's: "1" or "eu" are anybody's.
const minAliasValue = 4

// agentVariable reports whether the CLI itself reads name (its
// credentials, endpoints, settings, Node's runtime, proxies and
// certificates, nightwatch's own variables for its hook), and, when env
// turns on Bedrock or Vertex, that cloud's credentials and settings.
func agentVariable(name string, env []string) bool {
	upper := strings.ToUpper(name)
	switch upper {
	case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "CLAUDECODE":
		return true
	}
	prefixes := []string{"ANTHROPIC_", "CLAUDE_", "MCP_", "NODE_", "NIGHTWATCH_", "ECC_MCP_", "OTEL_", "DISABLE_"}
	lookup := environ.Lookup(env)
	if on(lookup("CLAUDE_CODE_USE_BEDROCK")) {
		prefixes = append(prefixes, "AWS_")
	}
	if on(lookup("CLAUDE_CODE_USE_VERTEX")) {
		prefixes = append(prefixes, "GOOGLE_", "GCLOUD_", "CLOUD_ML_", "VERTEX_")
	}
	for _, p := range prefixes {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	return false
}

// on reads a switch variable as Claude Code does: set and not 0/false.
func on(v string, set bool) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return set
}

// withoutNames is env without the variables named.
func withoutNames(env []string, names []string) []string {
	if len(names) == 0 {
		return env
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

// leftOut is env's entries of the variables named.
func leftOut(env []string, names []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}
