package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/session"
)

// Coordinator is the night's side of the queue: it enqueues attempts and
// hears of them. It runs nothing itself.
type Coordinator struct {
	DB  *clusterdb.DB
	Run string

	river     *river.Client[pgx.Tx]
	lastObs   int64
	delivered map[attemptKey]bool
	// shared holds the attempts whose job had calls in nightwatch_effects
	// when their end was read: only those are worth a read of the ledger.
	shared map[attemptKey]bool

	// The coordinator's own hold on the database, on the monotonic clock
	// (Poll's): when it last read the database whole, whether its last
	// look failed, and when it came back from its last gap (zero: no gap
	// yet; recoveredMu, as the night's loop reads it too). Postgres's
	// start time tells a restart that fell between two looks.
	lastRead    time.Time
	readFailed  bool
	recoveredMu sync.Mutex
	recovered   time.Time
	serverStart time.Time
	capacity    int // the last Capacity read
	// checkedAt is when Poll last looked for crashed attempts (monotonic).
	checkedAt time.Time
	// live are the live workers as read at liveAt (liveMu: the night's
	// loop and the pump both ask).
	liveMu sync.Mutex
	live   []clusterdb.Worker
	liveAt time.Time
}

// liveFor is how long a read of the live workers serves pickLabel and
// Live: a worker that just started waits at most that long for its first
// pinned job, and enqueuing costs no read of the workers.
const liveFor = time.Second

// insertNotifyEvery bounds how often the coordinator's River client tells
// the workers that a queue has new attempts (River's insert notification,
// limited per queue by the client's FetchCooldown, 100 ms by default):
// at River's minimum, every attempt enqueued wakes the workers at once.
const insertNotifyEvery = time.Millisecond

// readGap is the longest the coordinator may go between two whole reads of
// the database (Poll runs twice a second) before it counts a gap of its
// own: after one, no worker is judged by its heartbeat for SilentAfter.
const readGap = 2 * HeartbeatEvery

// NewCoordinator is run's coordinator on db (an insert-only River client:
// it takes no jobs and never leads River's maintenance).
func NewCoordinator(db *clusterdb.DB, run string) (*Coordinator, error) {
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{FetchCooldown: insertNotifyEvery})
	if err != nil {
		return nil, fmt.Errorf("River: %w", err)
	}
	return &Coordinator{DB: db, Run: run, river: client, delivered: map[attemptKey]bool{}, shared: map[attemptKey]bool{}}, nil
}

// Enqueue adds attempt a of a job pinned to hosts (none: any worker). A
// job pinned to several labels goes to the first one a live worker
// carries. Enqueuing the same attempt again does nothing.
func (c *Coordinator) Enqueue(ctx context.Context, a AttemptArgs, hosts []string) error {
	_, err := c.EnqueueJournaled(ctx, a, hosts, "", nil)
	return err
}

// EnqueueJournaled is Enqueue that also adds lines, written on host, to
// the shared journal in the same transaction (and statement): the
// attempt's job-started line becomes visible with its River job, never
// after. journaled says whether the lines were written (not when the
// attempt was enqueued before: the transaction is rolled back).
func (c *Coordinator) EnqueueJournaled(ctx context.Context, a AttemptArgs, hosts []string, host string, lines []journal.Event) (journaled bool, err error) {
	runs, texts, err := clusterdb.JournalRows(lines)
	if err != nil {
		return false, err
	}
	a.Batch, a.Run = c.DB.Batch, c.Run
	queue := QueueName(c.DB.Batch, "")
	if len(hosts) > 0 {
		queue = QueueName(c.DB.Batch, c.pickLabel(ctx, hosts))
	}
	// River's job first, then the attempt's row that names it, in one
	// transaction: an attempt enqueued before (a coordinator restarted)
	// has its row, and the transaction, River's insert with it, is
	// rolled back.
	err = pgx.BeginFunc(ctx, c.DB.Pool, func(tx pgx.Tx) error {
		res, err := c.river.InsertTx(ctx, tx, a, &river.InsertOpts{Queue: queue, MaxAttempts: 1,
			UniqueOpts: river.UniqueOpts{ByArgs: true}})
		if err != nil {
			return fmt.Errorf("enqueue attempt %d of %s in River: %w", a.Attempt, a.Job, err)
		}
		tag, err := tx.Exec(ctx, `WITH j AS (INSERT INTO nightwatch_journal (batch, run_id, host, event) `+
			clusterdb.JournalRowsSQL("$1", "$6", "$7", "$8")+`)
			INSERT INTO nightwatch_attempts (batch, run_id, job, attempt, river_job_id) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT DO NOTHING`, c.DB.Batch, c.Run, a.Job, a.Attempt, res.Job.ID, host, runs, texts)
		if err != nil {
			return fmt.Errorf("enqueue attempt %d of %s: %w", a.Attempt, a.Job, err)
		}
		if tag.RowsAffected() == 0 {
			return errEnqueuedBefore
		}
		return nil
	})
	if errors.Is(err, errEnqueuedBefore) {
		return false, nil
	}
	return err == nil, err
}

var errEnqueuedBefore = errors.New("enqueued before")

// Live reports whether a live worker carries label (a host name is one).
func (c *Coordinator) Live(ctx context.Context, label string) bool {
	return c.liveLabel(ctx, []string{label}) != ""
}

func (c *Coordinator) liveLabel(ctx context.Context, labels []string) string {
	c.liveMu.Lock()
	ws, at := c.live, c.liveAt
	c.liveMu.Unlock()
	if at.IsZero() || time.Since(at) >= liveFor {
		var err error
		if ws, err = c.liveWorkers(ctx); err != nil {
			return ""
		}
	}
	for _, l := range labels {
		for _, w := range ws {
			if slices.Contains(w.Labels, l) {
				return l
			}
		}
	}
	return ""
}

// liveWorkers are the batch's workers that workerDead does not take for
// dead (nor stopped): a worker silent only because the database was away
// still counts.
func (c *Coordinator) liveWorkers(ctx context.Context) ([]clusterdb.Worker, error) {
	ws, ages, err := c.DB.Workers(ctx)
	if err != nil {
		return nil, err
	}
	present, err := c.DB.PresentWorkers(ctx)
	if err != nil {
		return nil, err
	}
	heard := c.heard()
	var live []clusterdb.Worker
	for i, w := range ws {
		view := workerView{known: true, stopped: !w.StoppedAt.IsZero(), heartbeat: ages[i], present: present[clusterdb.PresenceName(w.ID)]}
		if dead, _ := workerDead(view, heard); !dead {
			live = append(live, w)
		}
	}
	c.liveMu.Lock()
	c.live, c.liveAt = live, time.Now()
	c.liveMu.Unlock()
	return live, nil
}

// pickLabel is the first of labels that a live worker carries, else the
// first: the job waits for such a worker.
func (c *Coordinator) pickLabel(ctx context.Context, labels []string) string {
	if l := c.liveLabel(ctx, labels); l != "" {
		return l
	}
	return labels[0]
}

// Capacity is how many attempts the live workers run at once (the sum of
// their max_parallel); at least 1, so that a night with no worker yet
// enqueues its first attempt and waits for one. While the database does
// not answer it is what it was.
func (c *Coordinator) Capacity(ctx context.Context) int {
	ws, err := c.liveWorkers(ctx)
	if err != nil {
		return max(c.capacity, 1)
	}
	n := 0
	for _, w := range ws {
		n += w.MaxParallel
	}
	c.capacity = max(n, 1)
	return c.capacity
}

// Abandon asks that attempt of job stop (reason StopReason: stopped with
// the night, not counted). One still queued ends at once.
func (c *Coordinator) Abandon(ctx context.Context, job string, attempt int, reason string) error {
	_, err := c.DB.Pool.Exec(ctx, `UPDATE nightwatch_attempts SET abandon = $5
		WHERE batch = $1 AND run_id = $2 AND job = $3 AND attempt = $4 AND state <> 'ended'`,
		c.DB.Batch, c.Run, job, attempt, reason)
	if err != nil {
		return fmt.Errorf("abandon attempt %d of %s: %w", attempt, job, err)
	}
	killedBy := session.KilledAbandoned
	if reason == StopReason {
		killedBy = session.KilledStopped
	}
	return c.endIf(ctx, attemptKey{c.Run, job, attempt}, "queued",
		session.Outcome{Status: session.Failed, ExitCode: -1, KilledBy: killedBy, Reason: reason})
}

// endIf ends attempt k with out if it is still in state, and finishes its
// River job in the same statement: cancelled, so that no worker starts
// it, and so that River (and River UI) no longer shows as running an
// attempt the night has concluded. River's own JobCancel only asks a
// running job's worker to stop, and the worker of an attempt ended here
// is dead or taken for dead: nobody would answer until River's rescuer,
// rescue_after later. A worker still alive stops the session itself
// (watchAbandons), and River's completion of a job no longer running
// changes nothing.
func (c *Coordinator) endIf(ctx context.Context, k attemptKey, state string, out session.Outcome) error {
	b, _ := json.Marshal(out.Redacted())
	var ended bool
	err := c.DB.Pool.QueryRow(ctx, `WITH a AS (
			UPDATE nightwatch_attempts SET state = 'ended', ended_by = 'coordinator', outcome = $6, ended_at = now()
			WHERE batch = $1 AND run_id = $2 AND job = $3 AND attempt = $4 AND state = $5 RETURNING river_job_id),
		j AS (
			UPDATE river_job SET state = 'cancelled', finalized_at = now(),
				metadata = metadata || jsonb_build_object('cancel_attempted_at', now(), 'nightwatch', $7::text)
			WHERE id = (SELECT river_job_id FROM a) AND finalized_at IS NULL)
		SELECT EXISTS (SELECT 1 FROM a)`,
		c.DB.Batch, k.run, k.job, k.attempt, state, b, "ended by the coordinator: "+out.Reason).Scan(&ended)
	if err != nil {
		return fmt.Errorf("end attempt %d of %s: %w", k.attempt, k.job, err)
	}
	return nil
}

// Poll is one look at the run: what sessions saw since the last look, in
// order, then the attempts that ended since, each once. An attempt whose
// worker died (workerDead) or whose River job River rescued or lost ends
// here as a crash.
func (c *Coordinator) Poll(ctx context.Context) ([]session.Observation, []session.Ended, error) {
	return c.poll(ctx, true)
}

// Reports is Poll without its look for crashed attempts (three reads of
// the workers, the attempts and River's jobs): what the pump reads when a
// worker's notification wakes it, between two Polls.
func (c *Coordinator) Reports(ctx context.Context) ([]session.Observation, []session.Ended, error) {
	return c.poll(ctx, false)
}

func (c *Coordinator) poll(ctx context.Context, crashes bool) ([]session.Observation, []session.Ended, error) {
	if !crashes {
		seen, ends, err := c.reports(ctx)
		if err != nil {
			c.readFailed = true
		}
		return seen, ends, err
	}
	now := time.Now()
	if c.readFailed || !c.lastRead.IsZero() && now.Sub(c.lastRead) > readGap {
		c.recover(now) // the gap ends with this look, if it reads
	}
	c.readFailed = true
	if err := c.endCrashed(ctx); err != nil {
		return nil, nil, err
	}
	c.checkedAt = time.Now()
	seen, ends, err := c.reports(ctx)
	if err == nil {
		c.readFailed, c.lastRead = false, time.Now()
	}
	return seen, ends, err
}

// CheckDue says whether the pump's next look should be a whole Poll: at
// least every crashCheckEvery, however often the workers' notifications
// wake it.
func (c *Coordinator) CheckDue() bool {
	return c.checkedAt.IsZero() || time.Since(c.checkedAt) >= crashCheckEvery
}

// crashCheckEvery is how often the coordinator looks for crashed attempts:
// a worker is taken for dead after DeadAfter at the soonest.
const crashCheckEvery = time.Second

// reports reads the attempts' ends and what the sessions saw since the
// last look, in one statement: one snapshot, in which a worker's
// observations, written before (or with) its attempt's end, are there
// whenever the end is.
func (c *Coordinator) reports(ctx context.Context) ([]session.Observation, []session.Ended, error) {
	rows, err := c.DB.Pool.Query(ctx, `SELECT 0, 0::bigint, ended_at, job, attempt, outcome, COALESCE(host, ''), '', '', '', '', '', 0, NULL::jsonb,
			EXISTS (SELECT 1 FROM nightwatch_effects f WHERE f.batch = a.batch AND f.run_id = a.run_id AND f.job = a.job)
			FROM nightwatch_attempts a WHERE batch = $1 AND run_id = $2 AND state = 'ended'
		UNION ALL
		SELECT 1, id, NULL, job, attempt, NULL, host, kind, server, status, tool, why, pgid, events, false
			FROM nightwatch_observations WHERE batch = $1 AND run_id = $2 AND id > $3
		ORDER BY 1, 3, 2`, c.DB.Batch, c.Run, c.lastObs)
	if err != nil {
		return nil, nil, fmt.Errorf("read the workers' reports: %w", err)
	}
	defer rows.Close()
	var ends []session.Ended
	var seen []session.Observation
	lastObs := c.lastObs
	for rows.Next() {
		var src int
		var id int64
		var at *time.Time
		var job, host, kind, server, status, tool, why string
		var attempt, pgid int
		var outcome, events []byte
		var shared bool
		if err := rows.Scan(&src, &id, &at, &job, &attempt, &outcome, &host, &kind, &server, &status, &tool, &why, &pgid, &events, &shared); err != nil {
			return nil, nil, err
		}
		if src == 0 {
			e := session.Ended{Job: job, Attempt: attempt, Host: host}
			if c.delivered[attemptKey{c.Run, job, attempt}] {
				continue
			}
			if shared {
				c.shared[attemptKey{c.Run, job, attempt}] = true
			}
			if err := json.Unmarshal(outcome, &e.Outcome); err != nil {
				e.Outcome = session.Outcome{Status: session.Failed, ExitCode: -1, Reason: "the outcome written by host " + host + " cannot be read: " + err.Error()}
			}
			ends = append(ends, e)
			continue
		}
		lastObs = id
		o := session.Observation{Job: job, Attempt: attempt, Kind: session.ObservationKind(kind), Server: server,
			Status: session.ServerStatus(status), Tool: tool, Why: why, PGID: pgid, Host: host}
		if events != nil && json.Unmarshal(events, &o.Events) != nil {
			continue // not written by observationColumns
		}
		if o.Kind == session.SawHookEvents && len(o.Events) == 0 {
			continue
		}
		seen = append(seen, o)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read the workers' reports: %w", err)
	}
	c.lastObs = lastObs
	for _, e := range ends {
		c.delivered[attemptKey{c.Run, e.Job, e.Attempt}] = true
	}
	return seen, ends, nil
}

// SharedEffects says whether job's calls were in nightwatch_effects when
// the end of its attempt was read, and forgets it: the pump asks once per
// end.
func (c *Coordinator) SharedEffects(job string, attempt int) bool {
	k := attemptKey{c.Run, job, attempt}
	shared := c.shared[k]
	delete(c.shared, k)
	return shared
}

// SkipObservations makes the next Poll start after what is there now (a
// resumed coordinator: the journal has what the dead one absorbed).
func (c *Coordinator) SkipObservations(ctx context.Context) error {
	return c.DB.Pool.QueryRow(ctx, "SELECT COALESCE(max(id), 0) FROM nightwatch_observations WHERE batch = $1 AND run_id = $2",
		c.DB.Batch, c.Run).Scan(&c.lastObs)
}

// workerView is what the coordinator knows of a running attempt's worker.
type workerView struct {
	known     bool          // its row exists
	stopped   bool          // it stopped cleanly
	heartbeat time.Duration // its heartbeat's age, by the database's clock
	present   bool          // its presence connection is open
}

// workerDead says whether the coordinator takes a running attempt's
// worker for dead, and why. heard is how long the coordinator has read
// the database without a gap of its own: a heartbeat missed while the
// coordinator could not look, or just after, says nothing of the worker
// (everyone may have lost the database), so it gets SilentAfter from the
// end of the gap to be heard again. Only a clean stop is news at once.
func workerDead(w workerView, heard time.Duration) (bool, string) {
	switch {
	case !w.known:
		return false, ""
	case w.stopped:
		return true, "it stopped"
	case heard < SilentAfter:
		return false, ""
	case w.heartbeat > SilentAfter:
		return true, fmt.Sprintf("no heartbeat for %s", w.heartbeat.Round(time.Second))
	case w.heartbeat > DeadAfter && !w.present:
		return true, fmt.Sprintf("no heartbeat for %s, and its connection to the database is gone", w.heartbeat.Round(time.Second))
	}
	return false, ""
}

// heard is how long the coordinator has read the database since its last
// gap (a very long time when it had none).
func (c *Coordinator) heard() time.Duration {
	c.recoveredMu.Lock()
	defer c.recoveredMu.Unlock()
	if c.recovered.IsZero() {
		return 1<<63 - 1
	}
	return time.Since(c.recovered)
}

func (c *Coordinator) recover(at time.Time) {
	c.recoveredMu.Lock()
	c.recovered = at
	c.recoveredMu.Unlock()
}

// endCrashed ends, as crashes, the running attempts whose worker is dead
// (workerDead), and the attempts whose River job ended without the worker
// writing an end (rescued by River after rescue_after, or lost). A live
// worker's attempt whose River job ended is not judged before SilentAfter:
// its worker is still delivering the end (spool.go).
func (c *Coordinator) endCrashed(ctx context.Context) error {
	// One statement: the server's start time, the workers' presence
	// connections (clusterdb.PresentWorkers) and the attempts in flight
	// with their River jobs and workers (none: one row of NULLs).
	rows, err := c.DB.Pool.Query(ctx, `WITH s AS (SELECT pg_postmaster_start_time() AS started,
			ARRAY(SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'nightwatch worker %')::text[] AS present)
		SELECT s.started, s.present, COALESCE(f.job, ''), COALESCE(f.attempt, 0), COALESCE(f.state, ''), COALESCE(f.host, ''), COALESCE(f.worker_id, ''),
			COALESCE(f.river_state, 'missing'), COALESCE(f.river_ended, 1e9)::float8,
			COALESCE(f.known, false), COALESCE(f.stopped, false), COALESCE(f.beat, 0)::float8
		FROM s LEFT JOIN (
			SELECT a.job, a.attempt, a.state, a.host, a.worker_id, j.state::text AS river_state,
				EXTRACT(EPOCH FROM now() - j.finalized_at) AS river_ended,
				k.worker_id IS NOT NULL AS known, k.stopped_at IS NOT NULL AS stopped, EXTRACT(EPOCH FROM now() - k.heartbeat_at) AS beat
			FROM nightwatch_attempts a
			LEFT JOIN river_job j ON j.id = a.river_job_id
			LEFT JOIN nightwatch_workers k ON k.worker_id = a.worker_id
			WHERE a.batch = $1 AND a.run_id = $2 AND a.state IN ('queued', 'running')) f ON true`, c.DB.Batch, c.Run)
	if err != nil {
		return fmt.Errorf("look for crashed attempts: %w", err)
	}
	type crash struct {
		k     attemptKey
		state string
		why   string
	}
	var crashes []crash
	heard := c.heard()
	first := true
	present := map[string]bool{}
	for rows.Next() {
		var job, state, host, worker, riverState string
		var attempt int
		var riverEnded, beat float64
		var wv workerView
		var serverStart time.Time
		var names []string
		if err := rows.Scan(&serverStart, &names, &job, &attempt, &state, &host, &worker, &riverState, &riverEnded, &wv.known, &wv.stopped, &beat); err != nil {
			rows.Close()
			return err
		}
		if first {
			first = false
			if !c.serverStart.IsZero() && !serverStart.Equal(c.serverStart) {
				c.recover(time.Now()) // the database restarted between two looks
				heard = c.heard()
			}
			c.serverStart = serverStart
			for _, n := range names {
				present[n] = true
			}
		}
		if job == "" {
			continue // no attempt in flight
		}
		wv.heartbeat = time.Duration(beat * float64(time.Second))
		wv.present = present[clusterdb.PresenceName(worker)]
		dead, why := workerDead(wv, heard)
		k := attemptKey{c.Run, job, attempt}
		switch {
		case state == "running" && dead:
			crashes = append(crashes, crash{k, state, fmt.Sprintf("the worker %s on host %s stopped answering mid-attempt (%s); the attempt counts as a crash",
				worker, host, why)})
		case riverState == "discarded" || riverState == "cancelled" || riverState == "completed" || riverState == "missing":
			if state == "queued" && riverState == "missing" {
				continue // being enqueued right now
			}
			if state == "running" && wv.known && time.Duration(riverEnded*float64(time.Second)) < SilentAfter {
				continue // its live worker is delivering the end
			}
			crashes = append(crashes, crash{k, state, fmt.Sprintf("River ended the attempt (%s) on host %s without a result (a worker died and River rescued it after rescue_after); the attempt counts as a crash",
				riverState, hostOr(host))})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, cr := range crashes {
		out := session.Outcome{Status: session.Failed, ExitCode: -1, KilledBy: session.KilledCrashed, Reason: cr.why}
		if err := c.endIf(ctx, cr.k, cr.state, out); err != nil {
			return err
		}
	}
	return nil
}

func hostOr(h string) string {
	if h == "" {
		return "(none yet)"
	}
	return h
}

// State is where attempt of job is: "queued", "running", "ended", or ""
// when the coordinator never enqueued it.
func (c *Coordinator) State(ctx context.Context, job string, attempt int) (string, error) {
	var s string
	err := c.DB.Pool.QueryRow(ctx, `SELECT state FROM nightwatch_attempts WHERE batch = $1 AND run_id = $2 AND job = $3 AND attempt = $4`,
		c.DB.Batch, c.Run, job, attempt).Scan(&s)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return s, err
}

// Waiter wakes the coordinator's pump when a worker reports (the workers
// NOTIFY nightwatch_attempts), so that an attempt's end reaches the night
// at once rather than at the next poll.
type Waiter struct {
	conn *pgxpool.Conn
}

// Listen starts listening on a connection of its own.
func (c *Coordinator) Listen(ctx context.Context) (*Waiter, error) {
	conn, err := c.DB.Pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("listen for the workers' reports: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN nightwatch_attempts"); err != nil {
		conn.Release()
		return nil, fmt.Errorf("listen for the workers' reports: %w", err)
	}
	return &Waiter{conn: conn}, nil
}

// Wait returns when a report may have arrived, or after d. A broken
// connection makes it a plain sleep; the pump still polls.
func (w *Waiter) Wait(ctx context.Context, d time.Duration) {
	if w == nil || w.conn == nil {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		return
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	if _, err := w.conn.Conn().WaitForNotification(wctx); err != nil && wctx.Err() == nil {
		// The connection broke: from now on a plain poll.
		w.conn.Release()
		w.conn = nil
		if rest := d - time.Since(start); rest > 0 {
			w.Wait(ctx, rest)
		}
	}
}

// Close releases the connection.
func (w *Waiter) Close() {
	if w != nil && w.conn != nil {
		// A connection that was listening goes back clean.
		_, _ = w.conn.Exec(context.Background(), "UNLISTEN *")
		w.conn.Release()
	}
}
