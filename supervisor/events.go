package supervisor

import (
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/journal"
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
		case healthcheck.EventHeld:
			n.append(journal.Event{Type: journal.CallHeld, Time: ev.Time, Server: ev.Server, Tool: ev.Tool,
				Code: ev.Code, Outcome: heldOutcome(ev.Outcome), Seconds: ev.HeldSeconds, Host: host})
		}
	}
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
