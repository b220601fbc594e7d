package healthcheck

import (
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
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

// TestHTTPRestart: an HTTP server is called a new process only when its
// address refused connections in the outage that just ended (a probe's
// errno or the client's own "Unable to connect") and it answered after
// that; a stdio server, a server still down, a refusal from before the
// outage and an outage without a refusal are not.
func TestHTTPRestart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	at := func(s int) Millis { return MillisOf(t0.Add(time.Duration(s) * time.Second)) }
	back := func(refused int, by By, restored int, restoredBy string) *Entry {
		e := &Entry{Status: StatusHealthy, LastRestoredAt: at(restored), RestoredBy: restoredBy, RefusedBy: by}
		if refused >= 0 {
			e.RefusedAt = at(refused)
		}
		return e
	}
	down := t0.Add(10 * time.Second)
	tests := []struct {
		name      string
		e         *Entry
		transport mcpconfig.Transport
		want      string
	}{
		{"no entry", nil, mcpconfig.HTTP, ""},
		{"refused, seen by a probe, then a probe answered", back(12, ByProbe, 20, RestoredByProbe), mcpconfig.HTTP,
			"HTTP: its address refused connections during the outage (seen by a probe), then a probe's handshake answered"},
		{"refused, seen by the client's call", back(10, ByCallFailure, 20, RestoredByProbe), mcpconfig.HTTP,
			"HTTP: its address refused connections during the outage (seen by Claude Code's call), then a probe's handshake answered"},
		{"back by its reconnect command", back(12, ByProbe, 20, RestoredByReconnect), mcpconfig.SSE,
			"HTTP: its address refused connections during the outage (seen by a probe), then its reconnect command ran and a probe's handshake answered"},
		{"back by a call", back(12, ByProbe, 20, RestoredByPassive), mcpconfig.HTTP,
			"HTTP: its address refused connections during the outage (seen by a probe), then a call was answered"},
		{"no refusal: it kept its listener (503, reset, timeout)", back(-1, "", 20, RestoredByProbe), mcpconfig.HTTP, ""},
		{"a refusal from before this outage", back(5, ByProbe, 20, RestoredByProbe), mcpconfig.HTTP, ""},
		{"refused after it came back (another outage's)", back(25, ByProbe, 20, RestoredByProbe), mcpconfig.HTTP, ""},
		{"still down", &Entry{Status: StatusUnhealthy, RefusedAt: at(12), RefusedBy: ByProbe}, mcpconfig.HTTP, ""},
		{"a stdio server (exec-server tells its restarts)", back(12, ByProbe, 20, RestoredByProbe), mcpconfig.Stdio, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := HTTPRestart(tt.e, tt.transport, down)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("HTTPRestart = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
}

// TestRefusedAt: an outage remembers its first refused connection, a new
// outage forgets the last one's, and the healthy entry after it keeps it
// for HTTPRestart.
func TestRefusedAt(t *testing.T) {
	s := DefaultSettings()
	t0 := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	e := s.MarkUnhealthy(nil, at(0), Failure{Code: CodeTransport, Reason: "ECONNREFUSED", RefusedBy: ByCallFailure})
	if e.RefusedAt != MillisOf(at(0)) || e.RefusedBy != ByCallFailure {
		t.Fatalf("first refusal: %+v", e)
	}
	e = s.StillDown(&e, at(2), Failure{Code: CodeTransport, Reason: "refused", RefusedBy: ByProbe})
	if e.RefusedAt != MillisOf(at(0)) || e.RefusedBy != ByCallFailure {
		t.Errorf("a later refusal moved the first: %+v", e)
	}
	e = s.MarkHealthy(&e, at(5), RestoredByProbe)
	if e.RefusedAt != MillisOf(at(0)) {
		t.Errorf("the healthy entry lost the outage's refusal: %+v", e)
	}
	if _, ok := HTTPRestart(&e, mcpconfig.HTTP, at(0)); !ok {
		t.Errorf("HTTPRestart after a refused outage: not a new process")
	}
	e = s.MarkUnhealthy(&e, at(9), Failure{Code: CodeUnavailable, Reason: "HTTP 503"})
	if e.RefusedAt != 0 || e.RefusedBy != "" {
		t.Errorf("a new outage kept the last one's refusal: %+v", e)
	}
	e = s.StillDown(&e, at(10), Failure{Code: CodeTransport, Reason: "refused", RefusedBy: ByProbe})
	if e.RefusedAt != MillisOf(at(10)) || e.RefusedBy != ByProbe {
		t.Errorf("a refusal seen while held: %+v", e)
	}
}

// TestRestoredAt: only the check that turned the entry healthy restored
// it; a later healthy check, a down entry and an unset time did not.
func TestRestoredAt(t *testing.T) {
	tests := []struct {
		name string
		e    *Entry
		at   Millis
		want bool
	}{
		{"this check restored it", &Entry{Status: StatusHealthy, CheckedAt: 20, LastRestoredAt: 20}, 20, true},
		{"restored earlier", &Entry{Status: StatusHealthy, CheckedAt: 30, LastRestoredAt: 20}, 30, false},
		{"still down", &Entry{Status: StatusUnhealthy, CheckedAt: 20, LastRestoredAt: 20}, 20, false},
		{"never checked", &Entry{Status: StatusHealthy}, 0, false},
		{"no entry", nil, 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RestoredAt(tt.e, tt.at); got != tt.want {
				t.Errorf("RestoredAt = %v, want %v", got, tt.want)
			}
		})
	}
}
