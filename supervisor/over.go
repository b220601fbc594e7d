package supervisor

import (
	"errors"
	"io/fs"

	"github.com/nightwatch-dev/nightwatch/internal/batchlock"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// NightOver says whether the night of runID in stateDir is over for an
// onlooker (`logs --follow`, `status --watch`): its journal closed the
// run, or no process holds its batch's lock any more (its supervisor
// died; the next `run` resumes it). why says which.
func NightOver(stateDir, runID string) (over bool, why string) {
	events, err := journal.Read(statedir.Journal(stateDir, runID))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return true, "the night has no journal"
		}
		return false, ""
	}
	if at, ended := journal.Ended(events); ended {
		return true, "the night ended at " + at.Local().Format("15:04:05")
	}
	if len(events) > 0 && events[0].Batch != "" && batchlock.Holder(stateDir, events[0].Batch) == 0 {
		return true, "no process runs the night (its supervisor is gone; `nightwatch run` resumes it)"
	}
	return false, ""
}
