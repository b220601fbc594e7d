package operator

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// Sightings are the newest state the night journaled of each server:
// its changes of state (server-state, server-final) and the stdio servers
// exec-server could not bring back under a session (server-lost). A
// removed entry (server-state without a status) is no sighting.
func Sightings(events []journal.Event) map[string]healthcheck.Sighting {
	out := map[string]healthcheck.Sighting{}
	for _, ev := range events {
		var sg healthcheck.Sighting
		switch ev.Type {
		case journal.ServerState, journal.ServerFinal:
			if ev.Status != journal.Healthy && ev.Status != journal.Unhealthy {
				continue
			}
			sg = healthcheck.Sighting{At: ev.Time, Down: ev.Status == journal.Unhealthy,
				Code: healthcheck.ClassOfStored(ev.Code), Reason: ev.Reason, By: ev.By}
		case journal.ServerLost:
			sg = healthcheck.Sighting{At: ev.Time, Down: true, Code: healthcheck.CodeTransport,
				Reason: fmt.Sprintf("lost under %s attempt %d: %s", ev.Job, ev.Attempt, ev.Reason)}
		default:
			continue
		}
		if ev.Server == "" || !sg.At.After(out[ev.Server].At) && !out[ev.Server].At.IsZero() {
			continue
		}
		out[ev.Server] = sg
	}
	return out
}

// NightStatus is Status with what the night journaled: a server the
// night saw go down after the cache's last verdict is shown down
// (healthcheck.Settings.Sighted decides which is newer).
func NightStatus(f *healthcheck.File, r *mcpconfig.Resolved, s healthcheck.Settings, now time.Time, seen map[string]healthcheck.Sighting) []StatusRow {
	if len(seen) > 0 {
		merged := &healthcheck.File{Servers: map[string]*healthcheck.Entry{}}
		if f != nil {
			for n, e := range f.Servers {
				merged.Servers[n] = e
			}
		}
		for n, sg := range seen {
			if e := s.Sighted(merged.Entry(n), sg); e != nil {
				merged.Servers[n] = e
			}
		}
		f = merged
	}
	return Status(f, r, s, now)
}

// PrintNight writes a night's live view: its run, what runs, what waits
// and why, the counts, the cost against max_cost_usd and the estimated end.
func PrintNight(w io.Writer, lv plan.Live, holder int, now time.Time) {
	state := "running"
	switch {
	case !lv.Ended.IsZero():
		state = "ended " + clock(lv.Ended)
	case holder == 0:
		state = "not running: its supervisor is gone; `nightwatch run` resumes it"
	case lv.Stopped != "":
		state = "stopping: " + lv.Stopped
	case lv.Paused != "":
		state = "paused: " + lv.Paused
		if !lv.PausedUntil.IsZero() {
			state += " until " + clock(lv.PausedUntil)
		}
	}
	if holder > 0 && lv.Ended.IsZero() {
		state += fmt.Sprintf(" (pid %d)", holder)
	}
	resumed := ""
	if lv.Resumed {
		resumed = ", resumed"
	}
	fmt.Fprintf(w, "night %s of %s, started %s%s: %s\n", lv.RunID, lv.Batch, clock(lv.Started), resumed, outside(state, 200))
	left := lv.Total - lv.Done - lv.Failed - lv.Skipped
	if lv.Ended.IsZero() {
		fmt.Fprintf(w, "jobs: %d done, %d failed, %d skipped, %d running, %d waiting (of %d)\n",
			lv.Done, lv.Failed, lv.Skipped, len(lv.Running), left-len(lv.Running), lv.Total)
	} else {
		// A run closed before its jobs ended leaves them unfinished.
		fmt.Fprintf(w, "jobs: %d done, %d failed, %d skipped, %d unfinished (of %d)\n",
			lv.Done, lv.Failed, lv.Skipped, left, lv.Total)
	}
	cost := fmt.Sprintf("$%.4f", lv.CostUSD)
	if lv.MaxCostUSD > 0 {
		cost += fmt.Sprintf(" of max_cost_usd $%.2f (%.0f%%)", lv.MaxCostUSD, 100*lv.CostUSD/lv.MaxCostUSD)
	}
	if len(lv.Running) > 0 {
		cost += ", running attempts not counted until they end"
	}
	fmt.Fprintf(w, "spent: %s\n", cost)
	if lv.Ended.IsZero() {
		end := "unknown"
		if !lv.EndEstimate.IsZero() {
			end = "about " + clock(lv.EndEstimate)
		}
		if lv.EndWhy != "" {
			end += " (" + lv.EndWhy + ")"
		}
		if !lv.Deadline.IsZero() {
			end += "; deadline " + clock(lv.Deadline)
		}
		fmt.Fprintf(w, "end: %s\n", end)
	}
	if len(lv.Running)+len(lv.Waiting) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATE\tATTEMPT\tFOR\tWHY")
	for _, r := range lv.Running {
		fmt.Fprintf(tw, "%s\trunning\t%d\t%s\t-\n", r.Name, r.Attempt, r.Elapsed)
	}
	for _, j := range lv.Waiting {
		why := j.Why
		if !j.Until.IsZero() && j.Until.After(now) {
			why += " (until " + clock(j.Until) + ")"
		}
		attempt := "-"
		if j.Attempt > 0 {
			attempt = fmt.Sprint(j.Attempt)
		}
		fmt.Fprintf(tw, "%s\twaiting\t%s\t-\t%s\n", j.Name, attempt, outside(why, 160))
	}
	_ = tw.Flush()
}

// clock is a time of the night as the operator reads it.
func clock(t time.Time) string { return t.Local().Format("15:04:05") }

// outside is text from the night (a server's words, a reason) made safe
// for a terminal: one line, control characters escaped.
func outside(s string, max int) string { return text.Printable(text.OneLine(s, max)) }
