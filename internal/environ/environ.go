// Package environ handles environments in the form exec takes them: lists
// of NAME=VALUE.
package environ

import (
	"os"
	"slices"
	"strings"
)

// Overlay returns base (os.Environ() when nil) with every variable of over
// set, replacing base's value: the way Claude Code lays a server's env
// over its own, and the supervisor a batch's env over its own. The
// overlay's names come last, sorted, so the result does not depend on map
// order.
func Overlay(base []string, over map[string]string) []string {
	if base == nil {
		base = os.Environ()
	}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, replaced := over[name]; !replaced {
			out = append(out, kv)
		}
	}
	names := make([]string, 0, len(over))
	for name := range over {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		out = append(out, name+"="+over[name])
	}
	return out
}

// Lookup is os.LookupEnv over env; a name given twice takes its last
// value, as exec does.
func Lookup(env []string) func(string) (string, bool) {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if name, v, ok := strings.Cut(kv, "="); ok {
			m[name] = v
		}
	}
	return func(name string) (string, bool) { v, ok := m[name]; return v, ok }
}
