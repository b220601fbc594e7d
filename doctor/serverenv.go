package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	envlist "github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

const serverEnvTitle = "what each server gets"

// maskedValue stands for every value this check names: it says which
// variables a server gets, never what they hold.
const maskedValue = "••••"

// serverEnv shows, for each stdio server (the batch's, else those of the
// MCP config seen from here), the environment nightwatch starts it with in
// probes and sessions: the base variables present (envlist.Base) and its
// own env, by name, values masked; and how many variables of the session's
// environment it is not given (other servers' keys, env_file, the agent's
// credentials).
func (e *env) serverEnv(context.Context) []Check {
	var servers []*mcpconfig.Server
	session := e.Environ
	if e.batch != nil {
		for _, s := range e.batch.Servers {
			srv := s.MCP
			if srv.Name == "" {
				srv.Name = s.Name
			}
			servers = append(servers, &srv)
		}
		session = envlist.Overlay(e.Environ, e.batch.Env)
	} else {
		r := mcpconfig.Resolve(e.knobs.ConfigOptions(e.Cwd, e.Home, e.Getenv))
		for _, n := range r.Names {
			servers = append(servers, r.Servers[n])
		}
	}
	var base []string
	for _, kv := range envlist.Base(session) {
		name, _, _ := strings.Cut(kv, "=")
		base = append(base, name)
	}
	slices.Sort(base)
	var out []Check
	for _, s := range servers {
		if s == nil || s.Transport != mcpconfig.Stdio {
			continue
		}
		own := make([]string, 0, len(s.Env))
		for k := range s.Env {
			own = append(own, k)
		}
		slices.Sort(own)
		shown := make([]string, len(own))
		for i, k := range own {
			shown[i] = k + "=" + maskedValue
		}
		withheld := 0
		for _, kv := range session {
			name, _, _ := strings.Cut(kv, "=")
			if !envlist.IsBase(name) && !slices.Contains(own, name) {
				withheld++
			}
		}
		detail := fmt.Sprintf("%q gets", s.Name)
		if len(shown) > 0 {
			detail += " its own " + strings.Join(shown, ", ") + " and"
		}
		detail += fmt.Sprintf(" the base variables (%s); not the %d other variables of the session's environment",
			strings.Join(base, ", "), withheld)
		out = append(out, ok("server-env", serverEnvTitle, detail))
	}
	if len(out) == 0 {
		out = append(out, ok("server-env", serverEnvTitle, "no stdio server to start"))
	}
	return out
}
