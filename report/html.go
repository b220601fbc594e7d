package report

import (
	"fmt"
	"html/template"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The timeline's geometry, in SVG user units; the SVG scales to the page.
const (
	svgWidth   = 960.0
	labelWidth = 150.0 // job names, left of the plot
	plotRight  = 945.0
	bandTop    = 22.0 // room above the rows for the outage labels
	rowHeight  = 22.0
	axisHeight = 26.0
)

// timeline is what the template draws: everything already placed, so the
// template holds no arithmetic.
type timeline struct {
	Width, Height       float64
	PlotLeft, PlotWidth float64
	RowsTop, RowsHeight float64 // the outage bands cover every row
	RowsBottom          float64
	AxisY, LabelY       float64 // tick labels below, outage labels above
	Ticks               []tick
	Rows                []row
	Outages             []band
	// Pauses are the night's pauses on the model's API, drawn as bands
	// over every row like the outages.
	Pauses []pauseBand
}

type pauseBand struct {
	X, W  float64
	Class string // the failure class that paused the night
	Label string
	Title string
	Open  bool // not ended when the journal ends
}

type tick struct {
	X     float64
	Label string
}

type row struct {
	Y, TextY float64
	Label    string
	Bars     []bar
	Marks    []mark
}

type bar struct {
	X, Y, W float64
	Class   string // the outcome, which picks the colour
	Title   string
}

type mark struct {
	X, Y  float64
	Class string // defer or skip
	Title string
}

type band struct {
	X, W   float64
	Server string
	Label  string
	Title  string
	Open   bool // still down at the end
}

// layout places every attempt, deferral, skip and outage on the night's
// time axis.
func (n *Night) layout() timeline {
	from, to := n.Started, n.Ended
	if !to.After(from) {
		to = from.Add(time.Minute) // an empty night still draws an axis
	}
	x := func(t time.Time) float64 {
		f := float64(t.Sub(from)) / float64(to.Sub(from))
		f = min(max(f, 0), 1)
		return labelWidth + f*(plotRight-labelWidth)
	}
	width := func(a, b time.Time) float64 { return max(x(b)-x(a), 2) } // visible even if short

	tl := timeline{Width: svgWidth, PlotLeft: labelWidth, PlotWidth: plotRight - labelWidth,
		RowsTop: bandTop, LabelY: bandTop - 6}
	y := bandTop
	addRow := func(label string) *row {
		tl.Rows = append(tl.Rows, row{Y: y + 3, TextY: y + rowHeight/2 + 4, Label: label})
		y += rowHeight
		return &tl.Rows[len(tl.Rows)-1]
	}
	for _, j := range n.Jobs {
		var first *row
		for _, a := range j.tries {
			label := j.Name
			if len(j.tries) > 1 {
				label = fmt.Sprintf("%s #%d", j.Name, a.n)
			}
			r := addRow(label)
			if first == nil {
				first = r
			}
			r.Bars = append(r.Bars, bar{X: x(a.from), Y: r.Y, W: width(a.from, a.to), Class: a.outcome,
				Title: strings.TrimSpace(fmt.Sprintf("%s attempt %d%s: %s %s–%s (%s) %s", j.Name, a.n, onHost(a), a.outcome,
					clock(a.from), clock(a.to), span(a.to.Sub(a.from)), short(a.reason)))})
		}
		if first == nil {
			first = addRow(j.Name) // never started: deferred or skipped only
		}
		for _, d := range j.Deferrals {
			first.Marks = append(first.Marks, mark{X: x(d.At), Y: first.Y + 8, Class: "defer",
				Title: fmt.Sprintf("%s deferred at %s: %s", j.Name, clock(d.At), short(d.Reason))})
		}
		if j.Status == "skipped" && j.Attempts == 0 {
			first.Marks = append(first.Marks, mark{X: x(j.skippedAt(n.Ended)), Y: first.Y + 8, Class: "skip",
				Title: fmt.Sprintf("%s skipped: %s", j.Name, short(j.Reason))})
		}
	}
	tl.RowsBottom, tl.RowsHeight = y, y-bandTop
	tl.AxisY, tl.Height = y+16, y+axisHeight

	for _, s := range n.Servers {
		for _, o := range s.Outages {
			end, title := o.To, fmt.Sprintf("%s down %s–%s: %s", s.Name, clock(o.From), clock(o.To), o.Reason)
			if end.IsZero() {
				end = n.Ended
				title = fmt.Sprintf("%s down since %s, still down at the end: %s", s.Name, clock(o.From), o.Reason)
			} else if o.RecoveredBy != "" {
				title += "; back by " + recovery(o.RecoveredBy)
			}
			tl.Outages = append(tl.Outages, band{X: x(o.From), W: width(o.From, end), Server: s.Name,
				Label: s.Name + " down", Title: title, Open: o.To.IsZero()})
		}
	}
	for _, p := range n.Pauses {
		end, title := p.To, fmt.Sprintf("the night paused %s–%s (%s): %s", clock(p.From), clock(p.To), p.Class, p.Reason)
		if end.IsZero() {
			end = n.Ended
			title = fmt.Sprintf("the night paused since %s (%s), still paused at the end: %s", clock(p.From), p.Class, p.Reason)
		}
		if !p.Until.IsZero() {
			title += "; until " + clock(p.Until)
		}
		tl.Pauses = append(tl.Pauses, pauseBand{X: x(p.From), W: width(p.From, end), Class: p.Class,
			Label: "paused (" + p.Class + ")", Title: title, Open: p.To.IsZero()})
	}
	ts := ticks(from, to)
	// A night of seconds (a test, a dry run) needs seconds on its axis.
	seconds := len(ts) > 1 && ts[1].Sub(ts[0]) < time.Minute
	for _, t := range ts {
		label := clock(t)
		if seconds {
			label = t.Format("15:04:05")
		}
		tl.Ticks = append(tl.Ticks, tick{X: x(t), Label: label})
	}
	return tl
}

// skippedAt is when a job that never started was skipped: its last
// deferral is the best the journal tells, else the end of the night.
func (j Job) skippedAt(end time.Time) time.Time {
	if !j.Ended.IsZero() {
		return j.Ended
	}
	return end
}

// ticks are round times of day across [from, to], at most eight: hours
// for a usual night.
func ticks(from, to time.Time) []time.Time {
	steps := []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
		30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if to.Sub(from)/s <= 8 {
			step = s
			break
		}
	}
	// Round in the night's own zone, so that ticks fall on 03:00, not on
	// the hour of UTC.
	day := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, from.Location())
	t := day.Add(from.Sub(day).Truncate(step))
	if t.Before(from) {
		t = t.Add(step)
	}
	var out []time.Time
	for ; !t.After(to); t = t.Add(step) {
		out = append(out, t)
	}
	return out
}

// HTML writes one self-contained page: inline CSS, an inline SVG
// timeline, no script and nothing loaded from elsewhere, so it can be
// mailed or opened from disk years later. html/template escapes every
// value, job names and reasons included.
func (n *Night) HTML(w io.Writer) error {
	return page().Execute(w, struct {
		*Night
		Verdict  string
		Timeline timeline
		Cluster  bool
	}{n, n.Verdict(), n.layout(), n.cluster()})
}

// fileURL is a file:// link to a local path (an attempt's folder, its
// final message), for a report opened on the machine that ran the night.
// The path is escaped by net/url; html/template would refuse the scheme.
func fileURL(path string) template.URL {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // C:/… on Windows
	}
	return template.URL((&url.URL{Scheme: "file", Path: p}).String())
}

// page is parsed on first use, not when the nightwatch binary starts: the
// hook, which never writes a report, runs before every tool call.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"clock": clock, "span": span, "notes": jobNotesFull, "server": serverLine, "pause": pauseLine,
		"fileURL": fileURL,
		"host":    hostLine, "hosts": jobHosts,
		"f":   func(v float64) string { return fmt.Sprintf("%.1f", v) },
		"usd": func(v float64) string { return fmt.Sprintf("$%.2f", v) },
	}).Parse(pageHTML))
})

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Night {{.RunID}}{{with .Batch}} ({{.}}){{end}}</title>
<style>
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1d232b; margin: 24px auto; max-width: 1000px; padding: 0 12px; overflow-wrap: break-word; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
.verdict { font-size: 16px; font-weight: 600; margin: 4px 0 12px; }
.warn { color: #8a5a00; }
.timeline { overflow-x: auto; }
svg { width: 100%; height: auto; display: block; }
svg text { font-size: 11px; fill: #1d232b; }
svg .tick line { stroke: #d5d9df; }
svg .lane { fill: #e9ecf0; fill-opacity: 0.55; }
.outage { fill: #d64545; fill-opacity: 0.14; stroke: #d64545; stroke-opacity: 0.5; stroke-dasharray: 3 3; }
svg text.outage-label { fill: #a32b2b; font-weight: 600; }
.pause { fill: #3d6fd6; fill-opacity: 0.12; stroke: #3d6fd6; stroke-opacity: 0.5; stroke-dasharray: 6 3; }
svg text.pause-label { fill: #2a4f9e; font-weight: 600; }
.done { fill: #2e9e5b; background: #2e9e5b; }
.failed { fill: #d64545; background: #d64545; }
.retried { fill: #e89a2c; background: #e89a2c; }
.interrupted, .unfinished, .skipped, .stopped { fill: #8a8f98; background: #8a8f98; }
.defer { fill: #fff; stroke: #e89a2c; stroke-width: 2; }
.skip { fill: #8a8f98; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 14px; margin: 8px 0 0; padding: 0; list-style: none; font-size: 13px; }
.legend span { display: inline-block; width: 14px; height: 10px; margin-right: 5px; vertical-align: middle; border-radius: 2px; }
.legend .band { background: #d64545; opacity: 0.3; }
.legend .pauseband { background: #3d6fd6; opacity: 0.3; }
.legend .dot { width: 10px; border: 2px solid #e89a2c; border-radius: 50%; background: #fff; }
.st { display: inline-block; padding: 0 7px; border-radius: 9px; color: #fff; font-weight: 600; font-size: 12px; line-height: 18px; white-space: nowrap; }
.st.done { background: #1f7a44; } .st.failed { background: #b93030; } .st.skipped { background: #6b7079; }
.st.unfinished { background: #8a5a00; } .st.unverified { background: #a3560c; }
.next { padding-left: 20px; }
.next li { margin: 0 0 10px; }
.next .fix { display: block; }
.next .cmd { display: block; background: #f3f5f7; padding: 2px 6px; border-radius: 3px; margin-top: 2px; overflow-wrap: anywhere; }
code, pre { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: #f3f5f7; padding: 8px 10px; border-radius: 4px; white-space: pre-wrap; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e3e6ea; vertical-align: top; }
th { white-space: nowrap; }
/* Text from the night (a verify's output, a crash) may hold a word longer
   than the screen: it breaks anywhere rather than widen the page. */
.next li, td.notes, pre, .servers li, .warn li { overflow-wrap: anywhere; }
.work a { white-space: nowrap; }
.work a.file { white-space: normal; overflow-wrap: anywhere; }
td.n { text-align: right; white-space: nowrap; }
ul.notes { margin: 0; padding-left: 16px; }
.work { font-size: 12px; }
@media (max-width: 700px) {
  body { margin: 12px auto; }
  /* The timeline keeps a width where its labels read (about 10 px and
     up) and scrolls sideways in its own box; the page does not. */
  .timeline svg { min-width: 720px; }
  svg text { font-size: 14px; }
  /* The jobs table becomes one card per job, every cell on its own line. */
  table.jobs, table.jobs tbody, table.jobs tr, table.jobs td { display: block; width: auto; }
  table.jobs thead { display: none; }
  table.jobs tr { border: 1px solid #e3e6ea; border-radius: 6px; margin: 0 0 10px; padding: 6px 8px; }
  table.jobs td { border: 0; padding: 2px 0; text-align: left; white-space: normal; }
  table.jobs td.n { display: inline-block; margin-right: 14px; color: #5b626c; }
  table.jobs td[data-label]::before { content: attr(data-label) ": "; color: #5b626c; }
}
</style>
</head>
<body>
<h1>Night {{.RunID}}{{with .Batch}} · {{.}}{{end}}</h1>
<p class="verdict">{{.Verdict}}</p>
{{with .Note}}<p>This night {{.}}.</p>{{end}}
{{if not .Finished}}<p class="warn">The journal has no run-finished line: the night is still running, or the supervisor stopped.</p>{{end}}
{{with .Timeline}}
<div class="timeline">
<svg viewBox="0 0 {{f .Width}} {{f .Height}}" role="img" aria-label="Timeline of the night: jobs as bars, outages and pauses as shaded bands">
{{$t := .}}{{range .Ticks}}<g class="tick"><line x1="{{f .X}}" x2="{{f .X}}" y1="{{f $t.RowsTop}}" y2="{{f $t.RowsBottom}}"/><text x="{{f .X}}" y="{{f $t.AxisY}}" text-anchor="middle">{{.Label}}</text></g>
{{end}}
{{range .Rows}}<rect class="lane" x="{{f $t.PlotLeft}}" y="{{f .Y}}" width="{{f $t.PlotWidth}}" height="16"/>
<text x="4" y="{{f .TextY}}">{{.Label}}</text>
{{range .Bars}}<rect class="{{.Class}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="16" rx="2"><title>{{.Title}}</title></rect>
{{end}}{{end}}
{{range .Outages}}<rect class="outage" data-server="{{.Server}}" x="{{f .X}}" y="{{f $t.RowsTop}}" width="{{f .W}}" height="{{f $t.RowsHeight}}"><title>{{.Title}}</title></rect>
<text class="outage-label" x="{{f .X}}" y="{{f $t.LabelY}}">{{.Label}}{{if .Open}} (still down){{end}}</text>
{{end}}
{{range .Pauses}}<rect class="pause" data-class="{{.Class}}" x="{{f .X}}" y="{{f $t.RowsTop}}" width="{{f .W}}" height="{{f $t.RowsHeight}}"><title>{{.Title}}</title></rect>
<text class="pause-label" x="{{f .X}}" y="{{f $t.LabelY}}">{{.Label}}{{if .Open}} (still paused){{end}}</text>
{{end}}
{{range .Rows}}{{range .Marks}}<circle class="{{.Class}}" cx="{{f .X}}" cy="{{f .Y}}" r="4"><title>{{.Title}}</title></circle>
{{end}}{{end}}
</svg>
</div>
{{end}}
<ul class="legend">
<li><span class="done"></span>done</li>
<li><span class="retried"></span>failed, retried</li>
<li><span class="failed"></span>failed</li>
<li><span class="unfinished"></span>interrupted, unfinished, or stopped: a server it needed was unusable</li>
<li><span class="dot"></span>deferred</li>
<li><span class="band"></span>server down</li>
<li><span class="pauseband"></span>the night paused on the model's API</li>
</ul>

{{if .Next}}<h2 id="next">What to do now</h2>
<ol class="next">
{{range .Next}}<li><b>{{.Job}}</b> <span class="st {{.Status}}">{{.Status}}</span> {{.Cause}}<span class="fix"><b>Fix:</b> {{.Fix}}</span>{{with .Command}}<code class="cmd">{{.}}</code>{{end}}</li>
{{end}}</ol>
{{with .Rerun}}<p>Re-run just {{range $i, $j := $.RerunJobs}}{{if $i}}, {{end}}{{$j}}{{end}} as a new night, once fixed:</p>
<pre><code>{{.}}</code></pre>{{end}}
{{end}}
<h2>Jobs</h2>
{{if .Jobs}}<table class="jobs">
<thead><tr><th>job</th><th>status</th>{{if .Cluster}}<th>host</th>{{end}}<th>attempts</th><th>duration</th><th>turns</th><th>cost</th><th>notes</th></tr></thead>
<tbody>
{{range .Jobs}}<tr><td><b>{{.Name}}</b>{{if .Folder}}<div class="work"><a href="{{fileURL .Folder}}">attempt folder</a>{{with .FinalMessage}} · <a href="{{fileURL .}}">final message</a>{{end}}{{with .Files}}<br>changed: {{range $i, $f := .}}{{if $i}}, {{end}}<a class="file" href="{{fileURL $f}}">{{$f}}</a>{{end}}{{end}}</div>{{end}}</td><td><span class="st {{.Status}}">{{.Status}}</span></td>{{if $.Cluster}}<td data-label="host">{{hosts .}}</td>{{end}}<td class="n" data-label="attempts">{{.Attempts}}</td><td class="n" data-label="duration">{{span .Duration}}</td><td class="n" data-label="turns">{{.Turns}}</td><td class="n" data-label="cost">{{usd .CostUSD}}</td><td class="notes">{{with notes .}}<ul class="notes">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p>No job started.</p>{{end}}
{{if .Cluster}}<h2>Hosts</h2>
<ul>
{{range .Hosts}}<li>{{host .}}</li>
{{end}}</ul>
{{end}}
{{if or .Stopped .Pauses}}<h2>The model's API</h2>
<ul>{{if .Stopped}}<li>The night stopped early: {{.Stopped}}</li>{{end}}
{{range .Pauses}}<li>{{pause .}}</li>
{{end}}</ul>{{end}}

<h2>Servers</h2>
{{if .Servers}}<ul class="servers">
{{range .Servers}}<li>{{server .}}</li>
{{end}}</ul>{{else}}<p>No server was reported.</p>{{end}}

<h2>Totals</h2>
<p>{{.Totals.Jobs}} jobs ({{.Totals.Done}} done, {{.Totals.Verified}} verified, {{.Totals.Failed}} failed, {{.Totals.Skipped}} skipped), {{.Totals.Attempts}} attempts, {{.Totals.Outages}} outages, {{.Totals.BlockedCalls}} calls blocked, {{usd .Totals.CostUSD}}, night {{span .Totals.Duration}}.</p>
{{if .Warnings}}<h2>Warnings</h2>
<ul class="warn">{{range .Warnings}}<li>{{.}}</li>
{{end}}</ul>{{end}}
</body>
</html>
`
