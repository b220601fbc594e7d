package supervisor

import (
	"path/filepath"

	"github.com/nightwatch-dev/nightwatch/jobs"
)

// CachePath is the batch's health cache: shared by the supervisor and the
// hooks of every session of the batch, kept apart from the user's own
// ~/.claude/mcp-health-cache.json.
func CachePath(b *jobs.Batch) string { return filepath.Join(b.StateDir, "cache.json") }

// EventsPath is where the batch's hooks append blocked calls and state
// changes.
func EventsPath(b *jobs.Batch) string { return filepath.Join(b.StateDir, "events.jsonl") }
