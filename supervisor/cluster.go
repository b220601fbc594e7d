package supervisor

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/cluster/queue"
	"github.com/nightwatch-dev/nightwatch/internal/batchlock"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// clusterLink is a night's cluster (the batch's cluster: section): the
// night is this host's coordinator. The plan, the journal and the
// decisions stay the loop's, as on one host; what changes is where an
// attempt runs (a worker, through River) and that the journal is mirrored
// to the shared table, from which the next coordinator resumes.
type clusterLink struct {
	db *clusterdb.DB
	// exec runs the night's attempts on the workers (the night's
	// executor), once the run is known.
	exec *queue.Executor
	host string
	// lock holds the batch's advisory lock: one coordinator per batch.
	lock *pgxpool.Conn
}

// coordinatorLock is the advisory lock key of batch's coordinator.
const coordinatorLockSQL = "SELECT pg_try_advisory_lock(hashtextextended('nightwatch coordinator ' || $1, 0))"

// openCluster connects to the batch's Postgres, migrates the schema and
// takes the batch's coordinator lock, without waiting: a second `run` of
// the same batch, on any host, is refused as a second one on this host is.
func openCluster(ctx context.Context, b *jobs.Batch, env []string) (*clusterLink, error) {
	dsn, err := clusterdb.DSN(b, environ.Lookup(env))
	if err != nil {
		return nil, err
	}
	db, err := clusterdb.Open(ctx, dsn, b.Name)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	c := &clusterLink{db: db, host: clusterdb.Host()}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("the coordinator lock: %w", err)
	}
	name := fmt.Sprintf("nightwatch coordinator of %s on %s, pid %d", b.Name, c.host, os.Getpid())
	if _, err := conn.Exec(ctx, "SELECT set_config('application_name', $1, false)", name); err != nil {
		conn.Release()
		db.Close()
		return nil, fmt.Errorf("the coordinator lock: %w", err)
	}
	var got bool
	if err := conn.QueryRow(ctx, coordinatorLockSQL, b.Name).Scan(&got); err != nil {
		conn.Release()
		db.Close()
		return nil, fmt.Errorf("the coordinator lock: %w", err)
	}
	if !got {
		holder := c.lockHolder(ctx, b.Name)
		conn.Release()
		db.Close()
		return nil, &ClusterLockedError{Batch: b.Name, Holder: holder}
	}
	c.lock = conn
	return c, nil
}

// ClusterLockedError: another coordinator of the batch runs, on some host.
type ClusterLockedError struct{ Batch, Holder string }

func (e *ClusterLockedError) Error() string {
	return fmt.Sprintf("batch %q: %v in the cluster (%s); its lock goes with its connection, so a coordinator that died frees it at once",
		e.Batch, batchlock.ErrLocked, e.Holder)
}

func (e *ClusterLockedError) Is(target error) bool { return target == batchlock.ErrLocked }

// lockHolder names the session that holds the lock, as it named itself.
func (c *clusterLink) lockHolder(ctx context.Context, batch string) string {
	var name string
	err := c.db.Pool.QueryRow(ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() AND a.pid <> pg_backend_pid()
		AND a.application_name LIKE 'nightwatch coordinator of ' || $1 || ' on %' LIMIT 1`, batch).Scan(&name)
	if err != nil || name == "" {
		return "held by another coordinator"
	}
	return "held by the " + name
}

func (c *clusterLink) close() {
	if c.exec != nil {
		c.exec.Close()
	}
	if c.lock != nil {
		_, _ = c.lock.Exec(context.Background(), "SELECT pg_advisory_unlock_all()")
		c.lock.Release()
	}
	c.db.Close()
}

// openClusterJournal resumes the batch's newest run in the shared journal
// if it did not end, or starts a new one; either way every line goes to
// the shared table too (journal.Mirror).
func (n *night) openClusterJournal(ctx context.Context) (bool, error) {
	c := n.cluster
	runID, ended, err := c.db.LatestRun(ctx)
	if err != nil {
		return false, err
	}
	if runID != "" && !ended {
		events, err := c.db.RunEvents(ctx, runID)
		if err != nil {
			return false, err
		}
		if events, err = n.catchUpSharedJournal(ctx, runID, events); err != nil {
			return false, err
		}
		if n.opts.Fresh {
			n.log.Info().Str("run", runID).Msg("--fresh: closing the unfinished run of the cluster")
			ev := journal.Event{Type: journal.RunClosed, Run: runID, Time: n.now(), Host: c.host, Reason: "closed by `nightwatch run --fresh`"}
			if err := c.db.AppendJournal(ctx, c.host, ev); err != nil {
				return false, err
			}
		} else {
			j, err := journal.Restore(n.b.StateDir, runID, events)
			if err != nil {
				return false, fmt.Errorf("%w: %v", ErrJournal, err)
			}
			j.Warn = n.journalWarn
			j.Mirror = n.mirror(ctx)
			rp := journal.Replay(events)
			if why := pastWindow(n.b, rp.Started, n.now()); why != "" {
				n.closeRun(j, rp, why)
				return n.newClusterRun(ctx)
			}
			n.journal, n.runID, n.started = j, runID, rp.Started
			if n.started.IsZero() {
				n.started = n.now()
			}
			n.plan = plan.New(n.b, n.started, n.opts.RetryPause, n.opts.APIWaits)
			n.plan.Fold(events)
			if c.exec, err = queue.NewExecutor(c.db, n.b, runID, n.inbox, &n.log); err != nil {
				return false, err
			}
			n.exec = c.exec
			for _, ev := range events {
				if (ev.Type == journal.JobRetried || ev.Type == journal.JobFinished) && ev.Host != "" {
					c.exec.RanOn(ev.Job, ev.Host)
				}
			}
			if err := n.adoptInFlight(ctx, rp); err != nil {
				return false, err
			}
			n.append(journal.Event{Type: journal.RunResumed, Host: c.host, PID: os.Getpid(),
				Reason: fmt.Sprintf("pid %d on %s resumes the run from the shared journal", os.Getpid(), c.host)})
			n.log.Info().Str("run", runID).Msg("resuming an unfinished run of the cluster")
			return true, nil
		}
	}
	return n.newClusterRun(ctx)
}

// catchUpSharedJournal gives the shared journal the lines this host's
// file has beyond it: a coordinator whose database went away mid-night
// wrote them to its file only (and started nothing after). Without them a
// resumed night would run a finished job again. A file that differs from
// the table in what they share is not this run's truth: the table is.
func (n *night) catchUpSharedJournal(ctx context.Context, runID string, shared []journal.Event) ([]journal.Event, error) {
	local, err := journal.Read(statedir.Journal(n.b.StateDir, runID))
	if err != nil || len(local) <= len(shared) {
		return shared, nil
	}
	for i, ev := range shared {
		if ev.Type != local[i].Type || ev.Job != local[i].Job || ev.Attempt != local[i].Attempt {
			n.log.Warn().Str("run", runID).Msg("this host's journal file differs from the shared journal; resuming from the shared one")
			return shared, nil
		}
	}
	extra := local[len(shared):]
	for _, ev := range extra {
		if err := n.cluster.db.AppendJournal(ctx, n.cluster.host, ev); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrJournal, err)
		}
	}
	n.log.Warn().Str("run", runID).Int("lines", len(extra)).Msg("the shared journal lacked lines this host's journal file had (the database was lost mid-night); they are in it now")
	return local, nil
}

func (n *night) newClusterRun(ctx context.Context) (bool, error) {
	n.started = n.now()
	n.plan = plan.New(n.b, n.started, n.opts.RetryPause, n.opts.APIWaits)
	n.runID = journal.NewRunID(n.started)
	j, err := journal.Create(n.b.StateDir, n.runID)
	if err != nil {
		return false, err
	}
	j.Warn = n.journalWarn
	j.Mirror = n.mirror(ctx)
	n.journal = j
	if n.cluster.exec, err = queue.NewExecutor(n.cluster.db, n.b, n.runID, n.inbox, &n.log); err != nil {
		return false, err
	}
	n.exec = n.cluster.exec
	n.append(journal.Event{Type: journal.RunStarted, Batch: n.b.Name, BatchFile: n.b.File, PID: os.Getpid(), Host: n.cluster.host})
	return false, n.cluster.exec.Start(ctx)
}

// mirror writes a journal line to the shared journal: through the
// executor once there is one (it writes the lines with the next enqueue),
// directly before. It outlives a stopped night's context: the lines of its
// end still go.
func (n *night) mirror(ctx context.Context) func(journal.Event) error {
	ctx = context.WithoutCancel(ctx)
	return func(ev journal.Event) error {
		if n.cluster.exec != nil {
			return n.cluster.exec.Mirror(n.cluster.host, ev)
		}
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		return n.cluster.db.AppendJournal(wctx, n.cluster.host, ev)
	}
}

// adoptInFlight takes back the attempts the dead coordinator left on the
// workers: one still queued or running goes on (its end arrives like any
// other), one that ended meanwhile is told to the plan by the executor.
// Only an attempt never enqueued is the crash the plan already counted.
func (n *night) adoptInFlight(ctx context.Context, rp journal.RunState) error {
	for job := range rp.Running {
		attempt := rp.Attempts[job]
		state, err := n.cluster.exec.Adopt(ctx, job, attempt)
		if err != nil {
			return err
		}
		if state == "" {
			continue
		}
		n.plan.Adopt(job, attempt, n.now())
		if state == "queued" {
			n.plan.QueuedOnCluster(job, attempt)
		}
		n.log.Info().Str("job", job).Int("attempt", attempt).Str("state", state).Msg("the attempt goes on in the cluster")
	}
	return n.cluster.exec.Start(ctx)
}
