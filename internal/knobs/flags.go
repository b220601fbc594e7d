package knobs

import (
	"flag"
	"fmt"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

// Flags are the command-line flags that override the knobs, shared by
// `nightwatch hook` (cobra) and the nightwatch-hook executable (the
// standard flag package): both register them with Register's names and
// lay them over the environment with Apply, so the two read a command
// line alike.
type Flags struct {
	State, Config, Log, Events                           string
	TTL, Backoff, MaxBackoff, ProbeTimeout, ReconnectTmo time.Duration
	MaxHold                                              time.Duration
	FailOpen                                             bool
	FailureThreshold                                     int
}

// FlagSet is what Register needs of a flag set: the standard library's
// *flag.FlagSet and pflag's both have these methods.
type FlagSet interface {
	StringVar(p *string, name, value, usage string)
	DurationVar(p *time.Duration, name string, value time.Duration, usage string)
	IntVar(p *int, name string, value int, usage string)
	BoolVar(p *bool, name string, value bool, usage string)
}

var _ FlagSet = (*flag.FlagSet)(nil)

// Register adds the flags to fs; hookOnly adds those only the hook reads.
func (f *Flags) Register(fs FlagSet, hookOnly bool) {
	fs.StringVar(&f.State, "state", "", "health cache file (NIGHTWATCH_STATE_PATH; default ~/.claude/mcp-health-cache.json)")
	fs.StringVar(&f.Config, "config", "", "MCP config files to read instead of Claude Code's search, path-list separated (NIGHTWATCH_MCP_CONFIG)")
	fs.DurationVar(&f.TTL, "ttl", 0, "how long a healthy verdict is trusted (NIGHTWATCH_TTL; default 2m)")
	fs.DurationVar(&f.Backoff, "backoff", 0, "first wait after a failure, doubling per failure (NIGHTWATCH_BACKOFF; default 30s)")
	fs.DurationVar(&f.MaxBackoff, "max-backoff", 0, "cap of the backoff (NIGHTWATCH_MAX_BACKOFF; default 10m)")
	fs.DurationVar(&f.ProbeTimeout, "probe-timeout", 0, "bound of one probe (NIGHTWATCH_PROBE_TIMEOUT; default 5s)")
	fs.IntVar(&f.FailureThreshold, "failure-threshold", 0, "failed calls in a row naming a server or upstream condition (5xx, 429, overloaded, refused, timed out) that open a server (NIGHTWATCH_FAILURE_THRESHOLD; default 3)")
	if hookOnly {
		fs.DurationVar(&f.ReconnectTmo, "reconnect-timeout", 0, "bound of one reconnect command (NIGHTWATCH_RECONNECT_TIMEOUT; default 5s)")
		fs.DurationVar(&f.MaxHold, "max-hold", 0, "how long a call to a server that is down but being repaired waits for it before it is denied; 0 never holds (NIGHTWATCH_MAX_HOLD; default 2m, at most 5m)")
		fs.BoolVar(&f.FailOpen, "fail-open", false, "let calls to unhealthy servers through, saying so each time; for debugging only (NIGHTWATCH_FAIL_OPEN)")
		fs.StringVar(&f.Log, "log", "", "append JSON log lines to this file (NIGHTWATCH_LOG)")
		fs.StringVar(&f.Events, "events", "", "append one JSON line per blocked call and state change (NIGHTWATCH_EVENTS)")
	}
}

// Apply lays the flags that were given (changed says which, by name) over
// k. A value it cannot use is a Problem, and k's value stays.
func (k *Knobs) Apply(f *Flags, changed func(name string) bool, home string, getenv Getenv) {
	path := func(name, v string, dst *Value[string]) {
		if !changed(name) {
			return
		}
		p, err := ExpandPath(v, home, getenv)
		if err != nil {
			k.Problems = append(k.Problems, "--"+name+": "+err.Error())
			return
		}
		dst.Set(p, "--"+name)
	}
	path("state", f.State, &k.StatePath)
	path("log", f.Log, &k.LogPath)
	path("events", f.Events, &k.EventsPath)
	if changed("config") {
		k.MCPConfig.Set(f.Config, "--config")
	}
	dur := func(name string, v time.Duration, dst *Value[time.Duration]) {
		if !changed(name) {
			return
		}
		if v <= 0 {
			k.Problems = append(k.Problems, "--"+name+" must be positive; using "+dst.V.String())
			return
		}
		dst.Set(v, "--"+name)
	}
	dur("ttl", f.TTL, &k.TTL)
	dur("backoff", f.Backoff, &k.Backoff)
	dur("max-backoff", f.MaxBackoff, &k.MaxBackoff)
	dur("probe-timeout", f.ProbeTimeout, &k.ProbeTimeout)
	dur("reconnect-timeout", f.ReconnectTmo, &k.ReconnectTimeout)
	if changed("failure-threshold") {
		if f.FailureThreshold < 1 {
			k.Problems = append(k.Problems, fmt.Sprintf("--failure-threshold must be at least 1; using %d", k.FailureThreshold.V))
		} else {
			k.FailureThreshold.Set(f.FailureThreshold, "--failure-threshold")
		}
	}
	if changed("max-hold") {
		if f.MaxHold < 0 || f.MaxHold > healthcheck.MaxMaxHold {
			k.Problems = append(k.Problems, fmt.Sprintf("--max-hold must be between 0 and %s; using %s", healthcheck.MaxMaxHold, k.MaxHold.V))
		} else {
			k.MaxHold.Set(f.MaxHold, "--max-hold")
		}
	}
	if changed("fail-open") {
		k.FailOpen.Set(f.FailOpen, "--fail-open")
	}
}
