package clusterdb

import (
	"context"
	"fmt"
	"time"
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
	if w.Labels == nil {
		w.Labels = []string{}
	}
	_, err := db.Pool.Exec(ctx, `INSERT INTO nightwatch_workers (worker_id, batch, host, labels, pid, max_parallel)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = now(), stopped_at = NULL`,
		w.ID, db.Batch, w.Host, w.Labels, w.PID, w.MaxParallel)
	if err != nil {
		return fmt.Errorf("worker heartbeat: %w", err)
	}
	return nil
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
