// Package launch starts an MCP server with the least-privilege environment:
// the base variables (environ.Base) plus the server's own env, nothing of
// another server's keys, the batch's env_file or the agent's credentials.
//
// Claude Code gives every stdio server it spawns its own environment, which
// in a night holds every key the night has. The supervisor therefore writes
// each stdio server of a session's MCP config as
//
//	nightwatch exec-server --keep NAME,NAME -- <command> <args…>
//
// with the server's env beside it, and exec-server (package serverguard)
// runs the real server with only the base and the kept names. Only names
// travel on the command line, never a value.
package launch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/environ"
)

// Environment is what the server gets: the base variables of env, then
// each kept name that env sets, in keep's order.
func Environment(env []string, keep []string) []string {
	out := environ.Base(env)
	lookup := environ.Lookup(env)
	for _, name := range keep {
		if environ.IsBase(name) {
			continue // already there
		}
		if v, ok := lookup(name); ok {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// ParseKeep reads a --keep value: comma-separated variable names.
func ParseKeep(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var names []string
	for _, n := range strings.Split(s, ",") {
		if !validName(n) {
			return nil, fmt.Errorf("--keep: %q is not a variable name", n)
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, nil
}

func validName(n string) bool {
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for _, c := range n {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Args builds the exec-server arguments that run argv, the session's
// server named server, with the given kept names (for the session's MCP
// config): the binary's own path comes first.
func Args(server string, keep []string, argv []string) []string {
	out := []string{"exec-server", "--server", server}
	if len(keep) > 0 {
		out = append(out, "--keep", strings.Join(keep, ","))
	}
	return append(append(out, "--"), argv...)
}
