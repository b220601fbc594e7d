package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/session"
)

// The spool: a worker writes each attempt's end to a file of its host's
// state folder (statedir.SpooledEnd) before it tells the database, and
// removes the file once the database has the end. An end made while the
// database is away is delivered when it answers again; one a worker left
// when it died or stopped is delivered by the next worker of that host.
//
// Delivery is one statement that changes nothing when the attempt has
// ended already, so delivering an end twice is harmless. The first end
// recorded is the attempt's end: the worker's, or the coordinator's
// verdict. The coordinator makes a verdict on a running attempt only when
// its worker is dead (workerDead, which never counts a gap in the
// coordinator's own reads of the database) or when River finished the
// attempt's job long before (SilentAfter) without an end; while a worker
// delivers, River's job is still running. So a live worker's end, however
// late, is never beaten by a verdict; an end that arrives after one (its
// worker was dead, or cut off from the database past FenceAfter) is
// dropped, with a warning: the night has acted on the verdict.

// spooledEnd is one attempt's end as the spool keeps it.
type spooledEnd struct {
	Batch   string          `json:"batch"`
	Run     string          `json:"run"`
	Job     string          `json:"job"`
	Attempt int             `json:"attempt"`
	Host    string          `json:"host"`
	Worker  string          `json:"worker"`
	Outcome session.Outcome `json:"outcome"`
	// Seen is what the session saw that did not reach the database while
	// it ran, in order: it is delivered with the end, before it.
	Seen []session.Observation `json:"seen,omitempty"`
	// Effects are the attempt's side effects (its host's ledger's calls)
	// not shared yet: they are delivered before the end.
	Effects []effects.Call `json:"effects,omitempty"`
}

// spoolGrace is how long a stopping worker goes on delivering its ends
// before it leaves them in the spool.
const spoolGrace = 10 * time.Second

// Delivery's backoff while the database does not answer.
const (
	retryFirst = 250 * time.Millisecond
	retryMax   = 2 * time.Second
)

// maxSpooled bounds a spool file nightwatch reads.
const maxSpooled = 16 << 20

func (w *Worker) spoolPath(e spooledEnd) string {
	return statedir.SpooledEnd(w.Batch.StateDir, e.Run, e.Job, e.Attempt)
}

// spoolAndDeliver writes e to the spool, then delivers it, trying until
// the database answers or the worker's delivery time is over (then the
// end waits in the spool).
func (w *Worker) spoolAndDeliver(e spooledEnd) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode the end of attempt %d of %s: %w", e.Attempt, e.Job, err)
	}
	path := w.spoolPath(e)
	spooled := true
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		spooled = false
		w.Log.Error().Err(err).Str("job", e.Job).Msg("cannot keep the attempt's end in the spool; delivering it directly")
	} else if err := atomicfile.WriteFile(path, b, atomicfile.Mode); err != nil {
		spooled = false
		w.Log.Error().Err(err).Str("job", e.Job).Msg("cannot keep the attempt's end in the spool; delivering it directly")
	}
	wait := retryFirst
	for {
		err := w.deliver(w.delivery, e)
		if err == nil {
			if spooled {
				removeSpooled(path)
			}
			return nil
		}
		select {
		case <-w.delivery.Done():
			if spooled {
				w.Log.Warn().Str("job", e.Job).Int("attempt", e.Attempt).Str("spool", path).
					Msg("the attempt's end waits in the spool: the next worker of this host delivers it")
				return nil
			}
			return fmt.Errorf("record the end of attempt %d of %s: %w", e.Attempt, e.Job, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}

// deliver gives the database one end, in one statement: what the session
// saw and could not tell while it ran, then the end, and the coordinator's
// notification, unless the attempt has ended already (delivered before,
// or a verdict of the coordinator's); then nothing changes. The row's lock
// orders two deliveries of the same end: the second finds it ended.
func (w *Worker) deliver(ctx context.Context, e spooledEnd) error {
	b, err := json.Marshal(e.Outcome)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// The calls go first, and whatever became of the attempt: they
	// happened. The coordinator reads them when it hears the end.
	if err := w.DB.AddEffects(ctx, e.Run, e.Job, e.Host, e.Effects); err != nil {
		if ctx.Err() == nil {
			w.db.failed(err)
		}
		return err
	}
	kinds, servers, statuses, tools, whys, pgids, events := observationColumns(e.Seen)
	var taken bool
	err = w.DB.Pool.QueryRow(ctx, `WITH a AS (
			UPDATE nightwatch_attempts SET state = 'ended', ended_by = 'worker', outcome = $12, ended_at = now(), host = $5
			WHERE batch = $1 AND run_id = $2 AND job = $3 AND attempt = $4 AND state <> 'ended' RETURNING 1),
		o AS (`+insertObservationsSQL("$14")+` WHERE EXISTS (SELECT 1 FROM a) ORDER BY o.n),
		n AS (SELECT pg_notify('nightwatch_attempts', $13) FROM a)
		SELECT EXISTS (SELECT 1 FROM a), (SELECT count(*) FROM n) >= 0`,
		e.Batch, e.Run, e.Job, e.Attempt, e.Host, kinds, servers, statuses, tools, whys, pgids, b, e.Batch+"/"+e.Run, events).Scan(&taken, new(bool))
	if err != nil {
		if ctx.Err() == nil {
			w.db.failed(err)
		}
		return err
	}
	w.db.ok()
	if !taken {
		// Not the database's run (it was emptied), or ended before: by
		// the coordinator's verdict, say so.
		var endedBy *string
		err := w.DB.Pool.QueryRow(ctx, `SELECT ended_by FROM nightwatch_attempts WHERE batch = $1 AND run_id = $2 AND job = $3 AND attempt = $4`,
			e.Batch, e.Run, e.Job, e.Attempt).Scan(&endedBy)
		if err == nil && endedBy != nil && *endedBy == "coordinator" {
			w.Log.Warn().Str("job", e.Job).Int("attempt", e.Attempt).Str("status", e.Outcome.Status).
				Msg("the coordinator had ended this attempt already (it took its worker for dead); this end is dropped")
		}
	}
	return nil
}

// insertObservationsSQL inserts, in order, the observations of attempt
// ($1 batch, $2 run, $3 job, $4 attempt) on host $5 whose columns
// observationColumns gives as $6 to $11 and events (the parameter named);
// a statement adds its own WHERE and ORDER BY o.n.
func insertObservationsSQL(events string) string {
	return `INSERT INTO nightwatch_observations (batch, run_id, job, attempt, host, kind, server, status, tool, why, pgid, events)
	SELECT $1, $2, $3, $4, $5, o.kind, o.server, o.status, o.tool, o.why, o.pgid, o.events
	FROM unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::int[], ` + events + `::jsonb[])
		WITH ORDINALITY AS o(kind, server, status, tool, why, pgid, events, n)`
}

// observationColumns are seen as insertObservationsSQL's columns: the
// one way a session.Observation becomes a row (Coordinator.reports reads
// it back).
func observationColumns(seen []session.Observation) (kinds, servers, statuses, tools, whys []string, pgids []int32, events []*string) {
	for _, o := range seen {
		kinds = append(kinds, string(o.Kind))
		servers = append(servers, o.Server)
		statuses = append(statuses, string(o.Status))
		tools = append(tools, o.Tool)
		whys = append(whys, o.Why)
		pgids = append(pgids, int32(o.PGID))
		var ev *string
		if len(o.Events) > 0 {
			if b, err := json.Marshal(o.Events); err == nil {
				s := string(b)
				ev = &s
			}
		}
		events = append(events, ev)
	}
	return kinds, servers, statuses, tools, whys, pgids, events
}

// insertObservations sends what a session saw, in order, in one statement;
// notify wakes the coordinator for them. pgid, when set, is the session's
// process group, kept with the attempt in the same statement
// (killLeftovers).
func (w *Worker) insertObservations(ctx context.Context, k attemptKey, seen []session.Observation, notify bool, pgid *int) error {
	kinds, servers, statuses, tools, whys, pgids, events := observationColumns(seen)
	var setPGID, startID any
	if pgid != nil {
		setPGID, startID = *pgid, proc.StartID(*pgid)
	}
	_, err := w.DB.Pool.Exec(ctx, `WITH p AS (
			UPDATE nightwatch_attempts SET pgid = $13, start_id = $14
			WHERE $13::int IS NOT NULL AND batch = $1 AND run_id = $2 AND job = $3 AND attempt = $4),
		o AS (`+insertObservationsSQL("$16")+` ORDER BY o.n)
		SELECT pg_notify('nightwatch_attempts', $12) WHERE $15::bool`,
		w.DB.Batch, k.run, k.job, k.attempt, w.Host, kinds, servers, statuses, tools, whys, pgids,
		w.DB.Batch+"/"+k.run, setPGID, startID, notify, events)
	if err != nil {
		return fmt.Errorf("tell the coordinator what the session of %s saw: %w", k.job, err)
	}
	return nil
}

// deliverSpool delivers the ends in this host's spool that no running
// attempt is delivering (those a dead or stopped worker of this host
// left), when the worker starts and every few seconds, until ctx ends.
func (w *Worker) deliverSpool(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		w.deliverSpooled(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// deliverSpooled delivers the spool's ends once, until the database stops
// answering or ctx ends.
func (w *Worker) deliverSpooled(ctx context.Context) {
	if w.Batch.StateDir == "" {
		return
	}
	paths, _ := filepath.Glob(statedir.SpooledEnds(w.Batch.StateDir))
	for _, path := range paths {
		if ctx.Err() != nil {
			return
		}
		b, err := atomicfile.Read(path, maxSpooled)
		if errors.Is(err, fs.ErrNotExist) {
			continue // delivered meanwhile
		}
		var e spooledEnd
		if err == nil {
			err = json.Unmarshal(b, &e)
		}
		if err != nil {
			w.Log.Error().Err(err).Str("spool", path).Msg("a spooled attempt end cannot be read; it is left where it is")
			continue
		}
		if e.Batch != w.DB.Batch {
			continue
		}
		w.mu.Lock()
		_, mine := w.running[attemptKey{e.Run, e.Job, e.Attempt}]
		w.mu.Unlock()
		if mine && e.Worker == w.id {
			continue // its own attempt's finish delivers it
		}
		if err := w.deliver(ctx, e); err != nil {
			return // the database does not answer: try again later
		}
		removeSpooled(path)
		if e.Worker != w.id {
			w.Log.Info().Str("job", e.Job).Int("attempt", e.Attempt).Str("from", e.Worker).
				Msg("delivered an attempt's end a previous worker of this host left in the spool")
		}
	}
}

// removeSpooled removes a delivered end's file. One that stays (it cannot
// be removed) is delivered again later, which changes nothing.
func removeSpooled(path string) { _ = os.Remove(path) }

// dbOutage logs the worker's loss of the database once when it begins and
// once when it ends, however many of its writes fail in between.
type dbOutage struct {
	log   zerolog.Logger
	mu    sync.Mutex
	down  bool
	since time.Time
}

func (o *dbOutage) failed(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down {
		return
	}
	o.down, o.since = true, time.Now()
	o.log.Error().Err(err).Msg("cannot reach the cluster's database: the sessions go on, their ends wait in this host's spool until it answers")
}

func (o *dbOutage) ok() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		return
	}
	o.down = false
	o.log.Info().Dur("after", time.Since(o.since).Round(time.Millisecond)).Msg("the cluster's database answers again; the spooled ends are delivered")
}
