package healthcheck

import (
	"fmt"
	"time"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// NewProcess is what the events file says of server's process in one
// attempt's session around its outage that began at down: whether a new
// process replaced the one that answered before it (exec-server restarted
// it, or Claude Code started a new exec-server of it), and how. "Before
// it" is since the server was last seen turning healthy before down, or
// since the attempt's first start of it.
//
// A held call's "server is back" line says from it whether the server
// restarted (ids and handles from before are gone) instead of guessing.
// Stdio servers only: exec-server writes these events; an HTTP server's
// restart is read from its entry (HTTPRestart).
func NewProcess(events []Event, run, job string, attempt int, server string, down time.Time) (how string, ok bool) {
	var up time.Time
	for _, ev := range events {
		if ev.Kind == EventState && ev.Server == server && ev.To == StatusHealthy && ev.Time.Before(down) {
			up = ev.Time
		}
	}
	started := false
	for _, ev := range events {
		if ev.Server != server || ev.Run != run || ev.Job != job || ev.Attempt != attempt {
			continue
		}
		switch ev.Kind {
		case EventServerRestarted:
			if !ev.Time.Before(up) {
				how = "nightwatch restarted it"
				if ev.Reason != "" {
					how += " after it " + ev.Reason
				}
			}
		case EventServerStarted:
			if ev.Start == 1 && started && !ev.Time.Before(up) {
				how = "Claude Code started it again"
			}
			started = true
		}
	}
	return how, how != ""
}

// HTTPRestart says whether the HTTP (or SSE) server whose entry is e, back
// after an outage that began at down, is a new process, and how that was
// seen: during the outage its address refused connections (RefusedAt; the
// dialer's ECONNREFUSED for a probe, the client's own "Unable to connect"
// for a call), so nothing listened there, and a probe's handshake answered
// again after it. A server that kept its listener (a 503, a reset, a
// timeout) is not called new: nothing says it is. Never read from a
// tool's result.
func HTTPRestart(e *Entry, transport mcpconfig.Transport, down time.Time) (how string, ok bool) {
	if e == nil || transport == mcpconfig.Stdio || e.Status != StatusHealthy || e.RefusedAt == 0 ||
		e.LastRestoredAt < e.RefusedAt || e.RefusedAt < MillisOf(down) {
		return "", false
	}
	who := "a probe"
	if e.RefusedBy == ByCallFailure {
		who = "Claude Code's call"
	}
	back := "a probe's handshake answered"
	switch e.RestoredBy {
	case RestoredByReconnect:
		back = "its reconnect command ran and a probe's handshake answered"
	case RestoredByPassive:
		back = "a call was answered"
	}
	return fmt.Sprintf("HTTP: its address refused connections during the outage (seen by %s), then %s", who, back), true
}

// RestoredAt says whether e turned healthy from an outage at at (its
// LastRestoredAt): a decision whose probe checked the server at at ended
// the outage itself.
func RestoredAt(e *Entry, at Millis) bool {
	return e != nil && e.Status == StatusHealthy && at != 0 && e.LastRestoredAt == at
}
