package healthcheck

import (
	"encoding/json"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
)

// Event kinds written to the events file.
const (
	EventBlocked = "blocked"
	EventState   = "state"
	EventTrial   = "trial"
)

// Event is one line of the events file: a call the hook blocked or a
// server's change of state. The supervisor and the morning report count
// blocked calls and outages from these lines.
type Event struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Session string    `json:"session,omitempty"`
	Server  string    `json:"server"`
	Tool    string    `json:"tool,omitempty"`
	From    Status    `json:"from,omitempty"`
	To      Status    `json:"to,omitempty"`
	Verdict string    `json:"verdict,omitempty"`
	Code    string    `json:"code,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	// By says what caused a state change: probe, reconnect, passive
	// (a real call), call-failure, reset.
	By    string    `json:"by,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

// EventLog appends events as JSON lines. A zero Path writes nothing.
type EventLog struct {
	Path string
	// Warn receives write failures, which are reported, never fatal.
	Warn func(string)
}

// Append writes ev as one line.
func (l *EventLog) Append(ev Event) {
	if l == nil || l.Path == "" {
		return
	}
	b, err := json.Marshal(ev)
	if err == nil {
		err = atomicfile.AppendLine(l.Path, b)
	}
	if err != nil && l.Warn != nil {
		l.Warn("nightwatch: cannot write events file: " + err.Error())
	}
}
