package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/session"
)

// Executor runs a night's attempts on the cluster's workers: it enqueues
// each for them, asks them to abandon or stop one, and brings what they
// report (observations, then each attempt's end, once) to the night's
// reports channel. It is the night's executor on a cluster, as the local
// one is on one host; the plan, the journal and the decisions stay the
// night's.
type Executor struct {
	coord   *Coordinator
	batch   *jobs.Batch
	reports chan<- session.Report
	// log is the night's logger (a pointer: the night points it at its
	// log file once the run is known).
	log *zerolog.Logger

	mu sync.Mutex
	// running are the attempts enqueued or adopted whose end has not
	// been delivered yet, by job (mu).
	running map[string]int
	// lastHost is the host each job's last attempt ended on: a retry
	// that resumes its Claude session must run there (mu).
	lastHost map[string]string
	// capacity is the live workers' max_parallel summed, read at most
	// once a second (capAt); only the night's loop asks.
	capacity int
	capAt    time.Time

	stopPump func()
	pumped   chan struct{}

	// The shared journal's lines the night wrote and the table does not
	// have yet (Mirror), in order, on host (jmu): they go with the next
	// attempt's enqueue, in its statement, or after holdFor at the latest.
	jmu       sync.Mutex
	held      []journal.Event
	heldHost  string
	heldTimer *time.Timer
	heldErr   error // the last flush failed: the next line flushes at once
	closed    bool
}

// holdFor is how long a line of the shared journal may wait for the next
// enqueue to carry it; the file has it already.
const holdFor = 250 * time.Millisecond

// NewExecutor is the executor of run on db's batch b, reporting to
// reports. Start it (Start) once the attempts it adopts are known.
func NewExecutor(db *clusterdb.DB, b *jobs.Batch, run string, reports chan<- session.Report, log *zerolog.Logger) (*Executor, error) {
	coord, err := NewCoordinator(db, run)
	if err != nil {
		return nil, err
	}
	return &Executor{coord: coord, batch: b, reports: reports, log: log,
		running: map[string]int{}, lastHost: map[string]string{}}, nil
}

// RanOn tells the executor that job's last attempt ended on host (from a
// resumed journal).
func (e *Executor) RanOn(job, host string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastHost[job] = host
}

// Adopt takes back attempt of job, which a dead coordinator left to the
// workers: its state ("queued", "running", "ended"), or "" when it was
// never enqueued (the attempt is not adopted). One that ended meanwhile
// is reported by the pump like any other end.
func (e *Executor) Adopt(ctx context.Context, job string, attempt int) (string, error) {
	state, err := e.coord.State(ctx, job, attempt)
	if err != nil || state == "" {
		return "", err
	}
	e.mu.Lock()
	e.running[job] = attempt
	e.mu.Unlock()
	return state, nil
}

// Start starts bringing the workers' reports to the night, from what
// they report from now on (a resumed night's journal has what the dead
// coordinator took before) and every end not yet delivered. The pump
// outlives the night's ctx, so that the ends of a stopping night still
// come; Close ends it.
func (e *Executor) Start(ctx context.Context) error {
	if err := e.coord.SkipObservations(ctx); err != nil {
		return err
	}
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.stopPump, e.pumped = stop, make(chan struct{})
	go func() { defer close(e.pumped); e.pump(pctx) }()
	return nil
}

// Close stops the pump, waits for it, and writes the lines of the shared
// journal still held.
func (e *Executor) Close() {
	if e.stopPump != nil {
		e.stopPump()
		<-e.pumped
	}
	e.jmu.Lock()
	defer e.jmu.Unlock()
	e.closed = true
	if err := e.flushLocked(); err != nil {
		e.log.Error().Err(err).Msg("the shared journal lacks the night's last lines; the next `nightwatch run` on this host adds them from its journal file")
	}
}

// Mirror is the night's journal's mirror on a cluster: it adds ev, written
// on host, to the shared journal. The line waits (holdFor at most) for the
// next attempt's enqueue, which writes it in its own statement: a night
// writes its lines to the table without a statement of their own. An
// error is the last flush's, when this line could not be written either:
// the night then starts nothing more, as when the line itself fails.
func (e *Executor) Mirror(host string, ev journal.Event) error {
	e.jmu.Lock()
	defer e.jmu.Unlock()
	e.held = append(e.held, ev)
	e.heldHost = host
	if e.heldErr != nil || e.closed {
		return e.flushLocked()
	}
	if e.heldTimer == nil {
		e.heldTimer = time.AfterFunc(holdFor, func() {
			e.jmu.Lock()
			defer e.jmu.Unlock()
			e.heldTimer = nil
			e.heldErr = e.flushLocked()
		})
	}
	return nil
}

// flushLocked writes the held lines in one statement (jmu held).
func (e *Executor) flushLocked() error {
	if len(e.held) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := e.coord.DB.AppendJournalMany(ctx, e.heldHost, e.held); err != nil {
		return err
	}
	e.held, e.heldErr = nil, nil
	return nil
}

// Launch enqueues attempt a for the workers, after starting (the night's
// journal) agreed. A retry that resumes a Claude session runs on the host
// that has the session, or, with that host gone, starts a fresh session
// anywhere the job may run.
func (e *Executor) Launch(ctx context.Context, a session.Attempt, starting func(session.Starting) bool) (bool, error) {
	job := e.batch.Job(a.Job)
	if job == nil {
		return false, fmt.Errorf("the batch has no job %q", a.Job)
	}
	hosts := job.Hosts
	if a.Resume != "" {
		e.mu.Lock()
		h := e.lastHost[a.Job]
		e.mu.Unlock()
		if h != "" && e.coord.Live(ctx, h) {
			hosts = []string{h}
		} else {
			a.Resume, a.ResumeWhy = "", ""
			e.log.Info().Str("job", a.Job).Str("host", h).Msg("the retry starts a fresh session: the host of the last one is gone")
		}
	}
	if !starting(session.Starting{Resume: a.Resume, Hosts: hosts}) {
		return false, nil
	}
	e.mu.Lock()
	e.running[a.Job] = a.Attempt
	e.mu.Unlock()
	// River keeps (and River UI shows) the args: no outside text unredacted.
	args := AttemptArgs{Job: a.Job, Attempt: a.Attempt, Feedback: redact.String(a.Feedback), Resume: a.Resume, ResumeWhy: a.ResumeWhy}
	args.Tools, args.AllowRepeat = e.settingsOf(job)
	// The held lines of the shared journal, the attempt's job-started
	// among them, go in the enqueue's statement.
	e.jmu.Lock()
	journaled, err := e.coord.EnqueueJournaled(ctx, args, hosts, e.heldHost, e.held)
	if journaled {
		e.held, e.heldErr = nil, nil
	} else if err == nil {
		err = e.flushLocked()
	}
	e.jmu.Unlock()
	if err != nil {
		e.mu.Lock()
		delete(e.running, a.Job)
		e.mu.Unlock()
		return false, fmt.Errorf("cannot enqueue the attempt: %w", err)
	}
	return true, nil
}

// Abandon asks the worker to stop attempt of job early, for reason; its
// end comes back as any other (KilledAbandoned).
func (e *Executor) Abandon(ctx context.Context, job string, attempt int, reason string) {
	if err := e.coord.Abandon(context.WithoutCancel(ctx), job, attempt, reason); err != nil {
		e.log.Error().Err(err).Str("job", job).Msg("cannot ask the worker to stop the attempt")
	}
}

// stopPatience is how long a stopping night waits for the ends of the
// attempts it asked the workers to stop; one whose worker does not answer
// is adopted by the next coordinator.
const stopPatience = 30 * time.Second

// StopAll asks the workers to stop every attempt that has not ended (they
// end KilledStopped, not counted; one that ended first reports its own
// end) and says how long their ends are worth waiting for.
func (e *Executor) StopAll(ctx context.Context) time.Duration {
	e.mu.Lock()
	running := make(map[string]int, len(e.running))
	for job, attempt := range e.running {
		running[job] = attempt
	}
	e.mu.Unlock()
	for job, attempt := range running {
		if err := e.coord.Abandon(context.WithoutCancel(ctx), job, attempt, StopReason); err != nil {
			e.log.Error().Err(err).Str("job", job).Msg("cannot ask the worker to stop the attempt")
		}
	}
	return stopPatience
}

// Capacity is how many attempts may run at once: what the live workers
// take together.
func (e *Executor) Capacity(ctx context.Context) int {
	if now := time.Now(); e.capAt.IsZero() || now.Sub(e.capAt) >= time.Second {
		e.capacity, e.capAt = e.coord.Capacity(ctx), now
	}
	return e.capacity
}

// pump brings what the workers report to the night, in order, until ctx
// ends. It is the only reader of the coordinator's cursor.
func (e *Executor) pump(ctx context.Context) {
	waiter, err := e.coord.Listen(ctx)
	if err != nil {
		e.log.Warn().Err(err).Msg("the workers' reports are polled, not pushed")
	}
	defer waiter.Close()
	failing := false
	for {
		// A notification wakes the pump for the workers' reports alone;
		// the look for crashed attempts runs every pollEvery.
		read := e.coord.Reports
		if e.coord.CheckDue() {
			read = e.coord.Poll
		}
		seen, ends, err := read(ctx)
		if err != nil && ctx.Err() == nil {
			if !failing {
				e.log.Error().Err(err).Msg("cannot read the workers' reports; retrying")
			}
			failing = true
		} else {
			failing = false
		}
		for _, o := range seen {
			if !e.deliver(ctx, session.Report{Seen: o}) {
				return
			}
		}
		for _, end := range ends {
			e.mu.Lock()
			if end.Host != "" {
				e.lastHost[end.Job] = end.Host
			}
			if e.running[end.Job] == end.Attempt {
				delete(e.running, end.Job)
			}
			e.mu.Unlock()
			if e.coord.SharedEffects(end.Job, end.Attempt) {
				e.mergeEffects(ctx, end.Job)
			}
			if !e.deliver(ctx, session.Report{Ended: &end}) {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		waiter.Wait(ctx, pollEvery)
	}
}

func (e *Executor) deliver(ctx context.Context, r session.Report) bool {
	select {
	case e.reports <- r:
		return true
	case <-ctx.Done():
		return false
	}
}

// pollEvery bounds how late a worker's report reaches the night when its
// notification is lost.
const pollEvery = 500 * time.Millisecond
