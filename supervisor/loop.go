package supervisor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/session"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// loop is the night: the only goroutine that owns the plan, the journal's
// writes and the cache's writes on the night's behalf. It tells the plan
// what happened, does what the plan returns, and waits for the next thing
// to happen: an attempt ending, a session's observation, the maintenance
// tick, or the night being stopped. It returns when the plan says every
// job has ended, or when ctx ends, once every session it started is gone.
func (n *night) loop(ctx context.Context) error {
	ticker := time.NewTicker(n.opts.Maintenance)
	defer ticker.Stop()
	// A line the hooks or an exec-server append (a server lost
	// mid-session above all) is read when it comes, not at the next tick.
	grew, stopWatch, watched := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	since := fileSize(n.events.Path)
	go func() { defer close(watched); watchEvents(n.events.Path, since, eventsPoll, grew, stopWatch) }()
	defer func() { close(stopWatch); <-watched }()
	defer n.syncJournal()
	wake := true
	for {
		if ctx.Err() != nil {
			// Stopped while busy: start nothing more.
			n.stop()
			return ErrStopped
		}
		n.plan.SetMaxParallel(n.exec.Capacity(ctx))
		if wake {
			// What the hooks saw since the last look reaches the journal
			// before the plan decides on it.
			n.absorbServerEvents()
			finished := n.do(ctx, n.plan.Step(n.now(), plan.Wake{}))
			n.reportProgress()
			if finished {
				return nil
			}
			if n.journalErr != nil {
				n.drain()
				return fmt.Errorf("%w: %v", ErrJournal, n.journalErr)
			}
		}
		wake = true
		// What this turn wrote is durable before the night waits.
		n.syncJournal()
		select {
		case r := <-n.inbox:
			if r.Ended != nil {
				// A server the session's exec-server lost is part of the
				// attempt's end (events.go): read it first.
				n.absorbServerEvents()
				n.journalEffects(r.Ended.Job)
				ev := attemptEnd(*r.Ended)
				ev.TasksLost = n.lostTasks(ev.Job, ev.Attempt)
				n.do(ctx, n.plan.Step(n.now(), ev))
				break
			}
			if r.Seen.Kind == session.SawModelTurn {
				// The API answered a real request: a trial after an
				// outage is over, and the others may start.
				n.do(ctx, n.plan.Step(n.now(), plan.ModelTurn{Job: r.Seen.Job, Attempt: r.Seen.Attempt}))
				break
			}
			n.observe(ctx, r.Seen)
			wake = false // an observation changes no job's phase
		case <-grew:
			// A server lost stops its attempt here (absorbGuard); the
			// attempt's end then wakes the plan.
			n.absorbServerEvents()
			wake = false
		case <-ticker.C:
			n.do(ctx, n.plan.Step(n.now(), plan.Tick{}))
		case <-ctx.Done():
			n.stop()
			return ErrStopped
		}
	}
}

// attemptEnd is an executor's report of an attempt's end, for the plan.
func attemptEnd(e session.Ended) plan.AttemptEnded {
	return plan.AttemptEnded{Job: e.Job, Attempt: e.Attempt, Outcome: e.Outcome, Host: e.Host}
}

// do carries out actions in order; an action may answer with an event
// whose actions are done next. It reports whether the night is over.
func (n *night) do(ctx context.Context, acts []plan.Action) (finished bool) {
	if ctx.Err() != nil {
		// The night is being stopped: nothing starts, even before the
		// loop turns to its stop path.
		n.stopping = true
	}
	for len(acts) > 0 {
		a := acts[0]
		acts = acts[1:]
		if why := n.startsNothing(); why != "" {
			// Stopping, or the journal cannot be written: record what
			// ends, start nothing.
			switch a := a.(type) {
			case plan.Record:
				n.record(a)
			case plan.Launch:
				acts = append(n.plan.Step(n.now(), notStarted(a, why)), acts...)
			}
			continue
		}
		if mayWait(a, n.b) {
			// A probe or a request may take seconds: what was written
			// before it is durable first.
			n.syncJournal()
		}
		switch a := a.(type) {
		case plan.Record:
			n.record(a)
		case plan.CheckHealth:
			n.probeBeforeResume(ctx, a.Job)
			down, servers := n.unhealthyServers(ctx, n.b.Job(a.Job))
			acts = append(n.plan.Step(n.now(), plan.Health{Job: a.Job, Down: down, Servers: servers}), acts...)
		case plan.Launch:
			if ev, failed := n.launch(ctx, a); failed {
				acts = append(n.plan.Step(n.now(), ev), acts...)
			}
		case plan.CheckAPI:
			ok, why := n.checkAPI(ctx)
			if !ok {
				n.log.Info().Str("why", why).Msg("the API does not answer yet")
			}
			acts = append(n.plan.Step(n.now(), plan.APIChecked{OK: ok, Why: why}), acts...)
		case plan.NotifyNow:
			n.notifyNow(ctx, a.Reason)
		case plan.Maintain:
			n.maintain(ctx)
		case plan.Finish:
			finished = true
		}
		acts = append(n.outagesSeen(), acts...)
	}
	return finished
}

// outagesSeen tells the plan of each server the night's own probes found
// down since it last asked (n.probe), and returns what the plan does
// about it: a job's bounce on that server was an outage.
func (n *night) outagesSeen() []plan.Action {
	var acts []plan.Action
	for _, d := range n.probedDown {
		acts = append(acts, n.plan.Step(n.now(), d)...)
	}
	n.probedDown = n.probedDown[:0]
	return acts
}

// mayWait says whether doing a may wait on something outside the night
// (a probe of a server, the API's check, a notification). Recording,
// finishing and looking at a job without servers do not; a launch syncs
// the journal itself, after its job-started line, and maintenance before
// each probe it makes (most turns it makes none).
func mayWait(a plan.Action, b *jobs.Batch) bool {
	switch a := a.(type) {
	case plan.Record, plan.Launch, plan.Finish, plan.Maintain:
		return false
	case plan.CheckHealth:
		job := b.Job(a.Job)
		return job != nil && len(b.ServersOf(job)) > 0
	}
	return true
}

// startsNothing says why the night starts no attempt now ("" when it
// may): it is stopping, or its journal cannot be written.
func (n *night) startsNothing() string {
	switch {
	case n.journalErr != nil:
		return "the journal cannot be written"
	case n.stopping:
		return "the night was stopped"
	}
	return ""
}

// notStarted is the end of an attempt the night did not start (why: it
// was stopping, or its journal cannot be written): the job stays as it
// was, for a resumed run.
func notStarted(a plan.Launch, why string) plan.AttemptEnded {
	return plan.AttemptEnded{Job: a.Job, Attempt: a.Attempt, Unstarted: true,
		Outcome: session.Outcome{Status: session.Failed, KilledBy: session.KilledStopped, Reason: "not started: " + why}}
}

// drain lets the running attempts end after the journal failed: their
// ends are recorded (into the journal's lost file) and nothing new starts.
func (n *night) drain() {
	for n.plan.Running() > 0 {
		n.syncJournal()
		n.takeWhileStopping(<-n.inbox)
	}
}

// stop is the one way a night stops (SIGTERM, a daemon's shutdown), on
// one host and on a cluster alike: the executor stops every attempt, and
// each end that arrives is applied through do as any other, so that an
// attempt that ended before it could be stopped is journaled, once, and
// whatever the plan would start instead does not start. Attempts whose
// ends do not come within the executor's patience (a cluster's workers
// that do not answer) are left to the next `nightwatch run`, which adopts
// them.
func (n *night) stop() {
	n.stopping = true
	var deadline <-chan time.Time
	if patience := n.exec.StopAll(context.Background()); patience > 0 {
		t := time.NewTimer(patience)
		defer t.Stop()
		deadline = t.C
	}
	defer n.syncJournal()
	for n.plan.Running() > 0 {
		n.syncJournal()
		select {
		case r := <-n.inbox:
			n.takeWhileStopping(r)
		case <-deadline:
			n.log.Warn().Int("running", n.plan.Running()).Msg("some attempts did not answer the stop; the next `nightwatch run` adopts them")
			return
		}
	}
}

// takeWhileStopping applies one report that came while the night stops
// (or drains): an end goes through do like any other; of what sessions
// saw, only their process groups are journaled, for a supervisor that
// must kill what this one leaves.
func (n *night) takeWhileStopping(r session.Report) {
	switch {
	case r.Ended != nil:
		n.journalEffects(r.Ended.Job)
		if r.Ended.Outcome.KilledBy == session.KilledStopped {
			n.log.Warn().Str("job", r.Ended.Job).Msg("stopped with the night")
		}
		n.do(context.Background(), n.plan.Step(n.now(), attemptEnd(*r.Ended)))
	case r.Seen.Kind == session.SawProcess:
		n.append(n.processEvent(r.Seen))
	}
}

func (n *night) record(a plan.Record) {
	n.append(a.Event)
	var e *zerolog.Event
	switch a.Level {
	case plan.LogError:
		e = n.log.Error()
	case plan.LogWarn:
		e = n.log.Warn()
	default:
		e = n.log.Info()
	}
	e = e.Str("job", a.Event.Job)
	if a.Event.Attempt > 0 {
		e = e.Int("attempt", a.Event.Attempt)
	}
	if a.Event.Reason != "" {
		e = e.Str("reason", a.Event.Reason)
	}
	if r := a.Event.Result; r != nil && a.Event.Status == journal.Done {
		e = e.Int("turns", r.NumTurns).Float64("cost", r.CostUSD)
	}
	e.Msg(a.Msg)
}

func (n *night) reportProgress() {
	if n.opts.Progress != nil {
		n.opts.Progress(n.plan.Progress(n.now()))
	}
}

// unhealthyServers returns "" when every server of job may be called, or
// which one is down since when and why, and the names of those down. A server whose verdict has
// expired is probed now (with the reconnect policy).
func (n *night) unhealthyServers(ctx context.Context, job *jobs.Job) (string, []string) {
	if job == nil {
		return "", nil
	}
	var down, names []string
	for _, srv := range n.b.ServersOf(job) {
		d := n.decide(ctx, srv)
		if d.Allow {
			continue
		}
		down = append(down, describeDown(srv.Name, d.Entry))
		names = append(names, srv.Name)
	}
	return strings.Join(down, "; "), names
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

// launch starts one attempt through the executor; its end comes back on
// n.inbox. Its job-started line is journaled before it runs: an attempt
// the journal does not know of must not run. An attempt that cannot start
// ends at once: failed is true and ev is its end, for the plan.
func (n *night) launch(ctx context.Context, a plan.Launch) (ev plan.AttemptEnded, failed bool) {
	job := n.b.Job(a.Job)
	var hosts []string
	told := n.prepareEffects(job, a.Attempt)
	started, err := n.exec.Launch(ctx, session.Attempt{Job: a.Job, Attempt: a.Attempt, Feedback: withTold(a.Feedback, told),
		Resume: a.Resume, ResumeWhy: a.ResumeWhy}, func(s session.Starting) bool {
		hosts = s.Hosts
		n.append(journal.Event{Type: journal.JobStarted, Job: a.Job, Attempt: a.Attempt, Folder: s.Folder,
			Allowed: job.Allowed(), Resume: s.Resume})
		n.syncJournal()
		return n.journalErr == nil
	})
	switch {
	case err != nil:
		return plan.AttemptEnded{Job: a.Job, Attempt: a.Attempt, Unstarted: true,
			Outcome: session.Outcome{Status: session.Failed, ExitCode: -1, Reason: err.Error()}}, true
	case !started:
		return notStarted(a, n.startsNothing()), true
	}
	e := n.log.Info().Str("job", a.Job).Int("attempt", a.Attempt).Strs("allowed", job.Allowed())
	if len(hosts) > 0 {
		e = e.Strs("hosts", hosts)
	}
	if n.cluster != nil {
		// In the cluster's queue until a worker takes it.
		n.plan.QueuedOnCluster(a.Job, a.Attempt)
		e.Msg("queued")
	} else {
		e.Msg("started")
	}
	return plan.AttemptEnded{}, false
}

// inboxSize bounds what the executor may have told the loop before it
// reads.
const inboxSize = 64

// observe records what a session saw. A server Claude Code could not
// connect to is down for every session, not only this one: the Checker
// records it, which announces it to the events file, and from there it
// reaches the journal like every other change of a server's state.
func (n *night) observe(ctx context.Context, o session.Observation) {
	switch o.Kind {
	case session.SawHookEvents:
		n.absorb(o.Events, o.Host)
	case session.SawProcess:
		n.append(n.processEvent(o))
		n.plan.RunsOn(o.Job, o.Attempt, o.Host)
	case session.SawMissingTool:
		n.append(journal.Event{Type: journal.ToolUnavailable, Job: o.Job, Attempt: o.Attempt, Tool: o.Tool, Host: o.Host})
		n.log.Warn().Str("job", o.Job).Str("tool", o.Tool).Msg("the model called a tool the session does not have")
	case session.SawServer:
		var srv *mcpconfig.Server
		if bs := n.b.Server(o.Server); bs != nil {
			srv = &bs.MCP
		}
		status := o.Status
		if status == session.ServerNotConnected {
			// The model met "is not connected": Claude Code lost the
			// server, as when it failed to connect at start.
			status = session.ServerFailed
		}
		n.checker.RecordClientStatus(o.Server, srv, string(status), initReason(o.Server, o.Status, o.Job))
		n.absorbServerEvents()
		n.log.Warn().Str("server", o.Server).Str("job", o.Job).Str("status", string(o.Status)).Msg("session could not use a server")
	case session.SawUnusable:
		job := n.b.Job(o.Job)
		if job == nil || job.OnUnhealthy == jobs.Run {
			n.log.Warn().Str("server", o.Server).Str("job", o.Job).Msg("the job runs without a server, by its on_unhealthy: run")
			return
		}
		if !n.plan.Runs(o.Job, o.Attempt) {
			return // that attempt has ended
		}
		n.log.Warn().Str("server", o.Server).Str("job", o.Job).Str("why", o.Why).Msg("stopping the attempt: it cannot use a server it needs")
		n.exec.Abandon(ctx, o.Job, o.Attempt, fmt.Sprintf("server %s could not be used (%s)", o.Server, o.Why))
	}
}

// initReason says, in words, what a session reported of a server.
func initReason(server string, status session.ServerStatus, job string) string {
	if status == session.ServerNotConnected {
		return fmt.Sprintf("Claude Code said MCP server %q is not connected during job %s", server, job)
	}
	return fmt.Sprintf("Claude Code reported MCP server %q %s when job %s started", server, status, job)
}

// processEvent is the journal line of a session's process group: on a
// worker's host it carries the host and no start id, so that no other
// host ever kills a process by that number.
func (n *night) processEvent(o session.Observation) journal.Event {
	if o.Host == "" {
		return sessionProcessEvent(o.Job, o.Attempt, o.PGID)
	}
	return journal.Event{Type: journal.SessionProcess, Job: o.Job, Attempt: o.Attempt, PID: o.PGID, Host: o.Host}
}
