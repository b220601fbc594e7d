// Package batchsecrets tells the redactor every secret a loaded batch
// holds (its env_file, env, servers and notify URL), and finds which of
// the batch's servers a value belongs to. It is internal/secrets for the
// processes that load a batch; the hook, which never does, links neither
// it nor the batch loader.
package batchsecrets

import (
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/redacturl"
	"github.com/nightwatch-dev/nightwatch/internal/secrets"
	"github.com/nightwatch-dev/nightwatch/internal/serversecrets"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// EnvFileNames is secrets.NamesVariable's value for a batch: the names of the
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

// RememberBatch remembers what a loaded batch holds: every value env_file
// sets, whatever its name (a plain name's from secrets.MinPlainLen bytes; never a
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
		case redact.SensitiveName(k) || len(v) >= secrets.MinPlainLen:
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
		serversecrets.RememberServer(&s.MCP)
	}
	if b.Notify.Webhook != "" {
		redacturl.Remember(b.Notify.Webhook)
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
