package healthcheck

import (
	"testing"
	"time"
)

// TestNewProcess: only the attempt's own server counts; a restart or a
// second exec-server since the server last turned healthy before its
// outage is a new process; the session's first start is not.
func TestNewProcess(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ev := func(s int, kind, server string, start int, reason string) Event {
		return Event{Time: at(s), Kind: kind, Server: server, Run: "r", Job: "j", Attempt: 1, Start: start, Reason: reason}
	}
	other := ev(12, EventServerRestarted, "notes", 2, "exited with code 3")
	other.Attempt = 2
	tests := []struct {
		name   string
		events []Event
		since  time.Time
		want   string
	}{
		{"none", nil, at(10), ""},
		{"the first start only", []Event{ev(1, EventServerStarted, "notes", 1, "")}, at(0), ""},
		{"restarted by nightwatch", []Event{ev(1, EventServerStarted, "notes", 1, ""), ev(11, EventServerRestarted, "notes", 1, "exited with code 3"),
			ev(12, EventServerStarted, "notes", 2, "")}, at(10), "nightwatch restarted it after it exited with code 3"},
		{"restarted just before it was marked down", []Event{ev(1, EventServerStarted, "notes", 1, ""), ev(9, EventServerRestarted, "notes", 1, "exited with code 3")}, at(10), "nightwatch restarted it after it exited with code 3"},
		{"a restart before it last turned healthy", []Event{ev(1, EventServerStarted, "notes", 1, ""), ev(5, EventServerRestarted, "notes", 1, "exited with code 3"),
			{Time: at(7), Kind: EventState, Server: "notes", To: StatusHealthy}}, at(10), ""},
		{"turned healthy after the outage began: no bound", []Event{ev(5, EventServerRestarted, "notes", 1, "hung"),
			{Time: at(12), Kind: EventState, Server: "notes", To: StatusHealthy}}, at(10), "nightwatch restarted it after it hung"},
		{"Claude Code started it again", []Event{ev(1, EventServerStarted, "notes", 1, ""), ev(11, EventServerStarted, "notes", 1, "")}, at(10), "Claude Code started it again"},
		{"another server's restart", []Event{ev(11, EventServerRestarted, "search", 1, "hung")}, at(10), ""},
		{"another attempt's restart", []Event{other}, at(10), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NewProcess(tt.events, "r", "j", 1, "notes", tt.since)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("NewProcess = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
}
