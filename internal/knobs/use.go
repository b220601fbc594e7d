package knobs

import (
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

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
