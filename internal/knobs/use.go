package knobs

import (
	"fmt"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/reconnect"
)

// EnvMaxHoldPrefix starts a server's own hold bound:
// NIGHTWATCH_MAX_HOLD_<KEY>, KEY as in its reconnect variable.
const EnvMaxHoldPrefix = "NIGHTWATCH_MAX_HOLD_"

// MaxHoldFor is how long a call to server may be held: the server's own
// variable, else MaxHold. A value it cannot read is said through warn and
// MaxHold is used.
func (k Knobs) MaxHoldFor(server string, getenv Getenv, warn func(string)) time.Duration {
	key := reconnect.EnvKey(server)
	if key == "" || getenv == nil {
		return k.MaxHold.V
	}
	v, ok := getenv(EnvMaxHoldPrefix + key)
	if !ok || v == "" {
		return k.MaxHold.V
	}
	d, err := ParseMaxHold(v)
	if err != nil {
		if warn != nil {
			warn(fmt.Sprintf("nightwatch: %s%s=%q: %v; using %s", EnvMaxHoldPrefix, key, v, err, k.MaxHold.V))
		}
		return k.MaxHold.V
	}
	return d
}

// Settings are the state machine's numbers from these knobs.
func (k Knobs) Settings() healthcheck.Settings {
	s := healthcheck.DefaultSettings()
	s.TTL, s.Backoff, s.MaxBackoff = k.TTL.V, k.Backoff.V, k.MaxBackoff.V
	s.FailureThreshold = k.FailureThreshold.V
	s.ClientStartup = k.ClientStartup.V
	return s
}

// SetSettings lays the state machine's numbers of s over k, from source
// (a batch file's health section: jobs.Health.Settings). ClientStartup
// stays k's: it is Claude Code's own wait, not the batch's.
func (k *Knobs) SetSettings(s healthcheck.Settings, source string) {
	k.TTL.Set(s.TTL, source)
	k.Backoff.Set(s.Backoff, source)
	k.MaxBackoff.Set(s.MaxBackoff, source)
	k.FailureThreshold.Set(s.FailureThreshold, source)
}

// ConfigOptions says where to look for MCP server definitions: the
// explicit list when one is set (NIGHTWATCH_MCP_CONFIG), else Claude
// Code's search from cwd, following CLAUDE_CONFIG_DIR.
func (k Knobs) ConfigOptions(cwd, home string, getenv Getenv) mcpconfig.Options {
	opts := mcpconfig.Options{Cwd: cwd, Home: home, Getenv: getenv}
	if dir, ok := getenv("CLAUDE_CONFIG_DIR"); ok && dir != "" {
		// Claude Code keeps .claude.json there instead of the home folder.
		if p, err := ExpandPath(dir, home, getenv); err == nil {
			opts.ConfigDir = p
		}
	}
	if k.MCPConfig.V != "" {
		opts.Explicit = mcpconfig.ExplicitPaths(k.MCPConfig.V, home, getenv)
	}
	return opts
}
