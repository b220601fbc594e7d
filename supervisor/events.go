package supervisor

import (
	"context"
	"fmt"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/session"
)

// absorbServerEvents copies new state changes and blocked calls from the
// events file into the journal.
func (n *night) absorbServerEvents() { n.absorb(n.events.Next(), "") }

// absorb journals events a host's hooks wrote (host "" for this one's; a
// cluster worker forwards its host's).
func (n *night) absorb(events []healthcheck.Event, host string) {
	for _, ev := range events {
		switch ev.Kind {
		case healthcheck.EventState:
			n.append(journal.Event{Type: journal.ServerState, Time: ev.Time, Server: ev.Server, Status: journal.Status(ev.To),
				By: string(ev.By), Code: ev.Code, Reason: ev.Reason, Host: host})
		case healthcheck.EventBlocked:
			n.append(journal.Event{Type: journal.CallBlocked, Time: ev.Time, Server: ev.Server, Tool: ev.Tool, Host: host})
		case healthcheck.EventServerStarted, healthcheck.EventServerRestarted, healthcheck.EventServerLost:
			if ev.Run == n.runID && ev.Job != "" {
				n.absorbGuard(ev, host)
			}
		case healthcheck.EventHeld:
			n.append(journal.Event{Type: journal.CallHeld, Time: ev.Time, Server: ev.Server, Tool: ev.Tool,
				Code: ev.Code, Outcome: heldOutcome(ev.Outcome), Seconds: ev.HeldSeconds, Host: host})
		}
	}
}

// attemptServer names a server of one attempt.
type attemptServer struct {
	host, job, server string
	attempt           int
}

// absorbGuard journals what the guard of a session's stdio server
// (exec-server) saw: a restart it made, a second exec-server of the same
// server in one attempt (Claude Code started it again), and a server it
// could not bring back, which stops the attempt the way a server the
// session could not use does (observe's SawUnusable), and which the plan
// counts among the attempt's unusable servers.
func (n *night) absorbGuard(ev healthcheck.Event, host string) {
	base := journal.Event{Time: ev.Time, Job: ev.Job, Attempt: ev.Attempt, Server: ev.Server, Host: host}
	switch ev.Kind {
	case healthcheck.EventServerStarted:
		if ev.Start != 1 {
			return // a start of its own restart, journaled with it
		}
		key := attemptServer{host: host, job: ev.Job, server: ev.Server, attempt: ev.Attempt}
		if n.guardStarts == nil {
			n.guardStarts = map[attemptServer]int{}
		}
		n.guardStarts[key]++
		if n.guardStarts[key] > 1 {
			base.Type, base.By = journal.ServerRestarted, journal.RestartedByClaude
			base.Reason = fmt.Sprintf("Claude Code started it again (start %d in this attempt)", n.guardStarts[key])
			n.append(base)
		}
	case healthcheck.EventServerRestarted:
		base.Type, base.By, base.Reason = journal.ServerRestarted, journal.RestartedByNightwatch, ev.Reason
		if ev.By == healthcheck.ByProbe {
			// A hook saw an HTTP server back as a new process; every call
			// held for that outage says so, the journal once.
			key := httpRestart{attemptServer{host: host, job: ev.Job, server: ev.Server, attempt: ev.Attempt}, ev.Since.UnixMilli()}
			if n.httpRestarts == nil {
				n.httpRestarts = map[httpRestart]bool{}
			}
			if n.httpRestarts[key] {
				return
			}
			n.httpRestarts[key] = true
			base.By = journal.RestartedOutside
		}
		n.append(base)
	case healthcheck.EventServerLost:
		base.Type, base.Reason = journal.ServerLost, ev.Reason
		n.append(base)
		n.plan.Apply(base)
		n.observe(context.Background(), session.Observation{Kind: session.SawUnusable, Job: ev.Job, Attempt: ev.Attempt,
			Host: host, Server: ev.Server, Why: "lost mid-session: " + ev.Reason})
	}
}

// httpRestart is one outage of an HTTP server of an attempt, by its
// first refused connection (the event's Since).
type httpRestart struct {
	attemptServer
	since int64
}

// heldOutcome is a hold's outcome in the journal's words.
func heldOutcome(o string) string {
	switch o {
	case healthcheck.HoldAnswered:
		return journal.HeldAnswered
	case healthcheck.HoldGaveUp:
		return journal.HeldGaveUp
	case healthcheck.HoldDenied:
		return journal.HeldDenied
	case healthcheck.HoldCancelled:
		return journal.HeldCancelled
	}
	return o
}
