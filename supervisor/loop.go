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
	wake := true
	for {
		if ctx.Err() != nil {
			// Stopped while busy: start nothing more.
			n.stop()
			return ErrStopped
		}
		if n.cluster != nil {
			n.plan.rules.maxParallel = n.cluster.maxParallel(ctx, n.now())
		}
		if wake {
			// What the hooks saw since the last look reaches the journal
			// before the plan decides on it.
			n.absorbServerEvents()
			finished := n.do(ctx, n.plan.step(n.now(), evWake{}))
			n.reportProgress()
			if finished {
				return nil
			}
			if n.journalErr != nil {
				n.drain(ctx)
				return fmt.Errorf("%w: %v", ErrJournal, n.journalErr)
			}
		}
		wake = true
		select {
		case m := <-n.inbox:
			if m.ended != nil {
				if n.cluster != nil && m.ended.host != "" {
					n.cluster.lastHost[m.ended.job] = m.ended.host
				}
				if cancel := n.cancels[m.ended.job]; cancel != nil {
					cancel(nil)
					delete(n.cancels, m.ended.job)
				}
				n.do(ctx, n.plan.step(n.now(), *m.ended))
				break
			}
			n.observe(ctx, m.seen)
			wake = false // an observation changes no job's phase
		case <-ticker.C:
			n.do(ctx, n.plan.step(n.now(), evTick{}))
		case <-ctx.Done():
			n.stop()
			return ErrStopped
		}
	}
}

// do carries out actions in order; an action may answer with an event
// whose actions are done next. It reports whether the night is over.
func (n *night) do(ctx context.Context, acts []action) (finished bool) {
	for len(acts) > 0 {
		a := acts[0]
		acts = acts[1:]
		if why := n.startsNothing(); why != "" {
			// Stopping, or the journal cannot be written: record what
			// ends, start nothing.
			switch a := a.(type) {
			case actRecord:
				n.record(a)
			case actLaunch:
				acts = append(n.plan.step(n.now(), notStarted(a, why)), acts...)
			}
			continue
		}
		switch a := a.(type) {
		case actRecord:
			n.record(a)
		case actCheckHealth:
			down, servers := n.unhealthyServers(ctx, n.b.Job(a.job))
			acts = append(n.plan.step(n.now(), evHealth{job: a.job, down: down, servers: servers}), acts...)
		case actLaunch:
			if ev, failed := n.launch(ctx, a); failed {
				acts = append(n.plan.step(n.now(), ev), acts...)
			}
		case actCheckAPI:
			ok, why := n.checkAPI(ctx)
			if !ok {
				n.log.Info().Str("why", why).Msg("the API does not answer yet")
			}
			acts = append(n.plan.step(n.now(), evAPI{ok: ok, why: why}), acts...)
		case actNotifyNow:
			n.notifyNow(ctx, a.reason)
		case actMaintain:
			n.maintain(ctx)
		case actFinish:
			finished = true
		}
	}
	return finished
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
func notStarted(a actLaunch, why string) evAttemptEnded {
	return evAttemptEnded{job: a.job, attempt: a.attempt, unstarted: true,
		outcome: session.Outcome{Status: session.Failed, KilledBy: "stopped", Reason: "not started: " + why}}
}

// drain lets the running sessions end after the journal failed: their ends
// are recorded (into the journal's lost file) and nothing new starts.
func (n *night) drain(ctx context.Context) {
	for n.plan.running > 0 {
		m := <-n.inbox
		switch {
		case m.ended != nil:
			n.do(ctx, n.plan.step(n.now(), *m.ended))
		case m.seen.pgid > 0:
			n.append(n.processEvent(m.seen))
		}
	}
}

// stop waits for every running session: they see the same ctx and are
// being killed. Their observations are taken meanwhile (only the process
// groups are journaled), so that no session goroutine is left blocked on a
// send.
func (n *night) stop() {
	n.stopping = true
	if n.cluster != nil {
		n.stopRemote()
		return
	}
	for n.plan.running > 0 {
		n.takeWhileStopping(<-n.inbox)
	}
}

// takeWhileStopping applies one message that came while the night stops:
// an end goes through do like any other, so that an attempt that ended
// before it could be stopped is journaled (once), and whatever the plan
// would start instead does not start.
func (n *night) takeWhileStopping(m message) {
	switch {
	case m.ended != nil:
		if m.ended.outcome.KilledBy == "stopped" {
			n.log.Warn().Str("job", m.ended.job).Msg("stopped with the night")
		}
		n.do(context.Background(), n.plan.step(n.now(), *m.ended))
	case m.seen.pgid > 0:
		n.append(n.processEvent(m.seen))
	}
}

func (n *night) record(a actRecord) {
	n.append(a.ev)
	var e *zerolog.Event
	switch a.level {
	case logError:
		e = n.log.Error()
	case logWarn:
		e = n.log.Warn()
	default:
		e = n.log.Info()
	}
	e = e.Str("job", a.ev.Job)
	if a.ev.Attempt > 0 {
		e = e.Int("attempt", a.ev.Attempt)
	}
	if a.ev.Reason != "" {
		e = e.Str("reason", a.ev.Reason)
	}
	if r := a.ev.Result; r != nil && a.ev.Status == journal.Done {
		e = e.Int("turns", r.NumTurns).Float64("cost", r.CostUSD)
	}
	e.Msg(a.msg)
}

func (n *night) reportProgress() {
	if n.opts.Progress != nil {
		n.opts.Progress(n.plan.progress(n.now()))
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

// launch prepares and starts one attempt; its end comes back on
// n.inbox. An attempt that cannot be prepared ends at once: failed is
// true and ev is its end, for the plan.
func (n *night) launch(ctx context.Context, a actLaunch) (ev evAttemptEnded, failed bool) {
	if n.cluster != nil {
		return n.launchRemote(ctx, a)
	}
	job := n.b.Job(a.job)
	spec := session.Spec{Batch: n.b, Job: job, RunID: n.runID, Attempt: a.attempt,
		Binary: n.opts.Binary, Env: n.opts.Env, Feedback: a.feedback, Resume: a.resume, ResumeWhy: a.resumeWhy}
	files, err := session.Prepare(spec)
	if err != nil {
		return evAttemptEnded{job: a.job, attempt: a.attempt, unstarted: true,
			outcome: session.Outcome{Status: session.Failed, Reason: "cannot prepare the session: " + err.Error()}}, true
	}
	n.append(journal.Event{Type: journal.JobStarted, Job: a.job, Attempt: a.attempt, Folder: files.Dir,
		Allowed: job.Allowed(), Resume: a.resume})
	if n.journalErr != nil {
		// An attempt the journal does not know of must not run.
		return notStarted(a, n.startsNothing()), true
	}
	n.log.Info().Str("job", a.job).Int("attempt", a.attempt).Strs("allowed", job.Allowed()).Msg("started")
	obs := &sessionObserver{to: n.inbox, job: a.job, attempt: a.attempt}
	// The loop stops this attempt early (Abandon) when its session cannot
	// use a server the job needs.
	sctx, cancel := context.WithCancelCause(ctx)
	if n.cancels == nil {
		n.cancels = map[string]context.CancelCauseFunc{}
	}
	n.cancels[a.job] = cancel
	go func() {
		out := session.Run(sctx, spec, files, obs)
		n.inbox <- message{ended: &evAttemptEnded{job: a.job, attempt: a.attempt, outcome: out}}
	}()
	return evAttemptEnded{}, false
}

// inboxSize bounds what sessions may have told the loop before it reads.
const inboxSize = 64

// message is what a session's goroutine sends the loop: the attempt's
// end, or one observation.
type message struct {
	ended *evAttemptEnded
	seen  observation
}

// observation is one thing a running session's stream said, sent to the
// loop: exactly one of its parts is set.
type observation struct {
	job     string
	attempt int
	// server could not be used: status is failed or needs-auth.
	server, status string
	tool           string // the model called a tool the session lacks
	pgid           int    // the session's process group started
	// unusable is a server of the job the session cannot use, and why.
	unusable, why string
	// host is the cluster worker's host that saw it ("" on one host).
	host string
	// events are what the hooks of that host wrote to its events file.
	events []healthcheck.Event
}

// observe records what a session saw. A server Claude Code could not
// connect to is down for every session, not only this one: the Checker
// records it, which announces it to the events file, and from there it
// reaches the journal like every other change of a server's state.
func (n *night) observe(ctx context.Context, o observation) {
	switch {
	case len(o.events) > 0:
		n.absorb(o.events, o.host)
	case o.pgid > 0:
		n.append(n.processEvent(o))
	case o.tool != "":
		n.append(journal.Event{Type: journal.ToolUnavailable, Job: o.job, Attempt: o.attempt, Tool: o.tool, Host: o.host})
		n.log.Warn().Str("job", o.job).Str("tool", o.tool).Msg("the model called a tool the session does not have")
	case o.server != "":
		var srv *mcpconfig.Server
		if bs := n.b.Server(o.server); bs != nil {
			srv = &bs.MCP
		}
		status := o.status
		if status == session.StatusNotConnected {
			// The model met "is not connected": Claude Code lost the
			// server, as when it failed to connect at start.
			status = "failed"
		}
		n.checker.RecordClientStatus(o.server, srv, status, initReason(o.server, o.status, o.job))
		n.absorbServerEvents()
		n.log.Warn().Str("server", o.server).Str("job", o.job).Str("status", o.status).Msg("session could not use a server")
	case o.unusable != "":
		job := n.b.Job(o.job)
		if job == nil || job.OnUnhealthy == jobs.Run {
			n.log.Warn().Str("server", o.unusable).Str("job", o.job).Msg("the job runs without a server, by its on_unhealthy: run")
			return
		}
		if cancel := n.cancels[o.job]; cancel != nil {
			reason := fmt.Sprintf("server %s could not be used (%s)", o.unusable, o.why)
			n.log.Warn().Str("server", o.unusable).Str("job", o.job).Str("why", o.why).Msg("stopping the attempt: it cannot use a server it needs")
			cancel(session.Abandon{Reason: reason})
		}
	}
}

// initReason says, in words, what a session reported of a server.
func initReason(server, status, job string) string {
	if status == session.StatusNotConnected {
		return fmt.Sprintf("Claude Code said MCP server %q is not connected during job %s", server, job)
	}
	return fmt.Sprintf("Claude Code reported MCP server %q %s when job %s started", server, status, job)
}

// sessionObserver sends what a session's stream says to the loop, as it
// says it. It runs in the session's goroutine and touches no state; the
// loop's one inbox keeps the journal in the order things happened (the
// session's process group before its end).
type sessionObserver struct {
	to      chan<- message
	job     string
	attempt int
}

func (o *sessionObserver) ServerStatus(server, status string) {
	if status != "failed" && status != "needs-auth" && status != session.StatusNotConnected {
		return // connected, pending: nothing the night acts on
	}
	o.to <- message{seen: observation{job: o.job, attempt: o.attempt, server: server, status: status}}
}

func (o *sessionObserver) ToolUnavailable(tool string) {
	o.to <- message{seen: observation{job: o.job, attempt: o.attempt, tool: tool}}
}

// ServerUnusable tells the loop the session cannot use one of its job's
// servers, so that it stops the attempt.
func (o *sessionObserver) ServerUnusable(server, why string) {
	o.to <- message{seen: observation{job: o.job, attempt: o.attempt, unusable: server, why: why}}
}

// SessionStarted records the session's process group in the journal, for
// a supervisor that restarts after this one is killed.
func (o *sessionObserver) SessionStarted(pgid int) {
	o.to <- message{seen: observation{job: o.job, attempt: o.attempt, pgid: pgid}}
}
