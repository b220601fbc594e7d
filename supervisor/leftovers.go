package supervisor

import (
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// sessionProcessEvent is the journal line for a started session: its
// process group, so that a supervisor started after a crash (SIGKILL,
// power loss) can end the sessions the dead one left running: no session
// outlives its night.
func sessionProcessEvent(job string, attempt, pid int) journal.Event {
	return journal.Event{Type: journal.SessionProcess, Job: job, Attempt: attempt, PID: pid,
		StartID: proc.StartID(pid)}
}

// killLeftovers kills the process groups of sessions that were running
// when the previous supervisor died (journal.RunState.Sessions). A group
// is killed only if its leader is still the process that was started
// (same start time), so a reused pid is never hit.
func killLeftovers(sessions []journal.Event, log zerolog.Logger) {
	for _, ev := range sessions {
		if ev.PID <= 0 || ev.Host != "" {
			// ev.Host: a cluster worker's session, on another host.
			continue
		}
		id := proc.StartID(ev.PID)
		if id == "" || id != ev.StartID {
			continue
		}
		if err := proc.KillGroupID(ev.PID); err == nil {
			log.Warn().Str("job", ev.Job).Int("pgid", ev.PID).Msg("killed a session left running by the previous supervisor")
		}
	}
}

// removeSessionConfigs deletes the MCP configs and secrets files (which
// hold resolved secrets) that sessions of a killed supervisor left in the run's folder:
// a session removes its own when it ends, a SIGKILL skips that.
// Called once the leftover sessions are killed.
func removeSessionConfigs(stateDir, runID string) {
	for _, name := range []string{statedir.AttemptMCPConfig, statedir.AttemptSecrets} {
		paths, _ := filepath.Glob(statedir.AttemptFiles(stateDir, runID, name))
		for _, p := range paths {
			_ = os.Remove(p)
		}
	}
}
