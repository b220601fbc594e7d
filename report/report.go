// Package report turns a night's journal (and, optionally, the batch's
// health cache) into the morning report: what every job did, when each MCP
// server was down and how it came back, and the night's totals, as
// Markdown, one self-contained HTML file, or JSON.
//
// It reads the journal through the journal package alone, with every fact
// in its own field; it never parses a reason. The command that runs the
// night writes the report after the supervisor returns.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/session"
)

// Night is one run, as the morning report tells it.
type Night struct {
	RunID    string    `json:"runId"`
	Batch    string    `json:"batch"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended"` // run-finished, else the last event
	Finished bool      `json:"finished"`
	Jobs     []Job     `json:"jobs"`
	Servers  []Server  `json:"servers"`
	Totals   Totals    `json:"totals"`
	// Pauses are the stretches the night started no session because the
	// model's API failed (a usage limit, a rate limit, an outage).
	Pauses []Pause `json:"pauses,omitempty"`
	// Stopped is why the night stopped starting jobs early (the agent's
	// login was refused); "" when it did not.
	Stopped string `json:"stopped,omitempty"`
	// Closed is why a run that never finished was closed (a later start
	// began a new night); "" otherwise.
	Closed string `json:"closed,omitempty"`
	// Warnings are things the reader should know about the inputs: a torn
	// last line, a cache that could not be read.
	Warnings []string `json:"warnings,omitempty"`
	// Hosts are the cluster's hosts that ran or coordinated the night, as
	// the journal first names them; none for a night on one host (no
	// event has a Host).
	Hosts []Host `json:"hosts,omitempty"`
	// BatchFile is the batch file the night ran, as run-started names it:
	// the commands of Next name it.
	BatchFile string `json:"batchFile,omitempty"`
	// Note is what the run-started line says of the run, e.g. that it
	// re-runs some jobs of an earlier one; "" for a plain night.
	Note string `json:"note,omitempty"`
	// Next is what to do this morning: each job that failed, was skipped,
	// did not finish or is not known good, its cause and the fix (next.go).
	Next []Step `json:"next,omitempty"`
	// Rerun is the command that re-runs the jobs of Next marked Rerun as
	// a new night; "" when none is.
	Rerun string `json:"rerun,omitempty"`

	hasFinal bool // the journal has server-final lines
	// batch is the batch the night ran, when the caller gave it (Advise).
	batch *jobs.Batch
}

// Job is one job of the night, in the order the journal first names it.
type Job struct {
	Name string `json:"name"`
	// Status is done, failed, skipped, or unfinished (started or deferred
	// but the journal ends before it did: the run is still going, or the
	// supervisor died).
	Status    string        `json:"status"`
	Reason    string        `json:"reason,omitempty"` // why it failed or was skipped
	Attempts  int           `json:"attempts"`
	Started   time.Time     `json:"started,omitzero"`
	Ended     time.Time     `json:"ended,omitzero"`
	Duration  time.Duration `json:"durationNs"` // the attempts' wall time, summed
	Turns     int           `json:"turns"`
	CostUSD   float64       `json:"costUsd"`
	Deferrals []Deferral    `json:"deferrals,omitempty"`
	// Allowed are the tool rules its last session was allowed.
	Allowed []string `json:"allowed,omitempty"`
	// Denied are tools of its own servers a permission rule refused, over
	// all its attempts.
	Denied []string `json:"denied,omitempty"`
	// Unusable are the servers its sessions could not use; RanWithout
	// those it was done without, by its on_unhealthy: run.
	Unusable   []string `json:"unusable,omitempty"`
	RanWithout []string `json:"ranWithout,omitempty"`
	// Verify is its last attempt's check, when one ran; Verified is true
	// when the job is done and that check passed.
	Verify   *journal.Verify `json:"verify,omitempty"`
	Verified bool            `json:"verified,omitempty"`
	// Hosts are the cluster hosts its attempts ran on, in order; none on
	// one host.
	Hosts []string `json:"hosts,omitempty"`
	// SideEffects are the calls to tools that are not read-only which
	// succeeded, over all its attempts, in order.
	SideEffects []SideEffect `json:"sideEffects,omitempty"`
	// TasksLost are calls a server turned into an MCP task its session
	// could not follow: work left running at the server, unseen.
	TasksLost []SideEffect `json:"tasksLost,omitempty"`
	// Restarts are its servers' restarts while its sessions ran (a stdio
	// server's by nightwatch's exec-server or by Claude Code itself; an
	// HTTP server's seen by a hook as a new process), and Lost the
	// servers exec-server could not bring back.
	Restarts []Restart `json:"restarts,omitempty"`
	Lost     []string  `json:"lost,omitempty"`
	// Class is the model API's failure class of its last attempt's end
	// (usage-limit, invalid-credentials, …); "" for none.
	Class string `json:"class,omitempty"`
	// Folder is its last attempt's folder (settings, stream, stderr) on
	// the host that ran it, and FinalMessage the file with that session's
	// final message when it exists; "" when the journal does not say.
	Folder       string `json:"folder,omitempty"`
	FinalMessage string `json:"finalMessage,omitempty"`
	// Files are the files its sessions' own file tools (Write, Edit, …)
	// changed, over all its attempts on this host, from their streams; a
	// change made another way (a shell command, an MCP tool) is not seen.
	Files []string `json:"files,omitempty"`
	// Budget is the job's own limit (max_turns, max_cost_usd) that
	// stopped its last attempt: it failed as "budget exceeded".
	Budget *journal.Budget `json:"budget,omitempty"`

	tries []attempt // for the timeline and the notes; not part of the API
	// bounced is, by attempt, its deferral's index in Deferrals: an
	// outage-confirmed line of that attempt is said there.
	bounced map[int]int
}

// SideEffect is one successful call of a job to a tool that is not
// read-only: which attempt, the tool, and a redacted digest of its input.
type SideEffect struct {
	Attempt int    `json:"attempt"`
	Tool    string `json:"tool"`
	Input   string `json:"input,omitempty"`
	// Task is the server's id of the MCP task (TasksLost), when known.
	Task string `json:"task,omitempty"`
}

// attempt is one session of a job, from job-started to its end.
type attempt struct {
	n          int
	from, to   time.Time
	outcome    string // done, failed, retried, interrupted, unfinished
	reason     string
	ended      bool
	turns      int
	cost       float64
	resultSeen bool   // its cost and turns are counted
	host       string // the cluster host that ran it; "" on one host
}

// Restart is a server of a job started again mid-session.
type Restart struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Server  string    `json:"server"`
	// By is who restarted it: nightwatch or claude-code (stdio), outside
	// (an HTTP server nobody in the night started).
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// Deferral is a moment a job could not start because a server was down.
type Deferral struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// Server is one MCP server seen in the journal or the cache.
type Server struct {
	Name         string   `json:"name"`
	Outages      []Outage `json:"outages,omitempty"`
	BlockedCalls int      `json:"blockedCalls"`
	// Holds are the calls its sessions' hooks held while it was down
	// but being repaired, one per held call.
	Holds []Hold `json:"holds,omitempty"`
	// Status is the server's state at the end of the night (healthy,
	// unhealthy, "" unknown), from the journal's server-final lines; for
	// a journal of an older release without them, from the cache.
	Status string `json:"status,omitempty"`
	// StatusFrom says where Status came from: "night" (the journal) or
	// "cache" (read when the report was made).
	StatusFrom string `json:"statusFrom,omitempty"`
	// Reconnect is what its last reconnect of the night said (the
	// command and, when it failed, why), from the maintenance lines.
	Reconnect string `json:"reconnect,omitempty"`
}

// Hold is one call held for a server: when it ended, how long it waited
// and how (answered, gave-up, denied, cancelled).
type Hold struct {
	At      time.Time `json:"at"`
	Tool    string    `json:"tool,omitempty"`
	Seconds float64   `json:"seconds"`
	Outcome string    `json:"outcome"`
}

// Pause is one stretch the night waited on the model's API.
type Pause struct {
	From time.Time `json:"from"`
	// To is when it ended; zero when the journal ends first.
	To time.Time `json:"to,omitzero"`
	// Until is when the night meant to go on (a usage limit's reset);
	// zero for an outage, which ends when a check finds the API back.
	Until  time.Time `json:"until,omitzero"`
	Class  string    `json:"class"`
	Reason string    `json:"reason"`
}

// Outage is one stretch of time a server was unhealthy.
type Outage struct {
	From time.Time `json:"from"`
	// To is zero when the server was still down when the journal ends.
	To     time.Time `json:"to,omitzero"`
	Reason string    `json:"reason"`
	// RecoveredBy is how it came back: reconnect, probe (the backoff's
	// retry found it up), passive (a real call worked), reset (an
	// operator dropped the entry), or "" when unknown or still down.
	RecoveredBy string `json:"recoveredBy,omitempty"`
}

// Totals sum up the night.
type Totals struct {
	Jobs    int `json:"jobs"`
	Done    int `json:"done"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Verified are the jobs done whose verify passed.
	Verified     int           `json:"verified,omitempty"`
	Attempts     int           `json:"attempts"`
	BlockedCalls int           `json:"blockedCalls"`
	Outages      int           `json:"outages"`
	CostUSD      float64       `json:"costUsd"`
	Duration     time.Duration `json:"durationNs"` // of the night: Started to Ended
}

// Job statuses besides the supervisor's done, failed and skipped.
const (
	StatusUnfinished = "unfinished"
)

// The ways a server comes back, as the hook's events name them ("by").
var recoveryWays = map[string]bool{
	healthcheck.RestoredByReconnect: true,
	healthcheck.RestoredByProbe:     true,
	healthcheck.RestoredByPassive:   true,
	string(healthcheck.ByReset):     true,
}

// LatestJournal returns the newest journal of the state folder.
func LatestJournal(stateDir string) (string, error) { return journal.Latest(stateDir) }

// Build reads a journal and, when cachePath is not "", the health cache
// whose statuses complete the servers section. A missing or corrupt cache
// is a warning, not an error: the journal alone makes the report.
func Build(journalPath, cachePath string) (*Night, error) {
	events, warnings, err := journal.ReadWarnings(journalPath)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("journal %s has no events", journalPath)
	}
	n := fromEvents(events)
	if n.RunID == "" {
		n.RunID = statedir.RunID(journalPath)
	}
	n.Warnings = append(n.Warnings, warnings...)
	n.complete(cachePath)
	return n, nil
}

// BuildEvents is Build for a journal already read: a cluster's night from
// the shared journal table, whose events name the hosts that ran them.
func BuildEvents(events []journal.Event, cachePath string) (*Night, error) {
	if len(events) == 0 {
		return nil, fmt.Errorf("the journal has no events")
	}
	n := fromEvents(events)
	n.complete(cachePath)
	return n, nil
}

// complete adds the cache's statuses (when the journal has no
// server-final lines) and sums the night up.
func (n *Night) complete(cachePath string) {
	if cachePath != "" && !n.hasFinal {
		if err := n.addCache(cachePath); err != nil {
			n.Warnings = append(n.Warnings, err.Error())
		}
	}
	n.total()
	n.linkWork()
	n.next()
}

// builder keeps the state of the journal's replay.
type builder struct {
	n       *Night
	jobs    map[string]*Job
	order   []string // job names, as the journal first names them
	servers map[string]*Server
	open    map[string]int // server → index of its outage in progress
	// fixedBy is how an outage in progress is being repaired, from the
	// maintenance lines, for when the healthy line does not say.
	fixedBy map[string]string
	hosts   hostTally
}

func fromEvents(events []journal.Event) *Night {
	b := &builder{n: &Night{}, jobs: map[string]*Job{}, servers: map[string]*Server{},
		open: map[string]int{}, fixedBy: map[string]string{}}
	n := b.n
	// Show every time in the zone the run started in, whatever zone the
	// hook that wrote a server line used.
	loc := events[0].Time.Location()
	for _, ev := range events {
		ev.Time = ev.Time.In(loc)
		if n.RunID == "" {
			n.RunID = ev.Run
		}
		// Server lines are copied from the hooks' events file some time
		// after they happened, so the last line is not always the latest.
		if ev.Time.After(n.Ended) {
			n.Ended = ev.Time
		}
		switch ev.Type {
		case journal.RunStarted:
			n.Batch, n.Started, n.BatchFile, n.Note = ev.Batch, ev.Time, ev.BatchFile, clean(ev.Reason)
			b.hosts.coordinated(ev.Host)
		case journal.RunResumed:
			b.hosts.coordinated(ev.Host)
			// The supervisor died: the attempts it was running ended then.
			// A cluster worker's attempt (it has a host) runs on without
			// its coordinator and reports its own end.
			for _, j := range b.jobs {
				if a := lastTry(j); a != nil && !a.ended && a.host == "" {
					a.to, a.ended, a.outcome = ev.Time, true, "interrupted"
					a.reason = "the supervisor stopped; the run was resumed"
				}
			}
		case journal.RunClosed:
			n.Finished, n.Closed = true, clean(ev.Reason)
			if p := lastPause(n); p != nil && p.To.IsZero() {
				p.To = ev.Time
			}
		case journal.RunFinished:
			n.Finished = true
			if p := lastPause(n); p != nil && p.To.IsZero() {
				p.To = ev.Time
			}
		case journal.NightPaused:
			if p := lastPause(n); p != nil && p.To.IsZero() {
				p.To = ev.Time // a longer pause replaces it
			}
			n.Pauses = append(n.Pauses, Pause{From: ev.Time, Until: ev.Until, Class: ev.Class, Reason: clean(ev.Reason)})
		case journal.NightResumed:
			if p := lastPause(n); p != nil && p.To.IsZero() {
				p.To = ev.Time
			}
		case journal.NightStopped:
			n.Stopped = clean(ev.Reason)
		case journal.JobStarted:
			j := b.job(ev.Job)
			j.tries = append(j.tries, attempt{n: ev.Attempt, from: ev.Time, outcome: StatusUnfinished, host: ev.Host})
			b.hosts.saw(ev.Host)
			j.Status = StatusUnfinished
			if ev.Folder != "" {
				j.Folder = ev.Folder
			}
			if ev.Allowed != nil {
				j.Allowed = ev.Allowed
			}
		case journal.SessionProcess:
			b.ranOn(ev)
		case journal.JobDeferred:
			j := b.job(ev.Job)
			if ev.Attempt > 0 {
				// An attempt stopped because its session could not use a
				// server: it ended, and the job waits again.
				b.endTry(ev, "stopped")
				j.Unusable = addNew(j.Unusable, ev.Unusable...)
			}
			if ev.Attempt > 0 {
				if j.bounced == nil {
					j.bounced = map[int]int{}
				}
				j.bounced[ev.Attempt] = len(j.Deferrals)
			}
			j.Deferrals = append(j.Deferrals, Deferral{At: ev.Time, Reason: clean(ev.Reason)})
			if j.Status == "" {
				j.Status = StatusUnfinished
			}
		case journal.OutageConfirmed:
			j := b.job(ev.Job)
			if i, ok := j.bounced[ev.Attempt]; ok {
				j.Deferrals[i].Reason += "; an outage: " + clean(ev.Reason)
			}
		case journal.JobRetried:
			j := b.endTry(ev, "retried")
			b.attemptFacts(j, ev)
		case journal.JobFinished:
			j := b.endTry(ev, string(ev.Status))
			j.Status, j.Reason, j.Class = string(ev.Status), clean(ev.Reason), ev.Class
			j.Budget = ev.Budget
			b.attemptFacts(j, ev)
			if ev.Status == journal.Done {
				j.RanWithout = ev.Unusable
				j.Verified = ev.Verify != nil && ev.Verify.OK
			}
		case journal.JobSkipped:
			j := b.job(ev.Job)
			j.Status, j.Reason = string(journal.Skipped), clean(ev.Reason)
			if len(j.tries) == 0 {
				j.Ended = ev.Time // when it was given up: the timeline marks it there
			}
			if a := lastTry(j); a != nil && !a.ended {
				a.to, a.ended, a.outcome = ev.Time, true, string(journal.Skipped)
			}
		case journal.SideEffect:
			j := b.job(ev.Job)
			j.SideEffects = append(j.SideEffects, SideEffect{Attempt: ev.Attempt, Tool: ev.Tool, Input: clean(ev.Input)})
		case journal.TaskLost:
			j := b.job(ev.Job)
			j.TasksLost = append(j.TasksLost, SideEffect{Attempt: ev.Attempt, Tool: ev.Tool, Task: clean(ev.Task)})
		case journal.ServerState:
			b.serverState(ev)
		case journal.CallBlocked:
			b.server(ev.Server).BlockedCalls++
		case journal.ServerRestarted:
			j := b.job(ev.Job)
			j.Restarts = append(j.Restarts, Restart{At: ev.Time, Attempt: ev.Attempt, Server: ev.Server, By: ev.By, Reason: clean(ev.Reason)})
		case journal.ServerLost:
			j := b.job(ev.Job)
			j.Lost = addNew(j.Lost, ev.Server)
		case journal.CallHeld:
			s := b.server(ev.Server)
			s.Holds = append(s.Holds, Hold{At: ev.Time, Tool: ev.Tool, Seconds: ev.Seconds, Outcome: ev.Outcome})
		case journal.Maintenance:
			b.maintenance(ev)
		case journal.ServerFinal:
			s := b.server(ev.Server)
			s.Status, s.StatusFrom = string(ev.Status), "night"
			n.hasFinal = true
		}
	}
	if n.Started.IsZero() {
		// A journal whose first line was lost: start at the first event.
		n.Started = events[0].Time
		for _, ev := range events {
			if ev.Time.Before(n.Started) {
				n.Started = ev.Time
			}
		}
	}
	b.finishJobs()
	b.finishServers()
	b.finishHosts()
	return n
}

// lastPause is the night's latest pause; nil when none.
func lastPause(n *Night) *Pause {
	if len(n.Pauses) == 0 {
		return nil
	}
	return &n.Pauses[len(n.Pauses)-1]
}

func (b *builder) job(name string) *Job {
	if j, ok := b.jobs[name]; ok {
		return j
	}
	j := &Job{Name: name}
	b.jobs[name] = j
	b.order = append(b.order, name)
	return j
}

func lastTry(j *Job) *attempt {
	if len(j.tries) == 0 {
		return nil
	}
	return &j.tries[len(j.tries)-1]
}

// endTry closes the attempt a job-retried or job-finished line reports,
// counting its result once (a line of each kind may both carry it).
func (b *builder) endTry(ev journal.Event, outcome string) *Job {
	j := b.job(ev.Job)
	var a *attempt
	for i := range j.tries {
		if j.tries[i].n == ev.Attempt {
			a = &j.tries[i]
		}
	}
	if a == nil {
		// No job-started line for it (a journal cut at the front): the
		// attempt is known only by its end.
		j.tries = append(j.tries, attempt{n: ev.Attempt, from: ev.Time})
		a = lastTry(j)
		if r := ev.Result; r != nil && r.DurationMS > 0 {
			a.from = ev.Time.Add(-time.Duration(r.DurationMS) * time.Millisecond)
		}
	}
	a.to, a.ended, a.outcome, a.reason = ev.Time, true, outcome, clean(ev.Reason)
	if ev.Host != "" {
		a.host = ev.Host
		b.hosts.saw(ev.Host)
	}
	if ev.Result != nil && !a.resultSeen {
		a.resultSeen = true
		a.turns = ev.Result.NumTurns
		a.cost = ev.Result.CostUSD
	}
	return j
}

// attemptFacts keeps what an attempt's end says beyond its result: the
// denials, the servers it could not use, its verify.
func (b *builder) attemptFacts(j *Job, ev journal.Event) {
	j.Denied = addNew(j.Denied, ev.Denied...)
	if ev.Status != journal.Done {
		j.Unusable = addNew(j.Unusable, ev.Unusable...)
	}
	if ev.Verify != nil {
		v := *ev.Verify
		v.Output = clean(v.Output)
		j.Verify = &v
	}
}

// addNew appends the values not yet in list.
func addNew(list []string, vals ...string) []string {
	for _, v := range vals {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

func (b *builder) server(name string) *Server {
	s, ok := b.servers[name]
	if !ok {
		s = &Server{Name: name}
		b.servers[name] = s
	}
	return s
}

// serverState pairs unhealthy and healthy lines into outages. By says
// what saw the change, and for a healthy line how the server came back.
func (b *builder) serverState(ev journal.Event) {
	s := b.server(ev.Server)
	by := ev.By
	switch ev.Status {
	case journal.Unhealthy:
		if _, down := b.open[ev.Server]; down {
			return // still the same outage
		}
		// The code is nightwatch's own word, joined after redaction:
		// "auth: Claude Code reported…" would read as a key and its value.
		s.Outages = append(s.Outages, Outage{From: ev.Time, Reason: text.JoinNonEmpty(": ", ev.Code, clean(ev.Reason))})
		b.open[ev.Server] = len(s.Outages) - 1
		delete(b.fixedBy, ev.Server)
	default: // healthy, or "" when an operator reset the entry
		i, down := b.open[ev.Server]
		if !down {
			return
		}
		o := &s.Outages[i]
		o.To = ev.Time
		if ev.Status == "" && by == "" {
			by = "reset"
		}
		if recoveryWays[by] {
			o.RecoveredBy = by
		} else {
			o.RecoveredBy = b.fixedBy[ev.Server]
		}
		delete(b.open, ev.Server)
	}
}

// maintenance lines say what the supervisor did for a server that was
// down; they tell how an outage ended when the healthy line does not.
func (b *builder) maintenance(ev journal.Event) {
	name := ev.Server
	if ev.Action == journal.Reconnect && ev.Reason != "" {
		b.server(name).Reconnect = clean(ev.Reason)
	}
	if _, down := b.open[name]; !down {
		return
	}
	switch {
	case ev.Action == journal.Reconnect:
		b.fixedBy[name] = healthcheck.RestoredByReconnect
	case ev.Status == journal.Healthy && b.fixedBy[name] == "":
		b.fixedBy[name] = healthcheck.RestoredByProbe
	}
}

// finishJobs copies the jobs out of the builder's map, in journal order,
// with the sums of their attempts.
func (b *builder) finishJobs() {
	n := b.n
	for _, name := range b.order {
		j := b.jobs[name]
		for k := range j.tries {
			a := &j.tries[k]
			if !a.ended {
				// Still running when the journal ends: the bar reaches
				// the end of what is known.
				a.to = n.Ended
			}
			if j.Started.IsZero() || a.from.Before(j.Started) {
				j.Started = a.from
			}
			if a.to.After(j.Ended) {
				j.Ended = a.to
			}
			j.Duration += a.to.Sub(a.from)
			j.Turns += a.turns
			j.CostUSD += a.cost
			if a.host != "" && !slices.Contains(j.Hosts, a.host) {
				j.Hosts = append(j.Hosts, a.host)
			}
		}
		j.Attempts = len(j.tries)
		n.Jobs = append(n.Jobs, *j)
	}
}

func (b *builder) finishServers() {
	names := make([]string, 0, len(b.servers))
	for name := range b.servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b.n.Servers = append(b.n.Servers, *b.servers[name])
	}
}

// addCache sets each server's status from the cache, and lists servers the
// journal never mentions (they stayed healthy all night).
func (n *Night) addCache(path string) error {
	st := &healthcheck.Store{Path: path}
	f, err := st.Read()
	if err != nil {
		return fmt.Errorf("health cache %s: %v (server statuses left out)", path, err)
	}
	for name, e := range f.Servers {
		i := sort.Search(len(n.Servers), func(i int) bool { return n.Servers[i].Name >= name })
		if i == len(n.Servers) || n.Servers[i].Name != name {
			n.Servers = append(n.Servers[:i], append([]Server{{Name: name}}, n.Servers[i:]...)...)
		}
		n.Servers[i].Status, n.Servers[i].StatusFrom = string(e.Status), "cache"
	}
	return nil
}

// linkWork sets each job's FinalMessage when its last attempt's folder
// holds one, and the files its attempts changed, from their streams (a
// cluster worker's folders are on its own host: no link).
func (n *Night) linkWork() {
	for i := range n.Jobs {
		j := &n.Jobs[i]
		if j.Folder == "" {
			continue
		}
		p := filepath.Join(j.Folder, statedir.AttemptFinal)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			j.FinalMessage = p
		}
		streams, _ := filepath.Glob(filepath.Join(filepath.Dir(j.Folder), "attempt-*", statedir.AttemptStream))
		for _, path := range streams {
			f, err := os.Open(path)
			if err != nil {
				continue
			}
			files, _ := session.ChangedFiles(f)
			_ = f.Close()
			j.Files = addNew(j.Files, files...)
		}
	}
}

func (n *Night) total() {
	t := Totals{Jobs: len(n.Jobs), Duration: n.Ended.Sub(n.Started)}
	for _, j := range n.Jobs {
		switch j.Status {
		case string(journal.Done):
			t.Done++
			if j.Verified {
				t.Verified++
			}
		case string(journal.Failed):
			t.Failed++
		case string(journal.Skipped):
			t.Skipped++
		}
		t.Attempts += j.Attempts
		t.CostUSD += j.CostUSD
	}
	for _, s := range n.Servers {
		t.BlockedCalls += s.BlockedCalls
		t.Outages += len(s.Outages)
	}
	n.Totals = t
}

// JSON writes the night as indented JSON.
func (n *Night) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(n)
}

// clean makes a reason safe to show: the journal is redacted when written,
// but a report is pasted into chats, so it is redacted again; and it is
// made one line.
func clean(s string) string {
	return text.OneLine(redact.String(s), 0)
}
