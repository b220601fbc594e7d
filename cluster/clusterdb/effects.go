package clusterdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nightwatch-dev/nightwatch/effects"
)

// AddEffects records calls of job in run, made on host (each with its
// number in that host's ledger), in one statement. A call recorded before
// changes nothing: adding the same calls again is harmless.
func (db *DB) AddEffects(ctx context.Context, run, job, host string, calls []effects.Call) error {
	if len(calls) == 0 {
		return nil
	}
	var attempts, ns []int32
	var servers, tools, keys, digests []string
	var ats []time.Time
	for _, c := range calls {
		attempts = append(attempts, int32(c.Attempt))
		ns = append(ns, int32(c.N))
		servers = append(servers, c.Server)
		tools = append(tools, c.Tool)
		keys = append(keys, c.Key)
		digests = append(digests, c.Digest)
		ats = append(ats, c.At)
	}
	_, err := db.Pool.Exec(ctx, `INSERT INTO nightwatch_effects (batch, run_id, job, host, attempt, n, server, tool, key, digest, at)
		SELECT $1, $2, $3, $4, c.attempt, c.n, c.server, c.tool, c.key, c.digest, c.at
		FROM unnest($5::int[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[], $11::timestamptz[]) AS c(attempt, n, server, tool, key, digest, at)
		ON CONFLICT DO NOTHING`,
		db.Batch, run, job, host, attempts, ns, servers, tools, keys, digests, ats)
	if err != nil {
		return fmt.Errorf("share the side effects of %s: %w", job, err)
	}
	return nil
}

// Effects are the calls of job in run that any host recorded, by attempt
// and time.
func (db *DB) Effects(ctx context.Context, run, job string) ([]effects.Call, error) {
	rows, err := db.Pool.Query(ctx, `SELECT attempt, n, server, tool, key, digest, at FROM nightwatch_effects
		WHERE batch = $1 AND run_id = $2 AND job = $3 ORDER BY attempt, at, n`, db.Batch, run, job)
	if err != nil {
		return nil, fmt.Errorf("read the shared side effects of %s: %w", job, err)
	}
	calls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (effects.Call, error) {
		var c effects.Call
		err := r.Scan(&c.Attempt, &c.N, &c.Server, &c.Tool, &c.Key, &c.Digest, &c.At)
		c.At = c.At.UTC()
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the shared side effects of %s: %w", job, err)
	}
	return calls, nil
}
