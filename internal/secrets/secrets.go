// Package secrets tells the redactor (internal/redact) every secret a
// nightwatch process can know of, at the process's entry points: the batch
// it loads (supervisor, operator commands), the MCP configs it reads (the
// hook, status, probe) and its own environment. From then on every
// redact.String in the process removes them, whoever calls it: a server
// that prints another server's key cannot carry it into a cache, a log, a
// journal, a report or the model's deny reason.
//
// It only remembers; it never stores, prints or passes a value on.
package secrets

import (
	"os"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// RememberProcess remembers every sensitive-named variable of this
// process's environment (the agent's ANTHROPIC_API_KEY, the batch's keys a
// session hands its hook), and the value of every variable NamesVariable
// names (the batch's env_file variables, which a session's environment
// holds under names that may look plain: REGION_SECRET_PATH).
func RememberProcess() {
	env := os.Environ()
	redact.RememberEnv(env)
	rememberNamed(env)
}

// NamesVariable is the variable of a session's environment that names
// (never values) the batch's env_file variables, comma-separated, so that
// the hook inside the session remembers their values from its own
// environment whatever their names: the session's environment does not
// otherwise say which variables came from env_file.
const NamesVariable = "NIGHTWATCH_SECRET_NAMES"

// EnvFileNames is NamesVariable's value for a batch: the names of the
// variables its env_file sets, comma-separated, base variables left out
// (as RememberBatch leaves them out). Empty for none or a nil batch.
func EnvFileNames(b *jobs.Batch) string {
	if b == nil {
		return ""
	}
	var names []string
	for _, k := range b.EnvFileKeys {
		if _, ok := b.Env[k]; ok && !environ.IsBase(k) && !strings.ContainsAny(k, ",=") {
			names = append(names, k)
		}
	}
	return strings.Join(names, ",")
}

// rememberNamed remembers, by RememberBatch's rule for env_file values,
// the value of each variable NamesVariable names in env.
func rememberNamed(env []string) {
	lookup := environ.Lookup(env)
	list, ok := lookup(NamesVariable)
	if !ok || list == "" {
		return
	}
	var values []string
	for _, k := range strings.Split(list, ",") {
		v, ok := lookup(k)
		switch {
		case k == "", !ok, environ.IsBase(k):
		case redact.SensitiveName(k) || len(v) >= minPlainLen:
			values = append(values, v)
		}
	}
	redact.Remember(values...)
}

// minPlainLen is the shortest env_file value of a plain name (not
// redact.SensitiveName) that is remembered: "info", "debug", "30000" or
// "C.UTF-8" are settings, and removing them from every text would blind
// the log ("level":"info") without hiding any key.
const minPlainLen = 8

// RememberBatch remembers what a loaded batch holds: every value env_file
// sets, whatever its name (a plain name's from minPlainLen bytes; never a
// base variable's such as PATH or LANG, which every server is given
// anyway); every sensitive-named variable of env; every
// server's env and header values and the secret parts of its URL; the
// parts of the notify webhook's URL that may carry a token. A nil batch
// is ignored.
func RememberBatch(b *jobs.Batch) {
	if b == nil {
		return
	}
	var values []string
	for _, k := range b.EnvFileKeys {
		v, ok := b.Env[k]
		switch {
		case !ok, environ.IsBase(k):
		case redact.SensitiveName(k) || len(v) >= minPlainLen:
			values = append(values, v)
		}
	}
	redact.Remember(values...)
	env := make([]string, 0, len(b.Env))
	for k, v := range b.Env {
		env = append(env, k+"="+v)
	}
	redact.RememberEnv(env)
	for _, s := range b.Servers {
		rememberServer(&s.MCP)
	}
	if b.Notify.Webhook != "" {
		redact.RememberURL(b.Notify.Webhook)
	}
}

// RememberServers remembers the secrets of every server an MCP config
// search found, the winners and nothing else (a shadowed definition is
// never started or called). A nil result is ignored.
func RememberServers(r *mcpconfig.Resolved) {
	if r == nil {
		return
	}
	for _, s := range r.Servers {
		rememberServer(s)
	}
}

// RememberBatchFile loads the batch at path (as the night would, agent
// optional) only to remember its secrets; a batch that does not load is
// the caller's to report, and is ignored here.
func RememberBatchFile(path string, getenv func(string) (string, bool)) {
	b, err := jobs.LoadWith(path, getenv, jobs.LoadOptions{AgentOptional: true})
	if err == nil {
		RememberBatch(b)
	}
}

func rememberServer(s *mcpconfig.Server) {
	if s == nil {
		return
	}
	redact.Remember(s.Secrets()...)
	if s.URL != "" {
		redact.RememberURL(s.URL)
	}
}

// minServerValue is the shortest value ServerUses matches: a value of a
// few characters ("1", "eu") is found inside any URL by chance.
const minServerValue = 4

// ServerUses names the batch's server whose definition carries value (in
// its URL, a header, an env value, its command or arguments), or "" for
// none. A variable the batch takes from the shell with such a value is a
// server's secret whatever its name (WEB_URL with a token in its path):
// it never goes into a schedule entry, and doctor fails an entry that
// holds it.
func ServerUses(b *jobs.Batch, value string) string {
	if b == nil || len(value) < minServerValue {
		return ""
	}
	for _, s := range b.Servers {
		m := &s.MCP
		fields := append([]string{m.URL, m.Command}, m.Args...)
		for _, v := range m.Env {
			fields = append(fields, v)
		}
		for _, v := range m.Headers {
			fields = append(fields, v)
		}
		for _, f := range fields {
			if strings.Contains(f, value) {
				return s.Name
			}
		}
	}
	return ""
}
