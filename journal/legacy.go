package journal

import "strings"

// Journals written before the typed vocabulary (release 0.x, still resumed
// and reported) folded some facts into reason: "by: code: reason" on
// server-state, the tool on call-blocked and tool-unavailable, the start id
// on session-process, "files in <folder>" on job-started, "reconnect: …" and
// comma-joined servers on maintenance. upgrade moves them into their fields
// as the line is read, so that no reader ever parses a reason.

// legacyBy and legacyCodes are the words the old writer put in front of a
// server-state reason (healthcheck's By and FailureCode values then).
var (
	legacyBy    = map[string]bool{"probe": true, "reconnect": true, "passive": true, "call-failure": true, "reset": true}
	legacyCodes = map[string]bool{"auth": true, "rate-limited": true, "unavailable": true, "transport": true,
		"timeout": true, "session-expired": true, "not-mcp": true, "tool-error": true, "unknown": true}
)

const (
	legacyFilesIn   = "files in "
	legacyReconnect = "reconnect: "
	legacyDropped   = "dropped cache entries of servers the batch does not define"
)

// upgrade returns the events one old line stands for (a maintenance line
// naming several servers becomes one per server); a line in the current
// format is returned as it is.
func upgrade(ev Event) []Event {
	switch ev.Type {
	case ServerState:
		if ev.By == "" && ev.Code == "" && ev.Reason != "" {
			ev.By, ev.Code, ev.Reason = splitLegacyState(ev.Reason)
		}
	case CallBlocked, ToolUnavailable:
		if ev.Tool == "" {
			ev.Tool, ev.Reason = ev.Reason, ""
		}
	case SessionProcess:
		if ev.StartID == "" {
			ev.StartID, ev.Reason = ev.Reason, ""
		}
	case JobStarted:
		if ev.Folder == "" && strings.HasPrefix(ev.Reason, legacyFilesIn) {
			ev.Folder, ev.Reason = strings.TrimPrefix(ev.Reason, legacyFilesIn), ""
		}
	case Maintenance:
		if ev.Action == "" {
			switch {
			case strings.HasPrefix(ev.Reason, legacyReconnect):
				ev.Action, ev.Reason = Reconnect, strings.TrimPrefix(ev.Reason, legacyReconnect)
			case ev.Reason == legacyDropped:
				ev.Action = Drop
			case strings.HasPrefix(ev.Reason, "retry time came"):
				ev.Action = Retry
			default:
				ev.Action = Reprobe
			}
		}
		if strings.Contains(ev.Server, ",") {
			var out []Event
			for _, s := range strings.Split(ev.Server, ",") {
				one := ev
				one.Server = s
				out = append(out, one)
			}
			return out
		}
	}
	return []Event{ev}
}

// splitLegacyState cuts "by: code: reason" (each part optional) apart.
func splitLegacyState(reason string) (by, code, rest string) {
	rest = reason
	if first, after, _ := strings.Cut(rest, ": "); legacyBy[first] {
		by, rest = first, after
	}
	if first, after, _ := strings.Cut(rest, ": "); legacyCodes[first] {
		code, rest = first, after
	}
	return by, code, rest
}
