// Package traps reads the settings that silently defeat the health checks
// of a night (the seed article's traps), once, for doctor and preflight to
// report in their own words: a fail-open variable left in an environment
// (the article's hook ran all night blocking nothing because
// ECC_MCP_HEALTH_FAIL_OPEN=1 was left in a launchd plist).
package traps

import (
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/knobs"
)

// FailOpenVar is a fail-open variable found set in an environment.
type FailOpenVar struct {
	Name, Value string
	// On is the value read as yes; Known is false for a value that is
	// neither yes nor no (the hook then warns and keeps fail-open off).
	On, Known bool
}

// FailOpenVars are the fail-open variables (knobs.EnvFailOpen, in its
// order) that lookup finds set to something other than blanks: a shell's
// environment, a launchd plist's or a systemd unit's variables, a settings
// file's "env", a batch's env.
func FailOpenVars(lookup func(name string) (string, bool)) []FailOpenVar {
	var out []FailOpenVar
	for _, name := range knobs.EnvFailOpen {
		v, ok := lookup(name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		on, known := knobs.ParseBool(v)
		out = append(out, FailOpenVar{Name: name, Value: v, On: on, Known: known})
	}
	return out
}

// MapLookup looks names up in vars (a unit's or a batch's variables).
func MapLookup[V any](vars map[string]V, format func(V) string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		if !ok {
			return "", false
		}
		return format(v), true
	}
}
