package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/reconnect"
	"github.com/nightwatch-dev/nightwatch/session"
)

// Job statuses in the journal and the summary.
const (
	StatusDone    = string(journal.Done)
	StatusFailed  = string(journal.Failed)
	StatusSkipped = string(journal.Skipped)
)

// NightOptions tune one run of a batch.
type NightOptions struct {
	// Binary is the nightwatch executable whose hook every session gets.
	Binary string
	// Env is the supervisor's environment (os.Environ()).
	Env []string
	// Fresh starts a new run even if the last one did not finish.
	Fresh bool
	// LogWriter gets the night's log lines as well as
	// <state_dir>/logs/<run-id>.log (JSON lines): a console writer on a
	// terminal, stderr under launchd or cron. Nil: the file only.
	LogWriter io.Writer
	// Maintenance is how often unhealthy servers are re-probed and
	// reconnected while jobs wait (default 10 s): the longest a deferred
	// job waits after its server is back.
	Maintenance time.Duration
	// RetryPause is the pause before a job's second attempt; it grows by
	// the same amount per attempt (default 30 s).
	RetryPause time.Duration
	// SkipPreflight is for resumed runs in tests; a normal run preflights.
	SkipPreflight bool
	Now           func() time.Time
	// Progress, when set, is told the state of the night after every
	// change (the run command prints it on a terminal).
	Progress func(Progress)
	// AfterNight runs when a night has finished, before the notification;
	// what it returns (the morning report's path) is added to it. The
	// commands write the report here, for `run` and `daemon` alike.
	AfterNight func(b *jobs.Batch, s *NightSummary) string
}

// Progress is the night at one moment.
type Progress struct {
	Running                      []string // "job (attempt n, 1m20s)"
	Waiting                      []string // "job: reason"
	Done, Failed, Skipped, Total int
}

// JobResult is how one job ended.
type JobResult struct {
	Name      string           `json:"name"`
	Status    string           `json:"status"`
	Reason    string           `json:"reason,omitempty"`
	Attempts  int              `json:"attempts"`
	Deferrals int              `json:"deferrals,omitempty"`
	Outcome   *session.Outcome `json:"outcome,omitempty"`
}

// NightSummary is the night, for the exit code and the morning.
type NightSummary struct {
	RunID   string      `json:"runId"`
	Journal string      `json:"journal"`
	Resumed bool        `json:"resumed"`
	Jobs    []JobResult `json:"jobs"`
	Done    int         `json:"done"`
	Failed  int         `json:"failed"`
	Skipped int         `json:"skipped"`
	CostUSD float64     `json:"costUsd"`
}

// AllDone reports whether every job is done.
func (s *NightSummary) AllDone() bool { return s.Failed == 0 && s.Skipped == 0 }

// ErrStopped is returned when the night was stopped (SIGTERM); the journal
// has no run-finished line, so the next `run` resumes it.
var ErrStopped = errors.New("the night was stopped before it finished; `nightwatch run` resumes it")

type jobState struct {
	job       *jobs.Job
	status    string // pending, running, or a final status
	attempts  int
	notBefore time.Time
	deferring string // the reason it waits now; "" when not deferred
	deferrals int
	reason    string
	last      *session.Outcome
	startedAt time.Time
}

type attemptResult struct {
	name    string
	attempt int
	outcome session.Outcome
}

type night struct {
	b       *jobs.Batch
	opts    NightOptions
	log     zerolog.Logger
	runID   string
	started time.Time
	journal *journal.Journal
	store   *healthcheck.Store
	checker *healthcheck.Checker
	states  map[string]*jobState
	order   []string
	running int
	results chan attemptResult
	cost    float64
	events  eventTail
	// deferStart is when each waiting job was first deferred.
	deferStart map[string]time.Time
}

func (n *night) now() time.Time {
	if n.opts.Now != nil {
		return n.opts.Now()
	}
	return time.Now()
}

// RunNight runs the batch to its end: preflight, then every job in file
// order as far as needs, max_parallel, server health, deadline and cost
// allow, with maintenance between jobs. A run of the same batch that ended
// without its run-finished line is resumed unless opts.Fresh.
func RunNight(ctx context.Context, b *jobs.Batch, opts NightOptions) (*NightSummary, error) {
	if opts.Maintenance <= 0 {
		opts.Maintenance = 10 * time.Second
	}
	if opts.RetryPause <= 0 {
		opts.RetryPause = 30 * time.Second
	}
	if err := os.MkdirAll(b.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	unlock, err := LockBatch(b.StateDir, b.Name)
	if err != nil {
		return nil, err
	}
	defer unlock()

	n := &night{b: b, opts: opts, log: newLogger(opts.LogWriter), states: map[string]*jobState{},
		results: make(chan attemptResult), deferStart: map[string]time.Time{}}
	for _, j := range b.Jobs {
		n.states[j.Name] = &jobState{job: j, status: "pending"}
		n.order = append(n.order, j.Name)
	}
	n.store = &healthcheck.Store{Path: statedir.Cache(b.StateDir), Warn: n.warn}
	n.checker = n.newChecker()
	// The events file lives as long as the state folder; this night's
	// journal takes what is appended from now on.
	n.events = eventTail{path: statedir.Events(b.StateDir)}
	n.events.skipToEnd()

	resumed, err := n.openJournal()
	if err != nil {
		return nil, err
	}
	closeLog, err := n.openLog()
	if err != nil {
		n.log.Error().Err(err).Msg("cannot open the night's log file; logging to the console only")
	} else {
		defer closeLog()
	}
	if n.journal.Repaired != "" {
		n.log.Warn().Str("journal", n.journal.Path).Msg("the journal's last line was torn by a crash and was cut: " + n.journal.Repaired)
	}
	summary := &NightSummary{RunID: n.runID, Journal: n.journal.Path, Resumed: resumed}

	if !opts.SkipPreflight {
		report := Preflight(ctx, b, PreflightOptions{Store: n.store, Settings: n.checker.Settings,
			Getenv: environ.Lookup(opts.Env), Warn: n.warn})
		for _, row := range report.Rows {
			n.log.Info().Str("server", row.Server).Str("verdict", string(row.Verdict)).
				Dur("latency", row.Latency).Str("reason", row.Reason).Msg("preflight")
		}
		for _, w := range report.Warnings {
			n.log.Warn().Msg(w)
		}
	}

	err = n.loop(ctx)
	for _, name := range n.order {
		st := n.states[name]
		r := JobResult{Name: name, Status: st.status, Reason: st.reason, Attempts: st.attempts,
			Deferrals: st.deferrals, Outcome: st.last}
		switch st.status {
		case StatusDone:
			summary.Done++
		case StatusSkipped:
			summary.Skipped++
		default:
			summary.Failed++
		}
		summary.Jobs = append(summary.Jobs, r)
	}
	summary.CostUSD = n.cost
	if err != nil {
		return summary, err
	}
	n.append(journal.Event{Type: journal.RunFinished, Reason: fmt.Sprintf("%d done, %d failed, %d skipped",
		summary.Done, summary.Failed, summary.Skipped)})
	var extra string
	if opts.AfterNight != nil {
		extra = opts.AfterNight(b, summary)
	}
	if b.Notify.Webhook != "" || len(b.Notify.Command) > 0 {
		var text strings.Builder
		fmt.Fprintf(&text, "nightwatch: batch %s finished\n\n", b.Name)
		PrintSummary(&text, summary)
		if extra != "" {
			fmt.Fprintln(&text, extra)
		}
		for _, err := range notify(ctx, b.Notify, text.String(), n.log) {
			n.append(journal.Event{Type: journal.NotifyFailed, Reason: err.Error()})
		}
	}
	return summary, nil
}

// newLogger writes JSON lines (or what w formats) to w, or nowhere.
func newLogger(w io.Writer) zerolog.Logger {
	if w == nil {
		w = io.Discard
	}
	return zerolog.New(w).With().Timestamp().Logger()
}

// openLog sends the night's log lines to its file too, as JSON lines
// (0600; a resumed run appends to the same file).
func (n *night) openLog() (func(), error) {
	path := statedir.Log(n.b.StateDir, n.runID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("log %s is a symlink; refusing to write through it", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	var w io.Writer = f
	if n.opts.LogWriter != nil {
		w = zerolog.MultiLevelWriter(f, n.opts.LogWriter)
	}
	n.log = zerolog.New(w).With().Timestamp().Str("run", n.runID).Logger()
	return func() { _ = f.Close() }, nil
}

// openJournal resumes the newest unfinished run of this batch, or starts
// a new one.
func (n *night) openJournal() (bool, error) {
	if !n.opts.Fresh {
		path, events, err := journal.LatestUnfinished(n.b.StateDir, n.b.Name)
		if err != nil {
			return false, err
		}
		if path != "" {
			j, err := journal.Open(path)
			if err != nil {
				return false, err
			}
			n.journal = j
			n.runID = j.RunID
			rp := journal.Replay(events)
			n.started = rp.Started
			if n.started.IsZero() {
				n.started = n.now()
			}
			n.cost = rp.CostUSD
			for name, st := range n.states {
				st.attempts = rp.Attempts[name]
				switch {
				case rp.Done[name]:
					st.status = StatusDone
				case rp.Skipped[name] != "":
					st.status, st.reason = StatusSkipped, rp.Skipped[name]
				case rp.Failed[name]:
					st.status, st.reason = StatusFailed, "failed before the restart"
				}
			}
			killLeftovers(rp.Sessions, n.log)
			removeSessionConfigs(n.b.StateDir, n.runID)
			n.append(journal.Event{Type: journal.RunResumed, Reason: fmt.Sprintf("pid %d resumes the run", os.Getpid()), PID: os.Getpid()})
			n.log.Info().Str("run", n.runID).Msg("resuming an unfinished run")
			return true, nil
		}
	}
	n.started = n.now()
	n.runID = journal.NewRunID(n.started)
	j, err := journal.Create(n.b.StateDir, n.runID)
	if err != nil {
		return false, err
	}
	n.journal = j
	n.append(journal.Event{Type: journal.RunStarted, Batch: n.b.Name, BatchFile: n.b.File, PID: os.Getpid()})
	return false, nil
}

func (n *night) append(ev journal.Event) {
	ev.Run = n.runID
	if err := n.journal.Append(ev); err != nil {
		// The night goes on; a lost journal line is said, not hidden.
		n.log.Error().Err(err).Str("type", string(ev.Type)).Msg("cannot write the journal")
	}
}

func (n *night) warn(msg string) { n.log.Warn().Msg(msg) }

func (n *night) loop(ctx context.Context) error {
	ticker := time.NewTicker(n.opts.Maintenance)
	defer ticker.Stop()
	for {
		n.absorbServerEvents()
		n.applyLimits()
		n.startReady(ctx)
		n.giveUpWaiting()
		n.report()
		if n.running == 0 && n.allEnded() {
			return nil
		}
		select {
		case r := <-n.results:
			n.finish(r)
			n.maintain(ctx)
		case <-ticker.C:
			n.maintain(ctx)
		case <-ctx.Done():
			// Sessions see the same ctx and are being killed; wait for
			// each so that nothing outlives the supervisor.
			for n.running > 0 {
				r := <-n.results
				n.running--
				n.log.Warn().Str("job", r.name).Msg("stopped with the night")
			}
			return ErrStopped
		}
	}
}

func (n *night) report() {
	if n.opts.Progress == nil {
		return
	}
	p := Progress{Total: len(n.order)}
	now := n.now()
	for _, name := range n.order {
		st := n.states[name]
		switch {
		case st.status == "running":
			p.Running = append(p.Running, fmt.Sprintf("%s (attempt %d, %s)", name, st.attempts,
				now.Sub(st.startedAt).Round(time.Second)))
		case st.status == "pending" && st.deferring != "":
			p.Waiting = append(p.Waiting, name+": "+st.deferring)
		case st.status == StatusDone:
			p.Done++
		case st.status == StatusFailed:
			p.Failed++
		case st.status == StatusSkipped:
			p.Skipped++
		}
	}
	n.opts.Progress(p)
}

func (n *night) allEnded() bool {
	for _, st := range n.states {
		if st.status == "pending" || st.status == "running" {
			return false
		}
	}
	return true
}

// deadline is the first moment at the batch's deadline time of day after
// the run started.
func (n *night) deadline() (time.Time, bool) {
	if n.b.Deadline == nil {
		return time.Time{}, false
	}
	s := n.started.Local()
	d := time.Date(s.Year(), s.Month(), s.Day(), n.b.Deadline.Hour, n.b.Deadline.Minute, 0, 0, time.Local)
	if !d.After(s) {
		d = d.AddDate(0, 0, 1)
	}
	return d, true
}

func (n *night) applyLimits() {
	now := n.now()
	if d, ok := n.deadline(); ok && !now.Before(d) {
		n.skipPending(fmt.Sprintf("the deadline %s passed", d.Format("15:04")))
	}
	if n.b.MaxCostUSD > 0 && n.cost >= n.b.MaxCostUSD {
		n.skipPending(fmt.Sprintf("max_cost_usd reached: $%.2f of $%.2f spent", n.cost, n.b.MaxCostUSD))
	}
}

// skipPending ends every job that has not started with reason, adding what
// it was waiting for.
func (n *night) skipPending(reason string) {
	for _, name := range n.order {
		st := n.states[name]
		if st.status != "pending" {
			continue
		}
		why := reason
		if st.deferring != "" {
			why += "; it was waiting: " + st.deferring
		}
		n.skip(st, why)
	}
}

func (n *night) skip(st *jobState, reason string) {
	st.status, st.reason = StatusSkipped, reason
	n.append(journal.Event{Type: journal.JobSkipped, Job: st.job.Name, Status: journal.Skipped, Reason: reason})
	n.log.Warn().Str("job", st.job.Name).Str("reason", reason).Msg("skipped")
}

// startReady starts jobs in file order while slots are free.
func (n *night) startReady(ctx context.Context) {
	now := n.now()
	for _, name := range n.order {
		if n.running >= n.b.MaxParallel {
			return
		}
		st := n.states[name]
		if st.status != "pending" || now.Before(st.notBefore) {
			continue
		}
		if ready, blocked := n.needsMet(st); blocked != "" {
			n.skip(st, blocked)
			continue
		} else if !ready {
			continue
		}
		if down := n.unhealthyServers(ctx, st.job); down != "" && st.job.OnUnhealthy != jobs.Run {
			if st.job.OnUnhealthy == jobs.Skip {
				n.skip(st, down)
				continue
			}
			if _, ok := n.deferStart[name]; !ok {
				n.deferStart[name] = now
			}
			if st.deferring != down {
				st.deferring = down
				st.deferrals++
				n.append(journal.Event{Type: journal.JobDeferred, Job: name, Reason: down})
				n.log.Info().Str("job", name).Str("reason", down).Msg("deferred")
			}
			continue
		}
		st.deferring = ""
		n.launch(ctx, st)
	}
}

// needsMet says whether every job st needs is done; blocked is a reason to
// skip when one of them can no longer be.
func (n *night) needsMet(st *jobState) (ready bool, blocked string) {
	for _, need := range st.job.Needs {
		switch dep := n.states[need]; dep.status {
		case StatusDone:
		case StatusFailed, StatusSkipped:
			return false, fmt.Sprintf("it needs %s, which %s", need, dep.status)
		default:
			return false, ""
		}
	}
	return true, ""
}

// unhealthyServers returns "" when every server of job may be called, or
// which one is down since when and why. A server whose verdict has
// expired is probed now (with the reconnect policy).
func (n *night) unhealthyServers(ctx context.Context, job *jobs.Job) string {
	var down []string
	for _, srv := range n.b.ServersOf(job) {
		d := n.checker.Decide(ctx, srv.Name, func() *mcpconfig.Server { return &srv.MCP })
		if d.Allow {
			continue
		}
		down = append(down, describeDown(srv.Name, d.Entry))
	}
	return strings.Join(down, "; ")
}

func describeDown(server string, e *healthcheck.Entry) string {
	if e == nil {
		return fmt.Sprintf("server %s is down", server)
	}
	since := e.UnhealthySince.Time()
	if since.IsZero() {
		since = e.CheckedAt.Time()
	}
	msg := fmt.Sprintf("server %s is down since %s", server, since.Local().Format("15:04:05"))
	if e.LastError != "" {
		msg += " (" + text.OneLine(e.LastError, 160) + ")"
	}
	return msg
}

func (n *night) launch(ctx context.Context, st *jobState) {
	st.attempts++
	st.status = "running"
	st.startedAt = n.now()
	n.running++
	spec := session.Spec{Batch: n.b, Job: st.job, RunID: n.runID, Attempt: st.attempts,
		Binary: n.opts.Binary, Env: n.opts.Env}
	files, err := session.Prepare(spec)
	if err != nil {
		n.running--
		st.status = "pending"
		n.finishAttempt(st, session.Outcome{Status: StatusFailed, Reason: "cannot prepare the session: " + err.Error()})
		return
	}
	n.append(journal.Event{Type: journal.JobStarted, Job: st.job.Name, Attempt: st.attempts, Folder: files.Dir})
	n.log.Info().Str("job", st.job.Name).Int("attempt", st.attempts).Msg("started")
	obs := &sessionObserver{n: n, job: st.job.Name, attempt: st.attempts}
	go func(name string, attempt int) {
		out := session.Run(ctx, spec, files, obs)
		n.results <- attemptResult{name: name, attempt: attempt, outcome: out}
	}(st.job.Name, st.attempts)
}

func (n *night) finish(r attemptResult) {
	n.running--
	st := n.states[r.name]
	st.status = "pending"
	if r.outcome.KilledBy == "stopped" {
		return
	}
	n.finishAttempt(st, r.outcome)
}

func (n *night) finishAttempt(st *jobState, out session.Outcome) {
	st.last = &out
	n.cost += out.CostUSD
	result := outcomeFields(out)
	if out.Status == StatusDone {
		st.status, st.reason = StatusDone, ""
		n.append(journal.Event{Type: journal.JobFinished, Job: st.job.Name, Attempt: st.attempts, Status: journal.Done, Result: result})
		n.log.Info().Str("job", st.job.Name).Int("turns", out.NumTurns).Float64("cost", out.CostUSD).Msg("done")
		return
	}
	if st.attempts <= st.job.Retries {
		pause := n.opts.RetryPause * time.Duration(st.attempts)
		st.notBefore = n.now().Add(pause)
		n.append(journal.Event{Type: journal.JobRetried, Job: st.job.Name, Attempt: st.attempts, Reason: out.Reason, Result: result})
		n.log.Warn().Str("job", st.job.Name).Str("reason", out.Reason).Dur("pause", pause).Msg("attempt failed; will retry")
		return
	}
	st.status, st.reason = StatusFailed, out.Reason
	n.append(journal.Event{Type: journal.JobFinished, Job: st.job.Name, Attempt: st.attempts, Status: journal.Failed,
		Reason: out.Reason, Result: result})
	n.log.Error().Str("job", st.job.Name).Str("reason", out.Reason).Msg("failed")
}

func outcomeFields(o session.Outcome) *journal.Result {
	return &journal.Result{Subtype: o.Subtype, IsError: o.IsError, NumTurns: o.NumTurns,
		CostUSD: o.CostUSD, DurationMS: o.DurationMS, SessionID: o.SessionID,
		TerminalReason: o.TerminalReason, ExitCode: o.ExitCode, KilledBy: o.KilledBy}
}

// giveUpWaiting skips deferred jobs that can never run: nothing is running
// or startable, and they have waited past the batch's max_defer.
func (n *night) giveUpWaiting() {
	if n.running > 0 {
		return
	}
	limit := n.b.Defaults.MaxDefer
	if limit <= 0 {
		return
	}
	now := n.now()
	for _, name := range n.order {
		st := n.states[name]
		if st.status == "pending" && st.deferring != "" && now.Sub(n.deferredSince(name)) >= limit {
			n.skip(st, fmt.Sprintf("waited %s for its servers: %s", limit, st.deferring))
		}
	}
}

// deferredSince is when the job was first deferred in this run.
func (n *night) deferredSince(name string) time.Time {
	if t, ok := n.deferStart[name]; ok {
		return t
	}
	return n.now()
}

// maintain runs between jobs and while jobs wait: reconnect and re-probe
// unhealthy servers whose retry time has come, re-probe early the servers
// deferred jobs wait for, reset stuck entries whose server answers again,
// and drop entries of servers the batch does not define.
func (n *night) maintain(ctx context.Context) {
	f, err := n.store.Read()
	if err != nil {
		n.warn(err.Error())
	}
	now := n.now()
	waitedFor := n.serversWaitedFor()
	for _, srv := range n.b.Servers {
		e := f.Entry(srv.Name)
		if e == nil || e.Status != healthcheck.StatusUnhealthy {
			continue
		}
		due := !now.Before(e.NextRetryAt.Time())
		stuck := n.checker.Settings.Stuck(e)
		switch {
		case due:
			d := n.checker.Decide(ctx, srv.Name, func() *mcpconfig.Server { return &srv.MCP })
			n.maintenance(srv.Name, journal.Retry, "retry time came: probed with the reconnect policy", d.Allow)
		case (stuck || waitedFor[srv.Name]) && e.LastFailureCode != healthcheck.CodeRateLimited:
			// The backoff protects servers from hooks; the supervisor
			// probes once per interval so a job waiting on a server that
			// is back starts within one interval, not one backoff.
			res := n.probe(ctx, &srv.MCP)
			if res.Verdict.Reachable() {
				n.checker.RecordProbe(&srv.MCP, res)
				what := "answered again while a job waited for it"
				if stuck {
					what = "stuck entry reset: its backoff was pinned at the cap, but it answers again"
				}
				n.maintenance(srv.Name, journal.Reprobe, what, true)
			}
		}
	}
	var stale []string
	for name := range f.Servers {
		if n.b.Server(name) == nil {
			stale = append(stale, name)
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		if _, err := n.checker.Reset(stale, false, false); err == nil {
			for _, name := range stale {
				n.maintenance(name, journal.Drop, "dropped cache entries of servers the batch does not define", true)
			}
		}
	}
	n.absorbServerEvents()
}

func (n *night) maintenance(server string, action journal.Action, what string, healthy bool) {
	status := journal.Unhealthy
	if healthy {
		status = journal.Healthy
	}
	n.append(journal.Event{Type: journal.Maintenance, Server: server, Action: action, Status: status, Reason: what})
	n.log.Info().Str("server", server).Str("status", string(status)).Msg(what)
}

func (n *night) serversWaitedFor() map[string]bool {
	out := map[string]bool{}
	for _, st := range n.states {
		if st.status == "pending" && st.deferring != "" {
			for _, s := range st.job.Servers {
				out[s] = true
			}
		}
	}
	return out
}

func (n *night) probe(ctx context.Context, srv *mcpconfig.Server) probe.Result {
	cwd := n.b.Dir
	res := probe.Probe(ctx, srv, probe.Options{Timeout: n.b.Health.ProbeTimeout, Cwd: cwd,
		Environ: n.sessionEnviron()})
	res.Reason = redact.String(res.Reason, srv.Secrets()...)
	return res
}

// sessionEnviron is the environment sessions (and so their stdio servers)
// get, so that probes start servers the way sessions will.
func (n *night) sessionEnviron() []string { return session.Environ(n.b, n.opts.Env) }

func (n *night) newChecker() *healthcheck.Checker {
	h := n.b.Health
	settings := healthcheck.DefaultSettings()
	settings.TTL, settings.Backoff, settings.MaxBackoff = h.TTL, h.Backoff, h.MaxBackoff
	getenv := environ.Lookup(n.sessionEnviron())
	return &healthcheck.Checker{
		Store:    n.store,
		Settings: settings,
		Now:      n.now,
		Probe:    n.probe,
		Policy: func(code healthcheck.FailureCode, have bool) healthcheck.Action {
			return healthcheck.Action(reconnect.DefaultPolicy(reconnect.Failure(code), have))
		},
		HaveReconnect: func(server string) bool { return n.reconnectCommand(server, getenv) != "" },
		Reconnect: func(ctx context.Context, server string) healthcheck.ReconnectResult {
			return n.reconnect(ctx, server, getenv)
		},
		ProbeWait: h.ProbeTimeout + 10*time.Second,
		Events:    &healthcheck.EventLog{Path: statedir.Events(n.b.StateDir), Warn: n.warn},
		Warn:      n.warn,
		Redact: func(s string) string {
			var secrets []string
			for _, srv := range n.b.Servers {
				secrets = append(secrets, srv.MCP.Secrets()...)
			}
			return redact.String(s, secrets...)
		},
	}
}

// reconnectCommand is the batch's reconnect for server, else the
// environment's (NIGHTWATCH_RECONNECT_<SERVER>, …) as the hook reads it.
func (n *night) reconnectCommand(server string, getenv func(string) (string, bool)) string {
	if srv := n.b.Server(server); srv != nil && srv.Reconnect != "" {
		return srv.Reconnect
	}
	cmd, _ := reconnect.CommandFor(server, getenv)
	return cmd
}

func (n *night) reconnect(ctx context.Context, server string, getenv func(string) (string, bool)) healthcheck.ReconnectResult {
	command := n.reconnectCommand(server, getenv)
	if command == "" {
		return healthcheck.ReconnectResult{}
	}
	argv, err := reconnect.Split(command)
	if err != nil {
		return healthcheck.ReconnectResult{Attempted: true, Detail: err.Error()}
	}
	var secrets []string
	if srv := n.b.Server(server); srv != nil {
		secrets = srv.MCP.Secrets()
	}
	out := reconnect.Run(ctx, reconnect.Expand(argv, server), reconnect.Options{
		Timeout: n.b.Health.ProbeTimeout, Dir: n.b.Dir, Env: n.sessionEnviron(), Secrets: secrets})
	detail := strings.Join(out.Command, " ")
	if !out.OK {
		detail += ": " + out.Err
	}
	n.append(journal.Event{Type: journal.Maintenance, Server: server, Action: journal.Reconnect, Reason: detail})
	n.log.Info().Str("server", server).Bool("ok", out.OK).Str("command", strings.Join(out.Command, " ")).Msg("reconnect")
	return healthcheck.ReconnectResult{Attempted: out.Attempted, OK: out.OK, Detail: detail}
}

// sessionObserver turns what a session's stream says into cache state at
// once: a server Claude Code could not connect to is down for every
// session, not only this one.
type sessionObserver struct {
	n       *night
	job     string
	attempt int
}

func (o *sessionObserver) ServerStatus(server, status string) {
	var code healthcheck.FailureCode
	switch status {
	case "failed":
		code = healthcheck.CodeTransport
	case "needs-auth":
		code = healthcheck.CodeAuth
	default:
		return
	}
	reason := fmt.Sprintf("Claude Code reported the server %s when job %s started", status, o.job)
	err := o.n.store.Update(func(f *healthcheck.File) error {
		e := o.n.checker.Settings.MarkUnhealthy(f.Entry(server), o.n.now(),
			healthcheck.Failure{Code: code, Reason: reason})
		f.Servers[server] = &e
		return nil
	})
	if err != nil {
		o.n.warn(err.Error())
	}
	o.n.log.Warn().Str("server", server).Str("job", o.job).Str("status", status).Msg("session could not use a server")
}

func (o *sessionObserver) ToolUnavailable(tool string) {
	o.n.append(journal.Event{Type: journal.ToolUnavailable, Job: o.job, Attempt: o.attempt, Tool: tool})
	o.n.log.Warn().Str("job", o.job).Str("tool", tool).Msg("the model called a tool the session does not have")
}

// SessionStarted records the session's process group in the journal, for
// a supervisor that restarts after this one is killed.
func (o *sessionObserver) SessionStarted(pgid int) {
	o.n.append(sessionProcessEvent(o.job, o.attempt, pgid))
}
