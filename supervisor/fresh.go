package supervisor

import (
	"path/filepath"
	"strings"

	"github.com/nightwatch-dev/nightwatch/journal"
)

// endDeadNight is what `run --fresh` does before it starts anew: the
// newest unfinished run of the batch (its supervisor is dead: this one
// holds the batch's lock) may have left sessions running and their MCP
// configs, which hold resolved keys, on disk. Its sessions are killed
// (only those whose process is still the one started, by start id) and
// its session files removed, as a resume would; its journal stays
// unfinished, for the record.
func (n *night) endDeadNight() {
	path, events, err := journal.LatestUnfinished(n.b.StateDir, n.b.Name)
	if err != nil || path == "" {
		return
	}
	runID := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if len(events) > 0 && events[0].Run != "" {
		runID = events[0].Run
	}
	killLeftovers(journal.Replay(events).Sessions, n.log)
	removeSessionConfigs(n.b.StateDir, runID)
	n.log.Info().Str("run", runID).Msg("--fresh: ended what the unfinished run left (its sessions, its session MCP configs)")
}
