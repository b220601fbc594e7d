package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// maxReason bounds a reason in a table cell or a line: a report is read in
// a terminal and in a chat message, where a stack trace does not help.
const maxReason = 160

// Verdict is the one line that says how the night went, e.g.
// "6 jobs: 5 done, 1 skipped · $0.42 · 02:00–05:47 · 1 outage".
func (n *Night) Verdict() string {
	t := n.Totals
	done := fmt.Sprintf("%d done", t.Done)
	if t.Verified > 0 {
		done += fmt.Sprintf(" (%d verified)", t.Verified)
	}
	counts := []string{done}
	if t.Failed > 0 {
		counts = append(counts, fmt.Sprintf("%d failed", t.Failed))
	}
	if t.Skipped > 0 {
		counts = append(counts, fmt.Sprintf("%d skipped", t.Skipped))
	}
	if other := t.Jobs - t.Done - t.Failed - t.Skipped; other > 0 {
		counts = append(counts, fmt.Sprintf("%d unfinished", other))
	}
	parts := []string{
		fmt.Sprintf("%s: %s", plural(t.Jobs, "job"), strings.Join(counts, ", ")),
		fmt.Sprintf("$%.2f", t.CostUSD),
		clock(n.Started) + "–" + clock(n.Ended),
	}
	if n.cluster() {
		parts = append(parts, plural(len(n.Hosts), "host"))
	}
	if t.Outages == 0 {
		parts = append(parts, "no outage")
	} else {
		parts = append(parts, plural(t.Outages, "outage"))
	}
	if len(n.Pauses) > 0 {
		var d time.Duration
		for _, ps := range n.Pauses {
			if !ps.To.IsZero() {
				d += ps.To.Sub(ps.From)
			}
		}
		parts = append(parts, fmt.Sprintf("paused %s on the API (%s)", span(d), plural(len(n.Pauses), "pause")))
	}
	if n.Stopped != "" {
		parts = append(parts, "stopped early: "+short(n.Stopped))
	}
	if n.Closed != "" {
		parts = append(parts, "closed unfinished: "+short(n.Closed))
	}
	if !n.Finished {
		parts = append(parts, "run not finished")
	}
	return strings.Join(parts, " · ")
}

// Markdown writes the report for a terminal or a chat message: a verdict,
// a jobs table, and one line per server.
func (n *Night) Markdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	// Every string argument is text from the night (job and server names,
	// reasons, a crash's stderr, verify output): escaped, so it can neither
	// add Markdown or raw HTML (a link, an image, a tag) nor send terminal
	// escapes to whoever prints the report. The format strings are ours.
	p := func(format string, args ...any) {
		for i, a := range args {
			if s, ok := a.(string); ok {
				args[i] = mdEscape(s)
			}
		}
		fmt.Fprintf(bw, format, args...)
	}

	p("# Night %s", n.RunID)
	if n.Batch != "" {
		p(" (%s)", n.Batch)
	}
	p("\n\n**%s**\n", n.Verdict())
	if n.Note != "" {
		p("\nThis night %s.\n", n.Note)
	}
	if !n.Finished {
		p("\nThe journal has no run-finished line: the night is still running, or the supervisor stopped.\n")
	}

	if len(n.Next) > 0 {
		p("\n## What to do now\n\n")
		for _, st := range n.Next {
			p("- **%s** (%s): %s\n  Fix: %s\n", st.Job, st.Status, text.OneLine(st.Cause, maxCause), st.Fix)
			if st.Command != "" {
				p("  Command: %s\n", st.Command)
			}
			if j := n.job(st.Job); j != nil && j.FinalMessage != "" {
				p("  Its last session's final message: %s\n", j.FinalMessage)
			}
		}
		if n.Rerun != "" {
			p("\nRe-run just %s as a new night, once fixed: %s\n", strings.Join(n.RerunJobs(), ", "), n.Rerun)
		}
	}

	p("\n## Jobs\n\n")
	if len(n.Jobs) == 0 {
		p("No job started.\n")
	} else if n.cluster() {
		p("| job | status | host | attempts | duration | turns | cost | notes |\n")
		p("|---|---|---|--:|--:|--:|--:|---|\n")
		for _, j := range n.Jobs {
			p("| %s | %s | %s | %d | %s | %d | $%.2f | %s |\n", cell(j.Name), statusMark(j.Status), cell(jobHosts(j)), j.Attempts,
				span(j.Duration), j.Turns, j.CostUSD, cell(strings.Join(jobNotes(j), "; ")))
		}
	} else {
		p("| job | status | attempts | duration | turns | cost | notes |\n")
		p("|---|---|--:|--:|--:|--:|---|\n")
		for _, j := range n.Jobs {
			p("| %s | %s | %d | %s | %d | $%.2f | %s |\n", cell(j.Name), statusMark(j.Status), j.Attempts,
				span(j.Duration), j.Turns, j.CostUSD, cell(strings.Join(jobNotes(j), "; ")))
		}
	}

	if work := workLines(n.Jobs); len(work) > 0 {
		p("\n## Each job's work\n\n")
		for _, w := range work {
			p("- %s\n", w)
		}
	}

	if n.cluster() {
		p("\n## Hosts\n\n")
		for _, h := range n.Hosts {
			p("- %s\n", hostLine(h))
		}
	}

	if n.Stopped != "" || len(n.Pauses) > 0 {
		p("\n## The model's API\n\n")
		if n.Stopped != "" {
			p("- The night stopped early: %s\n", short(n.Stopped))
		}
		for _, ps := range n.Pauses {
			p("- %s\n", pauseLine(ps))
		}
	}

	p("\n## Servers\n\n")
	if len(n.Servers) == 0 {
		p("No server was reported.\n")
	}
	for _, s := range n.Servers {
		p("- %s\n", serverLine(s))
	}

	t := n.Totals
	jobsDone := plural(t.Jobs, "job")
	if n.hasFinal { // a journal of this release: the night's own counts
		jobsDone += fmt.Sprintf(", %d done, %d verified", t.Done, t.Verified)
	}
	p("\n## Totals\n\n%s, %s, %s, %s blocked, $%.2f, night %s.\n",
		jobsDone, plural(t.Attempts, "attempt"), plural(t.Outages, "outage"),
		plural(t.BlockedCalls, "call"), t.CostUSD, span(t.Duration))

	if len(n.Warnings) > 0 {
		p("\n## Warnings\n\n")
		for _, w := range n.Warnings {
			p("- %s\n", short(clean(w)))
		}
	}
	return bw.Flush()
}

// pauseLine is one pause of the night, in words.
func pauseLine(ps Pause) string {
	line := fmt.Sprintf("paused %s", clock(ps.From))
	switch {
	case !ps.To.IsZero():
		line += fmt.Sprintf("–%s (%s)", clock(ps.To), span(ps.To.Sub(ps.From)))
	case !ps.Until.IsZero():
		line += " until " + clock(ps.Until) + " (the journal ends first)"
	default:
		line += ", still waiting when the journal ends"
	}
	return fmt.Sprintf("%s, %s: %s", line, ps.Class, short(ps.Reason))
}

// maxCause bounds a cause in the Markdown "what to do now".
const maxCause = 600

// workLines say where each job's last attempt left its files: "a:
// folder /…/attempt-2, final message /…/final.md".
func workLines(js []Job) []string {
	var out []string
	for _, j := range js {
		if j.Folder == "" {
			continue
		}
		line := j.Name + ": folder " + j.Folder
		if j.FinalMessage != "" {
			line += ", final message " + j.FinalMessage
		}
		if len(j.Files) > 0 {
			line += ", files it changed: " + strings.Join(j.Files, ", ")
		}
		out = append(out, line)
	}
	return out
}

// maxNote bounds one note in the Markdown report's table; the HTML
// report shows every note whole, and "what to do now" shows the cause.
const maxNote = 300

// jobNotes are a job's notes for the Markdown table, each cut at maxNote.
func jobNotes(j Job) []string { return notesOf(j, maxNote) }

// jobNotesFull are a job's notes uncut, for the HTML page, which wraps.
func jobNotesFull(j Job) []string { return notesOf(j, 0) }

// notesOf says what a reader wants to know beyond the numbers, the cause
// first: why it failed or was skipped, then why attempts were retried and
// why it waited. The same text said several times is said once, with ×N
// (a job re-deferred at every maintenance pass for the same reason, a
// retry after the same failure). limit cuts each note (0: never).
func notesOf(j Job, limit int) []string {
	cut := func(s string) string { return text.OneLine(s, limit) }
	var notes []string
	if j.Reason != "" {
		notes = append(notes, cut(j.Reason))
	}
	// One note per distinct text; the count and the first time or attempt
	// say how often and since when.
	type fold struct {
		n     int
		at    int // its index in notes
		verb  string
		first string
	}
	folded := map[string]*fold{}
	add := func(key, single, verb, first, reason string) {
		if f, ok := folded[key]; ok {
			f.n++
			notes[f.at] = fmt.Sprintf("%s ×%d (first %s): %s", f.verb, f.n, f.first, reason)
			return
		}
		folded[key] = &fold{n: 1, at: len(notes), verb: verb, first: first}
		notes = append(notes, single+": "+reason)
	}
	for _, a := range j.tries {
		if (a.outcome == "retried" || a.outcome == "interrupted") && a.reason != "" && a.reason != j.Reason {
			add("try\x00"+a.outcome+onHost(a)+"\x00"+a.reason, fmt.Sprintf("attempt %d %s%s", a.n, a.outcome, onHost(a)),
				a.outcome+onHost(a), fmt.Sprintf("attempt %d", a.n), cut(a.reason))
		}
	}
	for _, d := range j.Deferrals {
		add("defer\x00"+d.Reason, "deferred "+clock(d.At), "deferred", clock(d.At), cut(d.Reason))
	}
	if len(j.Denied) > 0 {
		notes = append(notes, "denied: "+strings.Join(j.Denied, ", "))
	}
	if len(j.SideEffects) > 0 {
		notes = append(notes, cut("side effects: "+sideEffects(j.SideEffects)))
	}
	for _, t := range j.TasksLost {
		task := "an MCP task"
		if t.Task != "" {
			task = fmt.Sprintf("MCP task %q", cut(t.Task))
		}
		notes = append(notes, fmt.Sprintf("task left running by %s (attempt %d): its server answered with %s nobody follows", t.Tool, t.Attempt, task))
	}
	if len(j.Unusable) > 0 {
		notes = append(notes, "could not use: "+strings.Join(j.Unusable, ", "))
	}
	if n := restartNote(j); n != "" {
		notes = append(notes, n)
	}
	if len(j.RanWithout) > 0 && !strings.HasPrefix(j.Reason, "ran without") {
		notes = append(notes, "ran without: "+strings.Join(j.RanWithout, ", "))
	}
	if v := j.Verify; v != nil {
		if v.OK {
			notes = append(notes, "verified: "+strings.Join(v.Command, " "))
		} else if v.Output != "" && !strings.Contains(j.Reason, v.Output) {
			notes = append(notes, cut(fmt.Sprintf("verify failed (exit %d): %s", v.ExitCode, v.Output)))
		}
	}
	return notes
}

// maxSideEffectsShown bounds the side effects one job's note lists.
const maxSideEffectsShown = 20

// sideEffects lists a job's side effects, e.g. "mcp__notes__create
// {"title":"x"} (attempt 1); …".
func sideEffects(es []SideEffect) string {
	var parts []string
	for i, e := range es {
		if i == maxSideEffectsShown {
			parts = append(parts, fmt.Sprintf("and %d more", len(es)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s (attempt %d)", e.Tool, e.Input, e.Attempt))
	}
	return strings.Join(parts, "; ")
}

// serverLine is e.g. "notes: down 03:10–03:25 (transport: …), back by
// reconnect; 4 calls blocked".
func serverLine(s Server) string {
	var parts []string
	for _, o := range s.Outages {
		var line string
		if o.To.IsZero() {
			line = "down since " + clock(o.From) + ", still down at the end"
		} else {
			line = "down " + clock(o.From) + "–" + clock(o.To)
		}
		if o.Reason != "" {
			line += " (" + short(o.Reason) + ")"
		}
		if o.RecoveredBy != "" {
			line += ", back by " + recovery(o.RecoveredBy)
		}
		parts = append(parts, line)
	}
	if len(parts) == 0 {
		parts = append(parts, "no outage")
	}
	out := s.Name + ": " + strings.Join(parts, "; ")
	if s.BlockedCalls > 0 {
		out += "; " + plural(s.BlockedCalls, "call") + " blocked"
	}
	if len(s.Holds) > 0 {
		held := make([]string, len(s.Holds))
		for i, h := range s.Holds {
			held[i] = fmt.Sprintf("%s %s %s", clock(h.At), roundSeconds(h.Seconds), strings.ReplaceAll(h.Outcome, "-", " "))
		}
		out += "; " + plural(len(s.Holds), "call") + " held (" + strings.Join(held, ", ") + ")"
	}
	switch {
	case s.Status != "" && s.StatusFrom == "cache":
		out += " · now " + s.Status
	case s.Status != "":
		out += " · at the end: " + s.Status
	}
	return out
}

// recovery names a way back for people: "probe" alone reads like a bug.
func recovery(by string) string {
	switch by {
	case "probe":
		return "probe (backoff)"
	case "passive":
		return "a call that worked (passive)"
	case "reset":
		return "reset"
	}
	return by
}

func statusMark(status string) string {
	switch status {
	case "done":
		return "✅ done"
	case "failed":
		return "❌ failed"
	case "skipped":
		return "⏭ skipped"
	}
	return "⏳ " + status
}

// clock shows a time of day: the report covers one night.
func clock(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.Format("15:04")
}

// span is a duration at the precision a person wants: 1h02m, 12m04s, 45s.
func span(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// short cuts a reason to maxReason runes.
func short(s string) string { return text.OneLine(s, maxReason) }

// cell keeps a value on one line, inside its Markdown table cell (p
// escapes its "|").
func cell(s string) string { return strings.Join(strings.Fields(s), " ") }

// mdEscaper backslash-escapes what would make text from outside into
// Markdown or HTML: tags and autolinks (<, >), links and images ([, ]),
// entities (&), code spans (`), table cells (|) and the escape itself.
var mdEscaper = strings.NewReplacer(`\`, `\\`, "<", `\<`, ">", `\>`, "[", `\[`, "]", `\]`, "&", `\&`, "`", "\\`", "|", `\|`)

// mdEscape makes s inert in Markdown and on a terminal: control characters
// (escape codes) are written as Go escapes (text.Printable), then the
// Markdown characters are escaped.
func mdEscape(s string) string { return mdEscaper.Replace(text.Printable(s)) }

// restartNote is e.g. "restarted mid-session: notes 2× (exited with code
// 3); lost: notes", "" when no server of the job restarted.
func restartNote(j Job) string {
	var parts []string
	var order []string
	count := map[string]int{}
	last := map[string]string{}
	for _, r := range j.Restarts {
		if count[r.Server] == 0 {
			order = append(order, r.Server)
		}
		count[r.Server]++
		last[r.Server] = r.Reason
	}
	for _, s := range order {
		p := s
		if count[s] > 1 {
			p += fmt.Sprintf(" %d×", count[s])
		}
		if last[s] != "" {
			p += " (" + short(last[s]) + ")"
		}
		parts = append(parts, p)
	}
	note := ""
	if len(parts) > 0 {
		note = "restarted mid-session: " + strings.Join(parts, ", ")
	}
	if len(j.Lost) > 0 {
		if note != "" {
			note += "; "
		}
		note += "lost mid-session: " + strings.Join(j.Lost, ", ")
	}
	return note
}

// roundSeconds writes a hold's length: "12s", "2m0s".
func roundSeconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}
