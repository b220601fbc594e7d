package clusterdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Worker is one `nightwatch worker` process of the batch.
type Worker struct {
	ID          string
	Host        string
	Labels      []string
	PID         int
	MaxParallel int
	StartedAt   time.Time
	HeartbeatAt time.Time
	// StoppedAt is when it stopped cleanly (zero: it runs, or it died).
	StoppedAt time.Time
}

// Heartbeat records that w is alive now (and registers it the first time).
func (db *DB) Heartbeat(ctx context.Context, w Worker) error {
	return heartbeat(ctx, db.Pool, db.Batch, w)
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func heartbeat(ctx context.Context, db execer, batch string, w Worker) error {
	if w.Labels == nil {
		w.Labels = []string{}
	}
	_, err := db.Exec(ctx, `INSERT INTO nightwatch_workers (worker_id, batch, host, labels, pid, max_parallel)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = now(), stopped_at = NULL`,
		w.ID, batch, w.Host, w.Labels, w.PID, w.MaxParallel)
	if err != nil {
		return fmt.Errorf("worker heartbeat: %w", err)
	}
	return nil
}

// Presence is a worker's own connection to the database, held while it
// runs and named after it (PresenceName); the worker heartbeats on it.
// Postgres drops the connections of a process that died, so an old
// heartbeat without its presence connection says the worker's process is
// gone, and one with it says the worker lives but cannot heartbeat (or
// its host vanished without closing the connection).
type Presence struct {
	db   *DB
	w    Worker
	conn *pgx.Conn
}

// Presence is w's presence; its first Beat registers w.
func (db *DB) Presence(w Worker) *Presence { return &Presence{db: db, w: w} }

// PresenceName is the application_name of worker id's presence
// connection (a hash: Postgres keeps 63 bytes of a name).
func PresenceName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "nightwatch worker " + hex.EncodeToString(sum[:8])
}

// Beat records that the worker is alive now, on its presence connection,
// which it opens first when it has none (the first beat, or the first
// after the database went away).
func (p *Presence) Beat(ctx context.Context) error {
	if p.conn == nil {
		conn, err := p.db.Pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("worker heartbeat: %w", err)
		}
		c := conn.Hijack()
		if _, err := c.Exec(ctx, "SELECT set_config('application_name', $1, false)", PresenceName(p.w.ID)); err != nil {
			_ = c.Close(context.WithoutCancel(ctx))
			return fmt.Errorf("worker heartbeat: %w", err)
		}
		p.conn = c
	}
	if err := heartbeat(ctx, p.conn, p.db.Batch, p.w); err != nil {
		p.Close()
		return err
	}
	return nil
}

// Close closes the presence connection.
func (p *Presence) Close() {
	if p.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = p.conn.Close(ctx)
		p.conn = nil
	}
}

// PresentWorkers are the presence names (PresenceName) of the workers
// whose presence connection is open now.
func (db *DB) PresentWorkers(ctx context.Context) (map[string]bool, error) {
	rows, err := db.Pool.Query(ctx, "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'nightwatch worker %'")
	if err != nil {
		return nil, fmt.Errorf("list the workers' connections: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list the workers' connections: %w", err)
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// StopWorker records that worker id stopped cleanly.
func (db *DB) StopWorker(ctx context.Context, id string) error {
	_, err := db.Pool.Exec(ctx, "UPDATE nightwatch_workers SET stopped_at = now() WHERE worker_id = $1", id)
	return err
}

// Workers are the batch's workers, newest heartbeat first; age is how old
// each heartbeat is by the database's clock (hosts' clocks may differ).
func (db *DB) Workers(ctx context.Context) ([]Worker, []time.Duration, error) {
	rows, err := db.Pool.Query(ctx, `SELECT worker_id, host, labels, pid, max_parallel, started_at, heartbeat_at,
		COALESCE(stopped_at, 'epoch'::timestamptz), now() - heartbeat_at
		FROM nightwatch_workers WHERE batch = $1 ORDER BY heartbeat_at DESC`, db.Batch)
	if err != nil {
		return nil, nil, fmt.Errorf("list the workers: %w", err)
	}
	defer rows.Close()
	var ws []Worker
	var ages []time.Duration
	for rows.Next() {
		var w Worker
		var age time.Duration
		if err := rows.Scan(&w.ID, &w.Host, &w.Labels, &w.PID, &w.MaxParallel, &w.StartedAt, &w.HeartbeatAt, &w.StoppedAt, &age); err != nil {
			return nil, nil, err
		}
		if w.StoppedAt.Unix() == 0 {
			w.StoppedAt = time.Time{}
		}
		ws = append(ws, w)
		ages = append(ages, age)
	}
	return ws, ages, rows.Err()
}
