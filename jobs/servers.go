package jobs

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/reconnect"
)

// The fields of a server entry. The MCP ones are those of a .mcp.json entry
// that Claude Code documents (transport fields, then the optional timeout,
// alwaysLoad, oauth and headersHelper); they go into the session's MCP
// config. Other keys are refused: a typo such as "alwaysload" would be
// dropped silently by Claude Code and the night would run without it.
var (
	stdioFields  = []string{"command", "args", "env"}
	remoteFields = []string{"url", "headers", "headersHelper", "oauth"}
	serverFields = []string{
		"type", "command", "args", "env", "url", "headers",
		"timeout", "alwaysLoad", "oauth", "headersHelper",
		"requires_env", "reconnect", "max_hold", "restart", // nightwatch's own, never written to the MCP config
	}
)

// server reads one entry of "servers". The entry is rebuilt as JSON with
// variables resolved and the command made absolute, then judged by
// mcpconfig.ParseEntry, the reader the health engine uses for .mcp.json, so
// the transport rules (no type + command = stdio, a url without a type is
// dropped, "streamable-http" = http) are Claude Code's in both places.
func (l *loader) server(p pair) *Server {
	name, field := p.key, join("servers", p.key)
	if !validServerName(name) {
		l.problem(p.line(), field, "server names may contain only letters, digits, _ and - (Claude Code's rule)")
	}
	f := l.fields(p.val, field, serverFields...)
	entry := map[string]any{}
	before := len(l.problems)
	// Every variable the MCP fields below expand is the server's
	// (Server.Vars); the recording stops before reconnect.
	l.refs = map[string]bool{}
	defer func() { l.refs = nil }()

	var typ string
	if q, ok := f["type"]; ok {
		typ, _, _ = l.str(q.val, field+".type")
		entry["type"] = typ
	}
	var command string
	if q, ok := f["command"]; ok {
		command, _, _ = l.str(q.val, field+".command")
		entry["command"] = command
	}
	var args []string
	if q, ok := f["args"]; ok {
		if args = values(l.strList(q.val, field+".args", true)); args != nil {
			entry["args"] = args
		}
	}
	env := map[string]string{}
	if q, ok := f["env"]; ok {
		for _, it := range l.strMap(q.val, field+".env") {
			if !isVarName(it.key) {
				l.problem(it.line, field+".env."+it.key, "is not a variable name (letters, digits and _, not starting with a digit)")
			}
			l.literalSecret(it, field+".env."+it.key)
			env[it.key] = it.value
		}
	}
	var url string
	if q, ok := f["url"]; ok {
		url, _, _ = l.str(q.val, field+".url")
		entry["url"] = url
	}
	var headers map[string]string
	if q, ok := f["headers"]; ok {
		items := l.strMap(q.val, field+".headers")
		for _, it := range items {
			l.literalSecret(it, field+".headers."+it.key)
		}
		if headers = toMap(items); headers != nil {
			entry["headers"] = headers
		}
	}
	if q, ok := f["timeout"]; ok {
		// Milliseconds per tool call; Claude Code ignores values under 1000
		// without a word, so refuse them here.
		if ms, _, ok := l.integer(q.val, field+".timeout", 1000); ok {
			entry["timeout"] = ms
		}
	}
	if q, ok := f["alwaysLoad"]; ok {
		if b, ok := l.boolean(q.val, field+".alwaysLoad"); ok {
			entry["alwaysLoad"] = b
		}
	}
	if q, ok := f["headersHelper"]; ok {
		if s, _, ok := l.str(q.val, field+".headersHelper"); ok {
			entry["headersHelper"] = s
		}
	}
	if q, ok := f["oauth"]; ok {
		if o := l.oauth(q.val, field+".oauth"); o != nil {
			entry["oauth"] = o
		}
	}

	srv := &Server{Name: name, Line: p.line()}
	refs := l.refs
	l.refs = nil
	if q, ok := f["reconnect"]; ok {
		var line int
		srv.Reconnect, line, _ = l.str(q.val, field+".reconnect")
		if syntax := reconnect.ShellSyntax(srv.Reconnect); len(syntax) > 0 {
			l.warn(line, field+".reconnect", "relies on shell syntax (%s), and nightwatch runs no shell: write it as sh -c %s",
				strings.Join(syntax, " "), text.ShellQuote(srv.Reconnect))
		}
	}
	if q, ok := f["max_hold"]; ok {
		if v, ok := l.maxHold(q.val, field+".max_hold"); ok {
			srv.MaxHold = &v
		}
	}
	if q, ok := f["restart"]; ok {
		srv.Restart = l.restart(q.val, field+".restart")
	}
	var required []requiredVar
	if q, ok := f["requires_env"]; ok {
		required = l.requiredEnv(q.val, field+".requires_env", env)
		for _, r := range required {
			srv.RequiresEnv = append(srv.RequiresEnv, r.name)
		}
	}
	for _, n := range srv.RequiresEnv {
		refs[n] = true
	}
	srv.Vars = slices.Sorted(maps.Keys(refs))
	if len(l.problems) > before {
		// Judging a half-read entry would only add noise ("has no command"
		// when the command's variable was the problem).
		return srv
	}

	raw, err := json.Marshal(entry)
	if err != nil {
		l.problem(p.line(), field, "cannot encode the entry as JSON: %v", err)
		return srv
	}
	mcp, dropped, err := mcpconfig.ParseEntry(name, raw, nil)
	switch {
	case err != nil:
		l.problem(p.line(), field, "%v", err)
		return srv
	case dropped != "":
		l.problem(p.line(), field, "Claude Code would drop this server: %s", dropped)
		return srv
	}

	// Fields of the other transport are ignored by Claude Code; here they
	// are a mistake worth a line (an http server given "env" will not see it).
	other := remoteFields
	if mcp.Transport != mcpconfig.Stdio {
		other = stdioFields
	}
	if q, ok := f["restart"]; ok && mcp.Transport != mcpconfig.Stdio {
		l.problem(q.line(), field+".restart", "is not used by a %s server (nightwatch restarts only the stdio servers it starts)", mcp.Transport)
	}
	for _, k := range other {
		if q, ok := f[k]; ok {
			l.problem(q.line(), join(field, k), "is not used by a %s server", mcp.Transport)
		}
	}

	if mcp.Transport == mcpconfig.Stdio && command != "" {
		// launchd's PATH is /usr/bin:/bin:/usr/sbin:/sbin: a bare "npx" must
		// be made absolute now. A command with a "/" may not exist yet (it is
		// built before the night): preflight reports it if it does not.
		if abs, ok := l.executable(command, f["command"].line(), field+".command", false); ok {
			command = abs
			entry["command"] = abs
		}
	}

	// requires_env goes into a stdio server's env: a session started by
	// launchd has no login shell to inherit it from. An http server has no
	// env; there the check alone matters (its headers use the variable).
	if mcp.Transport == mcpconfig.Stdio {
		for _, r := range required {
			if _, set := env[r.name]; !set {
				env[r.name] = r.value
			}
		}
	}
	if len(env) > 0 {
		entry["env"] = env
	}

	raw, err = json.Marshal(entry)
	if err != nil {
		l.problem(p.line(), field, "cannot encode the entry as JSON: %v", err)
		return srv
	}
	// ParseEntry decided the transport; the values are taken from the entry
	// as written so that MCP and Raw can never disagree (ParseEntry would
	// expand a "${" that a resolved value happens to contain a second time).
	srv.MCP = mcpconfig.Server{
		Name:      name,
		Transport: mcp.Transport,
		Command:   command,
		Args:      args,
		URL:       url,
		Headers:   headers,
		Source:    l.abs,
		Scope:     mcpconfig.ScopeExplicit,
		Raw:       raw,
	}
	if mcp.Transport == mcpconfig.Stdio && len(env) > 0 {
		srv.MCP.Env = env
	}
	return srv
}

// requiredVar is a variable of requires_env and its resolved value.
type requiredVar struct{ name, value string }

// requiredEnv checks requires_env: each variable must have a non-empty
// value, from the server's env or else from env_file, env and the process.
func (l *loader) requiredEnv(n *yaml.Node, field string, env map[string]string) []requiredVar {
	var out []requiredVar
	for _, it := range l.strList(n, field, false) {
		if !isVarName(it.value) {
			l.problem(it.line, field, "%q is not a variable name", it.value)
			continue
		}
		v, inEntry := env[it.value]
		if !inEntry {
			v, _ = l.lookup(it.value)
		}
		if v == "" {
			l.problem(it.line, field, "required variable %s is not set (set it in env_file, env or the environment)", it.value)
			continue
		}
		out = append(out, requiredVar{name: it.value, value: v})
	}
	return out
}

// oauth reads Claude Code's oauth settings (clientId, callbackPort,
// authServerMetadataUrl, scopes, …): a mapping of single values, kept with
// their YAML type so callbackPort stays a number in the JSON.
func (l *loader) oauth(n *yaml.Node, field string) map[string]any {
	ps, ok := l.pairs(n, field)
	if !ok {
		return nil
	}
	out := map[string]any{}
	for _, p := range ps {
		f := join(field, p.key)
		s, ok := l.scalar(p.val, f)
		if !ok {
			continue
		}
		v, ok := l.expand(s.Value, s.Line, f)
		if !ok {
			continue
		}
		out[p.key] = typedScalar(s.Tag, v)
	}
	return out
}

// typedScalar keeps YAML's reading of an unquoted number or boolean.
func typedScalar(tag, v string) any {
	switch tag {
	case "!!int":
		if i, err := strconv.ParseInt(v, 0, 64); err == nil {
			return i
		}
	case "!!float":
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	case "!!bool":
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return v
}

func validServerName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

func values(items []item) []string {
	if len(items) == 0 {
		return nil
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.value
	}
	return out
}
