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
		}
	}
}
