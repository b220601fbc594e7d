package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/cluster/healthsync"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/session"
)

// HeartbeatEvery is how often a worker says it is alive.
const HeartbeatEvery = clusterdb.HeartbeatInterval

// How long a worker may go unheard before the coordinator takes it for
// dead and ends its attempts as crashes (workerDead):
//
//   - DeadAfter when its presence connection is gone too: its process
//     died (Postgres drops a dead process's connections at once);
//   - SilentAfter when the connection is still open (the worker lives but
//     cannot heartbeat, or its host vanished without closing it), and
//     after any gap in the coordinator's own reads of the database, from
//     the end of that gap, whatever the connection says.
//
// A worker that could not heartbeat for FenceAfter stops its own
// sessions. FenceAfter is long enough that a database restart or a short
// outage (everyone loses the database; the coordinator starts nothing
// meanwhile) stops no work that is going fine, and SilentAfter exceeds it,
// so a worker cut off alone has stopped its sessions before the
// coordinator runs their jobs elsewhere: an attempt never runs on two
// hosts at once.
const (
	DeadAfter   = 5 * HeartbeatEvery
	FenceAfter  = 15 * HeartbeatEvery
	SilentAfter = FenceAfter + DeadAfter
)

// fetchCooldown is the least time between two of River's fetches of a
// queue on a worker: River's minimum. The coordinator's insert
// notification (insertNotifyEvery) wakes the worker, which fetches at once
// unless it fetched less than this ago; River's default (100 ms) made every
// attempt wait for it. A night's attempts are few and long: a fetch per
// attempt is nothing to save.
const fetchCooldown = time.Millisecond

// fetchPollEvery is how often a worker's queues look for attempts without
// being told: only a lost notification waits for it.
const fetchPollEvery = time.Second

// Worker runs a batch's attempts on this host.
type Worker struct {
	DB    *clusterdb.DB
	Batch *jobs.Batch
	// Binary is the nightwatch executable whose hook every session gets;
	// Env the worker's environment (the sessions' base).
	Binary string
	Env    []string
	// Host and Labels name this worker; a job pinned by hosts: runs only
	// on a worker carrying one of its labels (the host name is one).
	Host   string
	Labels []string
	// MaxParallel bounds the attempts this worker runs at once.
	MaxParallel int
	// PeersSocket is this host's claims socket for the sessions' hooks
	// ("" without one).
	PeersSocket string
	Log         zerolog.Logger

	// served is the hook this worker serves to its sessions (hook/served),
	// nil when they get the command hook; made at the first attempt (a
	// worker that runs nothing asks the agent nothing), closed at the
	// worker's end.
	served served.Lazy

	id      string
	lastRun string // the run of the newest attempt started (mu)
	// tail reads the host's events file; unsentEvents are the lines read
	// that did not reach the database yet (tailMu).
	tail         healthcheck.EventTail
	unsentEvents []healthcheck.Event
	tailMu       sync.Mutex
	slots        chan struct{}
	mu           sync.Mutex
	running      map[attemptKey]context.CancelCauseFunc
	// unseen are what each running attempt's session saw that did not
	// reach the database (mu): they go with the attempt's end, in order.
	unseen map[attemptKey][]session.Observation
	// process is each running attempt's session process not yet written
	// (mu): it goes with the attempt's next write (processWait at most).
	process map[attemptKey]*processReport
	// effectsSent is, by running attempt, the number of its host's
	// ledger's last call of it the database has (mu).
	effectsSent map[attemptKey]int
	// delivery bounds the spool's deliveries: it ends a while after the
	// worker's context, so a stopping worker still delivers what it can.
	delivery context.Context
	db       dbOutage
	// testStartRiver replaces River's Start in a test (nil: River's own).
	testStartRiver func(context.Context, *river.Client[pgx.Tx]) error
}

type attemptKey struct {
	run, job string
	attempt  int
}

// ID is the worker's id in nightwatch_workers (set by Run).
func (w *Worker) ID() string { return w.id }

// Run works until ctx ends: it registers and heartbeats, ends the sessions
// a dead worker of this host left behind, takes attempts from the batch's
// queues and runs them. On the way out the running sessions are stopped
// (their ends say "stopped", so the night runs them again, uncounted) and
// the worker is marked stopped.
func (w *Worker) Run(ctx context.Context) error {
	if w.MaxParallel < 1 {
		w.MaxParallel = 1
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	w.id = fmt.Sprintf("%s-%d-%s", w.Host, os.Getpid(), hex.EncodeToString(rnd[:]))
	w.slots = make(chan struct{}, w.MaxParallel)
	w.running = map[attemptKey]context.CancelCauseFunc{}
	w.unseen = map[attemptKey][]session.Observation{}
	w.process = map[attemptKey]*processReport{}
	w.effectsSent = map[attemptKey]int{}
	w.db.log = w.Log
	delivery, stopDelivery := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDelivery()
	w.delivery = delivery
	w.tail = healthcheck.EventTail{Path: statedir.Events(w.Batch.StateDir)}
	w.tail.SkipToEnd()
	labels := append([]string{w.Host}, w.Labels...)
	me := clusterdb.Worker{ID: w.id, Host: w.Host, Labels: labels, PID: os.Getpid(), MaxParallel: w.MaxParallel}
	presence := w.DB.Presence(me)
	defer presence.Close()
	// A database that does not answer while the worker starts is waited
	// for (retryStart), as one lost after the start is.
	if err := retryStart(ctx, w.Log, "register", presence.Beat); err != nil {
		return err
	}
	w.killLeftovers(ctx)

	var client *river.Client[pgx.Tx]
	err := retryStart(ctx, w.Log, "start River", func(ctx context.Context) error {
		c, err := w.riverClient(labels)
		if err != nil {
			return err
		}
		if err := w.startRiver(ctx, c); err != nil {
			return fmt.Errorf("start River: %w", err)
		}
		client = c
		return nil
	})
	if err != nil {
		return err
	}
	w.Log.Info().Str("worker", w.id).Strs("labels", labels).Int("max_parallel", w.MaxParallel).Msg("worker started")

	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); w.heartbeat(ctx, presence) }()
	go func() { defer wg.Done(); w.forwardEvents(ctx) }()
	go func() { defer wg.Done(); w.watchAbandons(ctx) }()
	go func() { defer wg.Done(); w.deliverSpool(ctx) }()
	<-ctx.Done()

	// Stop: the sessions see their contexts cancelled (River cancels the
	// work contexts) and end within their grace; their ends are spooled
	// and delivered while the database answers, for spoolGrace at most;
	// what is left waits in the spool for the next worker of this host.
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spoolDeadline := time.AfterFunc(spoolGrace, stopDelivery)
	defer spoolDeadline.Stop()
	w.stopAll(nil)
	err = client.StopAndCancel(stopCtx)
	wg.Wait()
	w.served.Close() // after the worker's last session
	w.deliverSpooled(delivery)
	if serr := w.DB.StopWorker(stopCtx, w.id); serr != nil && err == nil {
		err = serr
	}
	w.Log.Info().Str("worker", w.id).Msg("worker stopped")
	return err
}

// riverClient is a new River client of the worker's queues: a start that
// failed is tried again with a new one.
func (w *Worker) riverClient(labels []string) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely[AttemptArgs](workers, &attemptWorker{w: w}); err != nil {
		return nil, err
	}
	queues := map[string]river.QueueConfig{}
	for _, q := range Queues(w.Batch, labels) {
		queues[q] = river.QueueConfig{MaxWorkers: w.MaxParallel}
	}
	client, err := river.NewClient(riverpgxv5.New(w.DB.Pool), &river.Config{
		ID:                   w.id,
		Queues:               queues,
		Workers:              workers,
		JobTimeout:           -1, // session.Run enforces the job's own timeouts
		RescueStuckJobsAfter: w.Batch.Cluster.RescueAfter,
		FetchPollInterval:    fetchPollEvery,
		FetchCooldown:        fetchCooldown,
		MaxAttempts:          1,
		Logger:               nil,
	})
	if err != nil {
		return nil, fmt.Errorf("start River: %w", err)
	}
	return client, nil
}

// startRiver starts a worker's River client, through the test's hook
// (testStartRiver) when it has one.
func (w *Worker) startRiver(ctx context.Context, c *river.Client[pgx.Tx]) error {
	if w.testStartRiver != nil {
		return w.testStartRiver(ctx, c)
	}
	return c.Start(ctx)
}

// heartbeat says the worker is alive every HeartbeatEvery, on its
// presence connection. A worker that could not for FenceAfter stops its
// sessions: unless the database was gone for everyone, the coordinator
// will take it for dead at SilentAfter and run their jobs elsewhere.
// Shorter losses stop nothing: the sessions run on, their ends wait in
// the spool, and the coordinator gives every worker SilentAfter after its
// own gap in which to be heard again.
func (w *Worker) heartbeat(ctx context.Context, presence *clusterdb.Presence) {
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hctx, cancel := context.WithTimeout(ctx, HeartbeatEvery)
		err := presence.Beat(hctx)
		cancel()
		if err == nil {
			w.db.ok()
			last = time.Now()
			continue
		}
		if ctx.Err() != nil {
			return
		}
		w.db.failed(err)
		if time.Since(last) >= FenceAfter {
			w.stopAll(session.Abandon{Reason: fmt.Sprintf("worker %s lost the cluster's database for %s: its attempts run elsewhere", w.id, time.Since(last).Round(time.Second))})
		}
	}
}

// watchAbandons stops the attempts the coordinator asked to abandon, and
// those it ended itself while this worker still ran them (it took the
// worker for dead): their jobs run elsewhere now.
func (w *Worker) watchAbandons(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rows, err := w.DB.Pool.Query(ctx, `SELECT run_id, job, attempt, COALESCE(abandon, ''), state = 'ended' FROM nightwatch_attempts
			WHERE batch = $1 AND worker_id = $2 AND (state = 'running' AND abandon IS NOT NULL OR state = 'ended' AND ended_by = 'coordinator')`,
			w.DB.Batch, w.id)
		if err != nil {
			continue
		}
		type ab struct {
			k      attemptKey
			reason string
			ended  bool
		}
		var abs []ab
		for rows.Next() {
			var a ab
			if rows.Scan(&a.k.run, &a.k.job, &a.k.attempt, &a.reason, &a.ended) == nil {
				abs = append(abs, a)
			}
		}
		rows.Close()
		for _, a := range abs {
			w.mu.Lock()
			cancel := w.running[a.k]
			w.mu.Unlock()
			if cancel == nil {
				continue
			}
			if a.ended {
				w.Log.Warn().Str("job", a.k.job).Int("attempt", a.k.attempt).Msg("the coordinator ended this attempt (it took this worker for dead): stopping its session")
				cancel(session.Abandon{Reason: fmt.Sprintf("worker %s: the coordinator ended the attempt while it ran here (it took the worker for dead)", w.id)})
			} else if a.reason == StopReason {
				cancel(nil) // stopped with the night: the attempt does not count
			} else {
				cancel(session.Abandon{Reason: a.reason})
			}
		}
	}
}

// forwardEvents sends what the hooks of this host's sessions wrote to its
// events file (a server's change of state, a blocked call) to the
// coordinator of the run they belong to, which journals them with this
// host's name: the morning report counts every host's outages.
func (w *Worker) forwardEvents(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			w.forwardNow() // what the last sessions wrote still goes
			return
		case <-t.C:
			w.forwardNow()
			w.shareEffects(ctx)
		}
	}
}

// forwardNow sends the events file's new lines. finish calls it before it
// writes an attempt's end, so the coordinator journals what the session's
// hooks saw before it hears that the attempt ended.
// Lines that could not be sent are sent with the next ones.
func (w *Worker) forwardNow() {
	w.tailMu.Lock()
	defer w.tailMu.Unlock()
	evs := append(w.unsentEvents, w.tail.Next()...)
	w.unsentEvents = nil
	if len(evs) == 0 {
		return
	}
	w.mu.Lock()
	run := w.lastRun
	w.mu.Unlock()
	if run == "" {
		return
	}
	// The same observation, written the same way, as a session's own
	// (observer.send): only its attempt is none, the host's hooks serve
	// every attempt of the host.
	o := session.Observation{Kind: session.SawHookEvents, Host: w.Host, Events: evs}
	if err := w.insertObservations(context.Background(), attemptKey{run: run}, []session.Observation{o}, true, nil); err != nil {
		w.db.failed(err)
		w.unsentEvents = evs
	}
}

// StopReason is the abandon request of a coordinator that stops: the
// attempt ends "stopped" and is not counted.
const StopReason = "stopped with the night"

func (w *Worker) stopAll(cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, cancel := range w.running {
		cancel(cause)
	}
}

// killLeftovers ends the sessions that workers of this host, now dead,
// recorded as running: on a platform without a parent-death signal they
// outlive their worker. The start id makes sure a reused pid is left alone.
func (w *Worker) killLeftovers(ctx context.Context) {
	rows, err := w.DB.Pool.Query(ctx, `SELECT a.job, a.pgid, a.start_id FROM nightwatch_attempts a
		JOIN nightwatch_workers k ON k.worker_id = a.worker_id
		WHERE a.batch = $1 AND a.host = $2 AND a.state = 'running' AND a.pgid IS NOT NULL AND a.start_id IS NOT NULL
		AND a.worker_id <> $3 AND (k.stopped_at IS NOT NULL OR now() - k.heartbeat_at > $4::interval)`,
		w.DB.Batch, w.Host, w.id, DeadAfter.String())
	if err != nil {
		w.Log.Warn().Err(err).Msg("cannot look for sessions a dead worker left")
		return
	}
	defer rows.Close()
	for rows.Next() {
		var job, startID string
		var pgid int
		if rows.Scan(&job, &pgid, &startID) != nil || pgid <= 0 {
			continue
		}
		if id := proc.StartID(pgid); id != "" && id == startID {
			if err := proc.KillGroupID(pgid); err == nil {
				w.Log.Warn().Str("job", job).Int("pgid", pgid).Msg("killed a session a dead worker left running")
			}
		}
	}
}

// attemptWorker is River's worker of AttemptArgs.
type attemptWorker struct {
	river.WorkerDefaults[AttemptArgs]
	w *Worker
}

// Timeout is River's bound of an attempt: past the job's own timeout
// (which session.Run enforces first) by a margin, and below rescue_after,
// which River requires; a job without a timeout River knows is never
// rescued.
func (aw *attemptWorker) Timeout(job *river.Job[AttemptArgs]) time.Duration {
	return RiverTimeout(aw.w.Batch, job.Args.Job)
}

// RiverTimeout is River's timeout of an attempt of job: its timeout plus
// half the way to rescue_after, at most a minute more.
func RiverTimeout(b *jobs.Batch, job string) time.Duration {
	rescue := b.Cluster.RescueAfter
	var own time.Duration
	if j := b.Job(job); j != nil {
		own = j.Timeout
	}
	if own <= 0 || own >= rescue {
		return rescue / 2
	}
	return own + min(time.Minute, (rescue-own)/2)
}

func (aw *attemptWorker) Work(ctx context.Context, job *river.Job[AttemptArgs]) error {
	w := aw.w
	select {
	case w.slots <- struct{}{}:
	default:
		// max_parallel of this host is taken: back to the queue, for
		// this worker later or another one now.
		return river.JobSnooze(250 * time.Millisecond)
	}
	defer func() { <-w.slots }()
	a := job.Args
	k := attemptKey{a.Run, a.Job, a.Attempt}

	// The claim refreshes the worker's heartbeat in the same statement:
	// an attempt is never judged by a heartbeat older than its start (a
	// worker just back from a database outage claims before it beats).
	var abandon *string
	err := w.DB.Pool.QueryRow(ctx, `WITH beat AS (UPDATE nightwatch_workers SET heartbeat_at = now() WHERE worker_id = $6)
		UPDATE nightwatch_attempts SET state = 'running', host = $5, worker_id = $6, started_at = now()
		WHERE batch = $1 AND run_id = $2 AND job = $3 AND attempt = $4 AND state = 'queued' RETURNING abandon`,
		w.DB.Batch, a.Run, a.Job, a.Attempt, w.Host, w.id).Scan(&abandon)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // ended already (abandoned, or taken for a crash): nothing to run
	}
	if err != nil {
		return fmt.Errorf("claim attempt %d of %s: %w", a.Attempt, a.Job, err)
	}
	if abandon != nil {
		return w.finish(k, session.Outcome{Status: session.Failed, KilledBy: session.KilledStopped, Reason: "not started: " + *abandon})
	}
	bj := w.Batch.Job(a.Job)
	if bj == nil {
		return w.finish(k, session.Outcome{Status: session.Failed, ExitCode: -1,
			Reason: fmt.Sprintf("host %s: its batch file %s has no job %q (every host needs the same batch)", w.Host, w.Batch.File, a.Job)})
	}
	spec := session.Spec{Batch: w.Batch, Job: bj, RunID: a.Run, Attempt: a.Attempt, Binary: w.Binary, Env: w.Env,
		Feedback: a.Feedback, Resume: a.Resume, ResumeWhy: a.ResumeWhy, PeersSocket: w.PeersSocket, DieWithParent: true}
	w.prepareEffects(ctx, a)
	hook, err := session.ServeHook(&spec, w.servedHook())
	if err == nil {
		defer hook.Release()
		var files session.Files
		if files, err = session.Prepare(spec); err == nil {
			err = hook.Bind(spec, files)
		}
		if err == nil {
			return w.runSession(ctx, k, a, spec, files)
		}
	}
	return w.finish(k, session.Outcome{Status: session.Failed, ExitCode: -1,
		Reason: fmt.Sprintf("host %s cannot prepare the session: %v", w.Host, err)})
}

// servedHook is the hook this worker serves, started at its first call
// (nil: the sessions keep the command hook, and the log says why).
func (w *Worker) servedHook() *served.Server {
	return w.served.Get(func() *served.Server {
		site := served.SiteOf(w.Batch, w.Env, "")
		return served.StartFor(context.Background(), w.Batch, site,
			func(key, line string) { w.Log.Info().Str("hook", key).Msg(line) },
			func(msg string, fellBack bool) {
				e := w.Log.Info()
				if fellBack && w.Batch.HookTransport == jobs.HookHTTP {
					e = w.Log.Warn()
				}
				e.Str("hook_transport", string(w.Batch.HookTransport)).Msg(msg)
			})
	})
}

// runSession runs the attempt's session, prepared (files), and records its
// end.
func (w *Worker) runSession(ctx context.Context, k attemptKey, a AttemptArgs, spec session.Spec, files session.Files) error {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w.mu.Lock()
	w.running[k] = cancel
	w.lastRun = a.Run
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.running, k)
		w.mu.Unlock()
	}()
	w.Log.Info().Str("job", a.Job).Int("attempt", a.Attempt).Str("run", a.Run).Msg("started")
	out := session.Run(sctx, spec, files, &observer{w: w, k: k})
	w.Log.Info().Str("job", a.Job).Int("attempt", a.Attempt).Str("status", out.Status).Str("reason", out.Reason).Msg("ended")
	return w.finish(k, out)
}

// finish records the attempt's end for the coordinator: first in this
// host's spool, then in the database, trying until the database answers
// (spool.go). It outlives the worker's context: a stopping worker still
// reports how its sessions ended, or leaves the ends in the spool for the
// next worker of this host. River's job stays running meanwhile, so the
// coordinator never reads River's end of it before the worker's.
func (w *Worker) finish(k attemptKey, out session.Outcome) error {
	w.forwardNow()
	w.mu.Lock()
	seen := w.unseen[k]
	delete(w.unseen, k)
	if p := w.process[k]; p != nil {
		p.timer.Stop()
		seen = append(seen, p.obs)
		delete(w.process, k)
	}
	w.mu.Unlock()
	// The spool and the database are outside the process: redacted, as the
	// journal is.
	e := spooledEnd{Batch: w.DB.Batch, Run: k.run, Job: k.job, Attempt: k.attempt, Host: w.Host, Worker: w.id, Outcome: out.Redacted(), Seen: seen,
		Effects: w.unsharedEffects(k)}
	w.mu.Lock()
	delete(w.effectsSent, k)
	w.mu.Unlock()
	return w.spoolAndDeliver(e)
}

// observer writes what a session sees for the coordinator, in order.
type observer struct {
	w *Worker
	k attemptKey
}

// processReport is a session's process, waiting for its attempt's next
// write.
type processReport struct {
	obs   session.Observation
	timer *time.Timer
}

// processWait is how long a session's process waits to go with its
// attempt's next write (an observation, or its end) rather than in a
// statement of its own, where the session dies with its worker
// (sessionsDieWithWorker); elsewhere it is written at once, for
// killLeftovers.
const processWait = time.Second

// sessionsDieWithWorker: a session cannot outlive its worker here (Linux's
// parent-death signal, proc.DieWithParent; Windows' kill-on-close Job
// Object, whose handle the worker holds), so the next worker of the host
// needs no process group to end it.
var sessionsDieWithWorker = runtime.GOOS == "linux" || runtime.GOOS == "windows"

// add sends one observation; one the database does not take, and every
// later one of the attempt (their order matters), goes with the
// attempt's end instead. The hooks' events go as JSON in why. The
// session's process (SawProcess) also keeps its group with the attempt,
// for the worker that replaces a dead one on this host (killLeftovers),
// and wakes nobody: the coordinator reads it at its next look, with the
// attempt's end at the latest. Where sessions die with their worker it
// waits for the attempt's next write, processWait at most: an attempt that
// ends soon costs no statement for it.
func (o *observer) add(s session.Observation) {
	if s.Kind == session.SawProcess && sessionsDieWithWorker {
		o.holdProcess(s)
		return
	}
	o.send(s)
}

// holdProcess keeps the session's process for the attempt's next write,
// and writes it after processWait if none came.
func (o *observer) holdProcess(s session.Observation) {
	w := o.w
	w.mu.Lock()
	defer w.mu.Unlock()
	p := &processReport{obs: s}
	p.timer = time.AfterFunc(processWait, func() {
		w.mu.Lock()
		held := w.process[o.k] == p
		if held {
			delete(w.process, o.k)
		}
		w.mu.Unlock()
		if held {
			o.send(s)
		}
	})
	w.process[o.k] = p
}

// send writes one observation, after the session's process when it waits.
func (o *observer) send(s session.Observation) {
	var pgid *int
	if s.Kind == session.SawProcess {
		pgid = &s.PGID
	}
	w := o.w
	batch := []session.Observation{s}
	notify := s.Kind != session.SawProcess
	w.mu.Lock()
	if p := w.process[o.k]; p != nil {
		p.timer.Stop()
		delete(w.process, o.k)
		batch = append([]session.Observation{p.obs}, batch...)
		pgid = &p.obs.PGID
	}
	behind := len(w.unseen[o.k]) > 0
	if behind {
		w.unseen[o.k] = append(w.unseen[o.k], batch...)
	}
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if behind {
		if pgid != nil {
			if err := w.insertObservations(ctx, o.k, nil, false, pgid); err != nil {
				w.db.failed(err)
			}
		}
		return
	}
	if err := w.insertObservations(ctx, o.k, batch, notify, pgid); err != nil {
		w.db.failed(err)
		w.mu.Lock()
		w.unseen[o.k] = append(w.unseen[o.k], batch...)
		w.mu.Unlock()
	}
}

// Observe tells the coordinator what the session saw.
func (o *observer) Observe(s session.Observation) { o.add(s) }

// ServeOptions are a worker process's settings (`nightwatch worker`).
type ServeOptions struct {
	Binary      string
	Env         []string
	Host        string
	Labels      []string
	MaxParallel int // 0: the batch's max_parallel
	Log         zerolog.Logger
}

// Serve is `nightwatch worker`: it connects to the batch's cluster,
// migrates the schema, and works until ctx ends.
func Serve(ctx context.Context, b *jobs.Batch, opts ServeOptions) error {
	if b.Cluster == nil {
		return fmt.Errorf("%s: the batch has no cluster: section, so it has no workers: `nightwatch run %s` runs it on this host", b.File, b.File)
	}
	dsn, err := clusterdb.DSN(b, lookup(opts.Env))
	if err != nil {
		return err
	}
	// Postgres may be down or restarting as the worker starts (a host's
	// boot, an outage): each step waits for it (retryStart).
	var db *clusterdb.DB
	if err := retryStart(ctx, opts.Log, "connect", func(ctx context.Context) (err error) {
		db, err = clusterdb.Open(ctx, dsn, b.Name)
		return err
	}); err != nil {
		return err
	}
	defer db.Close()
	if err := retryStart(ctx, opts.Log, "migrate", db.Migrate); err != nil {
		return err
	}
	if opts.Host == "" {
		opts.Host = clusterdb.Host()
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = b.MaxParallel
	}
	// This host's cache follows the cluster's health, and its hooks claim
	// the one probe and the one trial through the relay's socket.
	var relay *healthsync.Relay
	if err := retryStart(ctx, opts.Log, "shared health", func(ctx context.Context) (err error) {
		relay, err = healthsync.Start(ctx, db, &healthcheck.Store{Path: statedir.Cache(b.StateDir)},
			healthsync.Options{Host: opts.Host, Servers: ServerNames(b), Warn: func(msg string) { opts.Log.Warn().Msg(msg) }})
		return err
	}); err != nil {
		return err
	}
	defer relay.Close()
	w := &Worker{DB: db, Batch: b, Binary: opts.Binary, Env: opts.Env, Host: opts.Host, Labels: opts.Labels,
		MaxParallel: opts.MaxParallel, Log: opts.Log, PeersSocket: relay.SocketPath()}
	return w.Run(ctx)
}

// ServerNames are the batch's servers, whose health the cluster shares.
func ServerNames(b *jobs.Batch) []string {
	names := make([]string, 0, len(b.Servers))
	for _, s := range b.Servers {
		names = append(names, s.Name)
	}
	return names
}

func lookup(env []string) func(string) (string, bool) { return environ.Lookup(env) }
