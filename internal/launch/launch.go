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
	"strconv"
	"strings"
	"time"

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

// Bounds are one stdio server's restart and hang limits (a server's
// restart: block in the batch), carried to its exec-server as flags. They
// are numbers, never secrets. A zero field leaves exec-server's default.
type Bounds struct {
	// Restarts within Within before the server is given up; nil: the
	// default; 0: never restarted (its first loss is final).
	Restarts *int
	Within   time.Duration
	// HangAfter: a request outstanding this long gets a ping; NoHang: the
	// server is never judged hung (it may run a long call and answer
	// nothing meanwhile, not even a ping).
	HangAfter time.Duration
	NoHang    bool
	// PingTimeout: a ping unanswered this long means the server hangs.
	PingTimeout time.Duration
}

// Flags are b as exec-server's flags (none for the zero Bounds).
func (b Bounds) Flags() []string {
	var out []string
	if b.Restarts != nil {
		out = append(out, "--restarts", strconv.Itoa(*b.Restarts))
	}
	if b.Within > 0 {
		out = append(out, "--window", b.Within.String())
	}
	if b.NoHang {
		out = append(out, "--no-hang-check")
	} else if b.HangAfter > 0 {
		out = append(out, "--hang-after", b.HangAfter.String())
	}
	if b.PingTimeout > 0 {
		out = append(out, "--ping-timeout", b.PingTimeout.String())
	}
	return out
}

// Args builds the exec-server arguments that run argv, the session's
// server named server, with the given kept names and bounds (for the
// session's MCP config): the binary's own path comes first.
func Args(server string, keep []string, bounds Bounds, argv []string) []string {
	out := []string{"exec-server", "--server", server}
	if len(keep) > 0 {
		out = append(out, "--keep", strings.Join(keep, ","))
	}
	out = append(out, bounds.Flags()...)
	return append(append(out, "--"), argv...)
}
