package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/rs/zerolog"
)

// EventSessionProcess records the process group of a session, so that a
// supervisor started after a crash (SIGKILL, power loss) can end the
// sessions the dead one left running: no session outlives its night.
const EventSessionProcess = "session-process"

// sessionProcessEvent is the journal line for a started session.
func sessionProcessEvent(job string, attempt, pid int) Event {
	return Event{Type: EventSessionProcess, Job: job, Attempt: attempt, PID: pid,
		Reason: processStartID(pid)}
}

// killLeftovers kills the process groups of sessions that were running
// when the previous supervisor died. A group is killed only if its leader
// is still the process that was started (same start time), so a reused
// pid is never hit.
func killLeftovers(events []Event, log zerolog.Logger) {
	open := map[string]Event{}
	for _, ev := range events {
		key := fmt.Sprintf("%s#%d", ev.Job, ev.Attempt)
		switch ev.Type {
		case EventSessionProcess:
			open[key] = ev
		case "job-finished", "job-retried", "job-skipped":
			delete(open, key)
		}
	}
	for _, ev := range open {
		if ev.PID <= 0 {
			continue
		}
		id := processStartID(ev.PID)
		if id == "" || id != ev.Reason {
			continue
		}
		if err := syscall.Kill(-ev.PID, syscall.SIGKILL); err == nil {
			log.Warn().Str("job", ev.Job).Int("pgid", ev.PID).Msg("killed a session left running by the previous supervisor")
		}
	}
}

// removeSessionConfigs deletes the MCP configs (which hold resolved
// secrets) that sessions of a killed supervisor left in the run's folder:
// RunSession removes its own when the session ends, a SIGKILL skips that.
// Called once the leftover sessions are killed.
func removeSessionConfigs(stateDir, runID string) {
	paths, _ := filepath.Glob(filepath.Join(stateDir, "runs", runID, "*", "attempt-*", "mcp.json"))
	for _, p := range paths {
		_ = os.Remove(p)
	}
}
