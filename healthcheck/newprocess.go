package healthcheck

import "time"

// NewProcess is what the events file says of server's process in one
// attempt's session around its outage that began at down: whether a new
// process replaced the one that answered before it (exec-server restarted
// it, or Claude Code started a new exec-server of it), and how. "Before
// it" is since the server was last seen turning healthy before down, or
// since the attempt's first start of it.
//
// A held call's "server is back" line says from it whether the server
// restarted (ids and handles from before are gone) instead of guessing.
// Stdio servers only: exec-server writes these events; nothing tells of
// a restart of an HTTP server.
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
