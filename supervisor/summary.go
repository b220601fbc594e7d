package supervisor

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// PrintSummary writes the night's outcome: one line per job, then totals.
func PrintSummary(w io.Writer, s *NightSummary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATUS\tATTEMPTS\tTURNS\tCOST\tDURATION\tREASON")
	for _, j := range s.Jobs {
		turns, cost, dur := "-", "-", "-"
		if o := j.Outcome; o != nil {
			turns = fmt.Sprint(o.NumTurns)
			cost = fmt.Sprintf("$%.4f", o.CostUSD)
			if !o.Started.IsZero() && !o.Ended.IsZero() {
				dur = o.Ended.Sub(o.Started).Round(time.Second).String()
			}
		}
		reason := j.Reason
		if o := j.Outcome; o != nil && j.Status == StatusDone && o.Verify != nil && o.Verify.OK {
			reason = text.JoinNonEmpty("; ", reason, "verified")
		}
		if reason == "" {
			reason = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", j.Name, j.Status, j.Attempts, turns, cost, dur, outside(reason, 120))
	}
	_ = tw.Flush()
	resumed := ""
	if s.Resumed {
		resumed = " (resumed)"
	}
	if s.Stopped != "" {
		fmt.Fprintf(w, "\n%s\n", outside(s.Stopped, 200))
	}
	for _, p := range s.Pauses {
		fmt.Fprintf(w, "\n%s", outside(p, 200))
	}
	if len(s.Pauses) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nrun %s%s: %d done, %d failed, %d skipped, $%.4f; journal %s\n",
		s.RunID, resumed, s.Done, s.Failed, s.Skipped, s.CostUSD, s.Journal)
}

// outside prepares text from the night (a session's stderr tail, an API's
// message) for a terminal or a notification: redacted with every secret
// the process knows, on one line of at most max runes, and with control
// characters written as escapes, so it can neither leak an env_file value
// nor rewrite the operator's terminal.
func outside(s string, max int) string {
	return text.Printable(text.OneLine(redact.String(s), max))
}
