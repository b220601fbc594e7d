package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/cluster/healthsync"
	"github.com/nightwatch-dev/nightwatch/cluster/queue"
	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/agentlogin"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/awake"
	"github.com/nightwatch-dev/nightwatch/internal/batchlock"
	"github.com/nightwatch-dev/nightwatch/internal/batchsecrets"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/modelapi"
	"github.com/nightwatch-dev/nightwatch/notify"
	"github.com/nightwatch-dev/nightwatch/preflight"
	"github.com/nightwatch-dev/nightwatch/session"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
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
	// APIWaits are the night's times for waiting on the model's API
	// (zero fields: the batch's api: block, then modelapi.DefaultWaits); tests
	// make them seconds.
	APIWaits modelapi.Waits
	// CheckAPI, when set, replaces the cheap check of the API (modelapi.Check
	// against the sessions' ANTHROPIC_BASE_URL).
	CheckAPI func(ctx context.Context) (ok bool, why string)
	// SkipPreflight is for resumed runs in tests; a normal run preflights.
	SkipPreflight bool
	Now           func() time.Time
	// Progress, when set, is told the state of the night after every
	// change (the run command prints it on a terminal).
	Progress func(plan.Progress)
	// AfterNight runs when a night has finished, before the notification;
	// what it returns (the morning report's path) is added to it. The
	// commands write the report here, for `run` and `daemon` alike.
	AfterNight func(b *jobs.Batch, s *NightSummary) string
	// RerunOf is the run this night re-runs some jobs of (`nightwatch
	// rerun`: the batch holds only those); its run-started line says so.
	RerunOf string
	// ManagedSettingsDir is where Claude Code's managed settings are read
	// from when the night chooses its hook transport ("": this OS's
	// folder, claudesettings.ManagedDir); tests give their own.
	ManagedSettingsDir string
}

// NightSummary is the night, for the exit code and the morning.
type NightSummary struct {
	RunID   string           `json:"runId"`
	Journal string           `json:"journal"`
	Resumed bool             `json:"resumed"`
	Jobs    []plan.JobResult `json:"jobs"`
	Done    int              `json:"done"`
	Failed  int              `json:"failed"`
	Skipped int              `json:"skipped"`
	CostUSD float64          `json:"costUsd"`
	// Pauses say when and why the night waited on the model's API;
	// Stopped why it stopped starting jobs early ("" when it did not).
	Pauses  []string `json:"pauses,omitempty"`
	Stopped string   `json:"stopped,omitempty"`
	// Closed is the unfinished run this night closed instead of resuming
	// it (its window had passed), and why.
	Closed string `json:"closed,omitempty"`
}

// AllDone reports whether every job is done.
func (s *NightSummary) AllDone() bool { return s.Failed == 0 && s.Skipped == 0 }

// ErrStopped is returned when the night was stopped (SIGTERM); the journal
// has no run-finished line, so the next `run` resumes it.
var ErrStopped = errors.New("the night was stopped before it finished; `nightwatch run` resumes it")

// ErrJournal is returned when the journal could not be written: the night
// started no job after that, let the running ones end and has no
// run-finished line, so the next `nightwatch run` resumes it (and runs no
// finished job again: the lines that missed the journal were kept beside
// it, and resuming folds them back in).
var ErrJournal = errors.New("the journal could not be written; the night started no more jobs")

// ErrUnfinished is returned for a re-run (NightOptions.RerunOf) while a
// run of the batch has not finished: that run is resumed, not re-run.
var ErrUnfinished = errors.New("a run has not finished")

type night struct {
	b       *jobs.Batch
	opts    NightOptions
	log     zerolog.Logger
	runID   string
	started time.Time
	journal *journal.Journal
	// journalErr is the first journal write that failed: the night starts
	// nothing more.
	journalErr error
	// stopping: the night was stopped; the ends of its attempts are still
	// applied, and nothing new starts.
	stopping bool
	store    *healthcheck.Store
	checker  *healthcheck.Checker
	events   healthcheck.EventTail
	// plan is the jobs' state; only the loop's goroutine touches it.
	plan *plan.Plan
	// exec runs the attempts: on this host, or on the cluster's workers.
	exec executor
	// inbox carries what the executor reports (what sessions saw, and
	// their ends) to the loop; sessions never write state themselves. One
	// channel keeps the order (a session's process group before its end);
	// its buffer lets a session go on reading its stream while the loop is
	// busy probing.
	inbox chan session.Report
	// closed is the unfinished run this start closed instead of resuming,
	// and why ("" when none).
	closed string
	// cluster is the night's cluster when the batch has a cluster:
	// section: its coordinator lock and shared journal (cluster.go), and
	// the executor that runs attempts on its workers; nil on one host.
	cluster *clusterLink
	// toolHints are what the preflight's tools/list said of each server's
	// tools, and effectsJournaled the last side effect of each job the
	// journal has (effects.go).
	toolHints        map[string]map[string]effects.Hints
	effectsJournaled map[string]int
	// probedForResume is, by job, the attempt after which its servers were
	// probed before a resume (resume.go).
	probedForResume map[string]int
	// guardStarts counts the exec-servers each attempt started for each
	// of its stdio servers (events.go).
	guardStarts map[attemptServer]int
	// httpRestarts are the HTTP servers' restarts already journaled (a
	// hook's server-restarted, once per outage).
	httpRestarts map[httpRestart]bool
	// probedDown are the servers the night's own probes found down since
	// the plan was last told (outagesSeen). Only the loop's goroutine
	// probes through n.probe.
	probedDown []plan.ServerDown
}

func (n *night) now() time.Time {
	if n.opts.Now != nil {
		return n.opts.Now()
	}
	return time.Now()
}

// newNight is a night of b with its cache, checker and events tail; the
// journal and the plan come with openJournal.
func newNight(b *jobs.Batch, opts NightOptions) *night {
	n := &night{b: b, opts: opts, log: newLogger(opts.LogWriter),
		inbox: make(chan session.Report, inboxSize)}
	n.store = &healthcheck.Store{Path: statedir.Cache(b.StateDir), Warn: n.warn}
	n.checker = n.newChecker()
	// The events file lives as long as the state folder; this night's
	// journal takes what is appended from now on.
	n.events = healthcheck.EventTail{Path: statedir.Events(b.StateDir)}
	n.events.SkipToEnd()
	return n
}

// RunNight runs the batch to its end: preflight, then every job in file
// order as far as needs, max_parallel, server health, deadline and cost
// allow, with maintenance between jobs. A run of the same batch that ended
// without its run-finished line is resumed unless opts.Fresh.
func RunNight(ctx context.Context, b *jobs.Batch, opts NightOptions) (*NightSummary, error) {
	// What leaves the process (journal, summary, notifications) is redacted
	// with the batch's secrets, whoever called (the CLI remembers them too).
	batchsecrets.RememberBatch(b)
	if opts.Maintenance <= 0 {
		opts.Maintenance = 10 * time.Second
	}
	if opts.RetryPause <= 0 {
		opts.RetryPause = 30 * time.Second
	}
	tightened, err := statedir.Secure(b.StateDir)
	if err != nil {
		return nil, err
	}
	unlock, err := batchlock.Take(b.StateDir, b.Name)
	if err != nil {
		return nil, err
	}
	defer unlock()

	n := newNight(b, opts)
	if b.Cluster != nil {
		if n.cluster, err = openCluster(ctx, b, opts.Env); err != nil {
			return nil, err
		}
		defer n.cluster.close()
		// The night decides from this host's cache: it follows what every
		// host's hooks learn, and what this one learns reaches them.
		relay, err := healthsync.Start(ctx, n.cluster.db, &healthcheck.Store{Path: n.store.Path},
			healthsync.Options{Host: n.cluster.host, Servers: queue.ServerNames(b), Warn: n.warn})
		if err != nil {
			return nil, err
		}
		defer relay.Close()
	}

	var resumed bool
	if n.cluster != nil {
		resumed, err = n.openClusterJournal(ctx)
	} else {
		resumed, err = n.openJournal()
	}
	if err != nil {
		return nil, err
	}
	// The journal's file is kept open for the night; closed after the
	// night's last fsync (deferred calls run last first).
	defer n.journal.Close()
	// The run's first lines are durable before the preflight probes, and
	// whatever the night wrote last is before it returns.
	n.syncJournal()
	defer n.syncJournal()
	b = n.b // a resumed re-run runs only its own jobs
	if n.exec == nil {
		n.exec = newLocalExecutor(b, n.runID, opts.Binary, opts.Env, n.inbox)
	}
	closeLog, err := n.openLog()
	if err != nil {
		n.log.Error().Err(err).Msg("cannot open the night's log file; logging to the console only")
	} else {
		defer closeLog()
	}
	for _, note := range tightened {
		n.log.Warn().Msg("state folder: " + note)
	}
	if le, ok := n.exec.(*localExecutor); ok {
		site := served.SiteOf(b, opts.Env, opts.ManagedSettingsDir)
		// What a served hook says goes to the night's log (redacted by
		// hook/served), as a command hook's stderr went to the CLI's.
		logHook := func(key, line string) { n.log.Info().Str("hook", key).Msg(line) }
		le.startServed = func() *served.Server {
			return served.StartFor(ctx, b, site, logHook, func(msg string, fellBack bool) {
				e := n.log.Info()
				if fellBack && b.HookTransport == jobs.HookHTTP {
					e = n.log.Warn()
				}
				e.Str("hook_transport", string(b.HookTransport)).Msg(msg)
			})
		}
		le.logServed = func(job string, attempt int, key string) {
			n.log.Debug().Str("job", job).Int("attempt", attempt).Str("hook", key).Msg("the session's hook is served")
		}
		defer le.served.Close() // once the night's sessions have ended
	}
	// The night is the subreaper of everything its sessions, probes and
	// commands start: a process that left its group (setsid, a double
	// fork, an emptied environment) comes back to it when its parent is
	// gone, and is killed at the end of the spawn it belongs to (the rule:
	// proc.Subreaper, RELIABILITY.md). Not on macOS or Windows: there it
	// does nothing and the group kill (or the Job Object) is the rule.
	if release, err := proc.Subreaper(); err != nil {
		n.log.Warn().Err(err).Msg("escaped processes are looked for by their environment only")
	} else {
		defer release()
	}
	if n.journal.Repaired != "" {
		n.log.Warn().Str("journal", n.journal.Path).Msg("the journal was repaired before resuming: " + n.journal.Repaired)
	}
	summary := &NightSummary{RunID: n.runID, Journal: n.journal.Path, Resumed: resumed, Closed: n.closed}

	if !opts.SkipPreflight {
		report := preflight.Run(ctx, b, preflight.Options{Checker: n.checker,
			Getenv: environ.Lookup(opts.Env), Warn: n.warn, Login: true, LoginEnv: opts.Env})
		if l := report.Login; l != nil {
			e := n.log.Info()
			if l.Level != "ok" {
				e = n.log.Error().Str("fix", l.Fix)
			}
			e.Str("login", l.Level).Msg("agent login: " + l.Detail)
			if l.Level == string(agentlogin.Fail) {
				// A refused login fails every session: the night stops
				// before the first, as it does after one (supervisor/plan).
				n.do(ctx, n.plan.StopNight(n.now(), string(modelapi.InvalidCredentials),
					fmt.Sprintf("the agent's login was refused before the night: %s (fix: %s)", l.Detail, l.Fix)))
			}
		}
		for _, row := range report.Rows {
			n.keepToolHints(row.Server, row.ToolHints)
			n.log.Info().Str("server", row.Server).Str("verdict", string(row.Verdict)).
				Dur("latency", row.Latency).Str("reason", row.Reason).Msg("preflight")
		}
		for _, w := range report.Warnings {
			n.log.Warn().Msg(w)
		}
		// The Checker announced every verdict, by the preflight: a server
		// already down before the first job is an outage of the night.
		n.absorbServerEvents()
	}
	for _, j := range b.Jobs {
		n.log.Info().Str("job", j.Name).Strs("allowed", j.Allowed()).Msg("the session will be allowed")
	}
	if release := n.keepAwake(ctx); release != nil {
		defer release()
	}

	err = n.loop(ctx)
	summary.Jobs, summary.Done, summary.Failed, summary.Skipped = n.plan.Summary()
	summary.CostUSD = n.plan.Cost()
	summary.Pauses, summary.Stopped = n.plan.Pauses(), n.plan.Stopped()
	if err == nil && n.journalErr != nil {
		err = fmt.Errorf("%w: %v", ErrJournal, n.journalErr)
	}
	if errors.Is(err, ErrJournal) {
		n.log.Error().Err(err).Msg("the night stopped: its journal cannot be written")
		n.journalFailed(ctx, summary, err)
		return summary, err
	}
	if err != nil {
		return summary, err
	}
	n.absorbServerEvents()
	for _, j := range b.Jobs {
		n.journalEffects(j.Name)
	}
	n.journalFinalStates()
	n.append(journal.Event{Type: journal.RunFinished, Reason: fmt.Sprintf("%d done, %d failed, %d skipped",
		summary.Done, summary.Failed, summary.Skipped)})
	n.syncJournal()
	if n.journalErr != nil {
		// Every job ended, but the journal lost its last line (it was
		// kept beside it): the morning hears of it all the same.
		err = fmt.Errorf("%w: %v", ErrJournal, n.journalErr)
		n.log.Error().Err(err).Msg("the night ended but its journal cannot be written")
		n.journalFailed(ctx, summary, err)
		return summary, err
	}
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
		for _, err := range notify.Send(ctx, b.Notify, text.String(), n.log) {
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
	f, err := atomicfile.OpenLog(path)
	if err != nil {
		return nil, err
	}
	var w io.Writer = f
	if n.opts.LogWriter != nil {
		w = zerolog.MultiLevelWriter(f, n.opts.LogWriter)
	}
	n.log = zerolog.New(redact.NewWriter(w)).With().Timestamp().Str("run", n.runID).Logger()
	return func() { _ = f.Close() }, nil
}

// openJournal resumes the newest unfinished run of this batch, or starts
// a new one.
func (n *night) openJournal() (bool, error) {
	if n.opts.Fresh {
		n.endDeadNight()
	} else {
		path, events, err := journal.LatestUnfinished(n.b.StateDir, n.b.Name)
		if err != nil {
			return false, err
		}
		if path != "" && n.opts.RerunOf != "" {
			// A re-run is a new night of some jobs; the unfinished one
			// would start its jobs again or be left half done.
			return false, fmt.Errorf("%w: run %s of batch %s: `nightwatch run %s` resumes it; re-run once it has ended",
				ErrUnfinished, statedir.RunID(path), n.b.Name, n.b.File)
		}
		if path != "" {
			j, err := journal.Open(path)
			if err != nil {
				// The unfinished run cannot be resumed, and starting
				// afresh would run its finished jobs again.
				return false, fmt.Errorf("%w: %v", ErrJournal, err)
			}
			j.Warn = n.journalWarn
			rp := journal.Replay(events)
			if why := pastWindow(n.b, rp.Started, n.now()); why != "" {
				n.closeRun(j, rp, why)
				return n.newRun()
			}
			if err := n.keepRerunJobs(events); err != nil {
				return false, err
			}
			n.journal = j
			n.runID = j.RunID
			n.started = rp.Started
			if n.started.IsZero() {
				n.started = n.now()
			}
			n.plan = plan.New(n.b, n.started, n.opts.RetryPause, n.opts.APIWaits)
			n.plan.Fold(events)
			n.effectsJournaled = journaledEffects(events)
			killLeftovers(rp.Sessions, n.log)
			removeSessionConfigs(n.b.StateDir, n.runID)
			n.append(journal.Event{Type: journal.RunResumed, Reason: fmt.Sprintf("pid %d resumes the run", os.Getpid()), PID: os.Getpid()})
			n.log.Info().Str("run", n.runID).Msg("resuming an unfinished run")
			return true, nil
		}
	}
	return n.newRun()
}

// keepRerunJobs narrows the batch to the jobs of a re-run night that is
// being resumed: `run` after an interrupted `rerun` finishes that re-run,
// and never starts the jobs it left out.
func (n *night) keepRerunJobs(events []journal.Event) error {
	for _, ev := range events {
		if ev.Type != journal.RunStarted || len(ev.Jobs) == 0 {
			continue
		}
		only, err := n.b.Only(ev.Jobs)
		if err != nil {
			return fmt.Errorf("resume the re-run of %s (jobs %s): %w; `nightwatch run --fresh %s` starts a new night instead",
				ev.RerunOf, strings.Join(ev.Jobs, ", "), err, n.b.File)
		}
		n.b = only
		n.log.Info().Str("rerun-of", ev.RerunOf).Strs("jobs", ev.Jobs).Msg("the unfinished run is a re-run: resuming only its jobs")
	}
	return nil
}

// newRun starts a new run's journal and plan.
func (n *night) newRun() (bool, error) {
	n.started = n.now()
	n.plan = plan.New(n.b, n.started, n.opts.RetryPause, n.opts.APIWaits)
	n.runID = journal.NewRunID(n.started)
	j, err := journal.Create(n.b.StateDir, n.runID)
	if err != nil {
		return false, err
	}
	j.Warn = n.journalWarn
	n.journal = j
	ev := journal.Event{Type: journal.RunStarted, Batch: n.b.Name, BatchFile: n.b.File, PID: os.Getpid()}
	if n.opts.RerunOf != "" {
		names := make([]string, len(n.b.Jobs))
		for i, j := range n.b.Jobs {
			names[i] = j.Name
		}
		ev.Reason = "re-runs " + strings.Join(names, ", ") + " of run " + n.opts.RerunOf
		ev.RerunOf, ev.Jobs = n.opts.RerunOf, names
	}
	n.append(ev)
	return false, nil
}

// append writes ev to the journal; it is durable at the next syncJournal,
// which comes before anything depends on it. A write that fails stops the
// night from starting anything more (a job whose end the journal lacks
// would run again after a crash): it is logged at error level, and
// RunNight ends with ErrJournal once the running jobs have ended.
func (n *night) append(ev journal.Event) {
	ev.Run = n.runID
	if err := n.journal.AppendLater(ev); err != nil {
		n.journalBroke(err, string(ev.Type))
	}
}

// syncJournal makes every line the night wrote durable, in one fsync (none
// when they are already). The night calls it before an attempt starts
// (after its job-started line: an attempt the journal does not know of must
// not run, and the end of the one before is then durable too), before
// anything that may wait (a probe, the API's check, maintenance, a
// notification), before it waits for the next report, and before it
// returns: a line is never lost to a crash of the machine once anything
// was done on its strength. Lines written in one turn of the loop (a
// job's end, the next job's start) cost one fsync together. A failed
// fsync is a journal that cannot be written (append).
func (n *night) syncJournal() {
	if err := n.journal.Sync(); err != nil {
		n.journalBroke(err, "fsync")
	}
}

func (n *night) journalBroke(err error, what string) {
	if n.journalErr == nil {
		n.journalErr = err
	}
	n.log.Error().Err(err).Str("type", what).Msg("cannot write the journal: no more jobs start tonight")
}

// journalWarn says loudly what the journal repaired on its own (a journal
// deleted mid-night, written anew).
func (n *night) journalWarn(msg string) { n.log.Error().Msg(msg) }

// journalFailed tells the morning what happened to a night whose journal
// could not be written: the report (from what was kept) and the
// notification.
func (n *night) journalFailed(ctx context.Context, summary *NightSummary, err error) {
	var extra string
	if n.opts.AfterNight != nil {
		extra = n.opts.AfterNight(n.b, summary)
	}
	if n.b.Notify.Webhook == "" && len(n.b.Notify.Command) == 0 {
		return
	}
	var text strings.Builder
	fmt.Fprintf(&text, "nightwatch: batch %s STOPPED: %v\n\n", n.b.Name, err)
	PrintSummary(&text, summary)
	if extra != "" {
		fmt.Fprintln(&text, extra)
	}
	for _, nerr := range notify.Send(ctx, n.b.Notify, text.String(), n.log) {
		n.log.Error().Err(nerr).Msg("the notification failed")
	}
}

// notifyNow tells the operator at once that the night stopped early
// (the agent's login was refused), not only when it ends.
func (n *night) notifyNow(ctx context.Context, reason string) {
	if n.b.Notify.Webhook == "" && len(n.b.Notify.Command) == 0 {
		return
	}
	var text strings.Builder
	fmt.Fprintf(&text, "nightwatch: batch %s STOPPED: %s\n\nThe remaining jobs are skipped. Check the agent's login: `nightwatch doctor` (agent-login).\n",
		n.b.Name, reason)
	for _, err := range notify.Send(ctx, n.b.Notify, text.String(), n.log) {
		n.append(journal.Event{Type: journal.NotifyFailed, Reason: err.Error()})
	}
}

// checkAPI is the cheap check of the model's API (modelapi.Check).
func (n *night) checkAPI(ctx context.Context) (bool, string) {
	if n.opts.CheckAPI != nil {
		return n.opts.CheckAPI(ctx)
	}
	return modelapi.Check(ctx, modelapi.Base(session.Environ(n.b, n.opts.Env)))
}

func (n *night) warn(msg string) { n.log.Warn().Msg(msg) }

// journalFinalStates records every batch server's state as the night ends,
// from the health cache: the report shows these, not the cache as it is
// when someone reads the report.
func (n *night) journalFinalStates() {
	f, err := n.store.Read()
	if err != nil {
		n.warn(err.Error())
		return
	}
	for _, srv := range n.b.Servers {
		ev := journal.Event{Type: journal.ServerFinal, Server: srv.Name}
		if e := f.Entry(srv.Name); e != nil {
			switch e.Status {
			case healthcheck.StatusHealthy:
				ev.Status = journal.Healthy
			case healthcheck.StatusUnhealthy:
				ev.Status, ev.Code, ev.Reason = journal.Unhealthy, string(e.LastFailureCode), e.LastError
			}
		}
		n.append(ev)
	}
}

// keepAwake keeps the machine from sleeping while the night runs
// (keep_awake, on by default) and says in the log what it did or why it
// could not; the returned release ends it (nil when nothing is held).
func (n *night) keepAwake(ctx context.Context) func() {
	if !n.b.KeepAwake {
		n.log.Info().Msg("keep_awake: false: the machine may sleep during the night")
		return nil
	}
	release, how, err := awake.Hold(ctx, "nightwatch night "+n.runID+" ("+n.b.Name+")")
	if err != nil {
		n.log.Warn().Err(err).Msg("keep_awake: " + how + "; the machine may sleep during the night")
		return release
	}
	n.log.Info().Msg("keep_awake: " + how)
	return release
}

// closeRun closes an unfinished run whose window passed: what its dead
// supervisor left running is ended, its session files removed, a
// run-closed line ends its journal, and its report is written (through
// AfterNight), so the morning after it still has one.
func (n *night) closeRun(j *journal.Journal, rp journal.RunState, why string) {
	killLeftovers(rp.Sessions, n.log)
	removeSessionConfigs(n.b.StateDir, j.RunID)
	if err := j.Append(journal.Event{Type: journal.RunClosed, Run: j.RunID, Reason: why}); err != nil {
		n.log.Error().Err(err).Str("run", j.RunID).Msg("cannot close the unfinished run's journal")
	}
	n.log.Warn().Str("run", j.RunID).Str("reason", why).Msg("the unfinished run is closed, not resumed")
	n.closed = j.RunID + ": " + why
	if n.opts.AfterNight != nil {
		old := &NightSummary{RunID: j.RunID, Journal: j.Path}
		if where := n.opts.AfterNight(n.b, old); where != "" {
			n.log.Info().Str("run", j.RunID).Msg(where)
		}
	}
}
