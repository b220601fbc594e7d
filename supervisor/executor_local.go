package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/session"
)

// executor runs the night's attempts: on this host (localExecutor) or on a
// cluster's workers (queue.Executor). It is all the loop knows of where an
// attempt runs. Every attempt it started comes back on the night's
// reports channel exactly once, as its end, after what its session saw.
// Only the loop's goroutine calls it.
type executor interface {
	// Launch starts attempt a. Just before it starts, it calls starting
	// with how it will run (the journal's job-started line); when starting
	// says no, the attempt does not start (started false, no error). An
	// error is an attempt that could not start, in words for the journal;
	// neither comes back as an end.
	Launch(ctx context.Context, a session.Attempt, starting func(session.Starting) bool) (started bool, err error)
	// Abandon stops attempt of job early, for reason: it ends
	// KilledAbandoned. An attempt that already ended is left alone.
	Abandon(ctx context.Context, job string, attempt int, reason string)
	// StopAll stops every running attempt (KilledStopped, unless it ended
	// first) and says how long their ends are worth waiting for; 0: until
	// every one has come.
	StopAll(ctx context.Context) (patience time.Duration)
	// Capacity is how many attempts may run at once.
	Capacity(ctx context.Context) int
}

// localExecutor runs attempts on this host: each one's session in a
// goroutine of its own, under a context the executor can cancel.
type localExecutor struct {
	b       *jobs.Batch
	runID   string
	binary  string
	env     []string
	reports chan<- session.Report

	// served is the hook the night serves (hook/served), nil when the
	// sessions get the command hook (startServedHook). startServed makes
	// it, at the first launch: a night that starts no session asks the
	// agent nothing (its version) and listens on nothing.
	served      served.Lazy
	startServed func() *served.Server
	// logServed logs the registration of a session's served hook.
	logServed func(job string, attempt int, key string)

	mu      sync.Mutex
	running map[string]localAttempt // by job
}

type localAttempt struct {
	attempt int
	cancel  context.CancelCauseFunc
}

func newLocalExecutor(b *jobs.Batch, runID, binary string, env []string, reports chan<- session.Report) *localExecutor {
	return &localExecutor{b: b, runID: runID, binary: binary, env: env, reports: reports, running: map[string]localAttempt{}}
}

// Launch runs the attempt's session, which prepares its files and opens
// its logs while starting writes the job-started line and makes it
// durable (an fsync: the disk's latency, the files' creation meanwhile);
// the agent is spawned only once starting said yes (spec.Ready). What the
// session sees and its end go to the reports channel, in order. Files
// that cannot be prepared are that attempt's failure, reported as its end
// (the journal has its start by then), and nothing is spawned.
func (e *localExecutor) Launch(ctx context.Context, a session.Attempt, starting func(session.Starting) bool) (bool, error) {
	job := e.b.Job(a.Job)
	if job == nil {
		return false, fmt.Errorf("the batch has no job %q", a.Job)
	}
	spec := session.Spec{Batch: e.b, Job: job, RunID: e.runID, Attempt: a.Attempt,
		Binary: e.binary, Env: e.env, Feedback: a.Feedback, Resume: a.Resume, ResumeWhy: a.ResumeWhy}
	folder, err := session.Folder(spec)
	if err != nil {
		return false, fmt.Errorf("cannot prepare the session: %w", err)
	}
	// The served hook's key is in the session's settings, so it is made
	// first; the session it serves is bound once Prepare knows its files,
	// before the agent is spawned, and dropped when the session has ended.
	hook, err := session.ServeHook(&spec, e.served.Get(e.startServed))
	if err != nil {
		return false, fmt.Errorf("cannot prepare the session: %w", err)
	}
	if hook != nil && e.logServed != nil {
		e.logServed(a.Job, a.Attempt, hook.Key())
	}
	prepare := func() (session.Files, error) {
		files, err := session.Prepare(spec)
		if err != nil {
			return files, err
		}
		return files, hook.Bind(spec, files)
	}
	decided := make(chan struct{})
	var allowed bool
	spec.Ready = func() bool {
		<-decided
		return allowed
	}
	sctx, cancel := context.WithCancelCause(ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		var out session.Outcome
		if files, err := prepare(); err != nil {
			// What was written before the failure goes: the MCP config
			// and the secrets file hold resolved secrets.
			for _, name := range []string{statedir.AttemptMCPConfig, statedir.AttemptSecrets} {
				_ = os.Remove(filepath.Join(folder, name))
			}
			now := time.Now()
			out = session.Outcome{Status: session.Failed, ExitCode: -1, Started: now, Ended: now,
				Reason: "cannot prepare the session: " + err.Error()}
		} else {
			obs := session.ObserverFunc(func(o session.Observation) { e.reports <- session.Report{Seen: o} })
			out = session.Run(sctx, spec, files, obs)
		}
		hook.Release()
		<-decided
		if !allowed {
			cancel(nil)
			return
		}
		e.mu.Lock()
		delete(e.running, a.Job)
		e.mu.Unlock()
		cancel(nil)
		e.reports <- session.Report{Ended: &session.Ended{Job: a.Job, Attempt: a.Attempt, Outcome: out}}
	}()
	if !starting(session.Starting{Folder: folder, Resume: a.Resume}) {
		close(decided)
		<-ended // spawned nothing; gone before Launch returns
		return false, nil
	}
	e.mu.Lock()
	e.running[a.Job] = localAttempt{attempt: a.Attempt, cancel: cancel}
	e.mu.Unlock()
	allowed = true
	close(decided)
	return true, nil
}

func (e *localExecutor) Abandon(_ context.Context, job string, attempt int, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.running[job]; ok && r.attempt == attempt {
		r.cancel(session.Abandon{Reason: reason})
	}
}

// StopAll cancels every session: each is killed and ends within its
// grace, so every end comes.
func (e *localExecutor) StopAll(context.Context) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.running {
		r.cancel(nil)
	}
	return 0
}

func (e *localExecutor) Capacity(context.Context) int { return max(e.b.MaxParallel, 1) }
