package clusterdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// HealthChannel is the LISTEN/NOTIFY channel of nightwatch_health: every
// write of a row notifies it, in the same transaction, with a
// HealthNotice as JSON.
const HealthChannel = "nightwatch_health"

// HealthNotice is the payload of one notification: which row changed, to
// which revision, by which host.
type HealthNotice struct {
	Batch  string `json:"batch"`
	Server string `json:"server"`
	Rev    int64  `json:"rev"`
	Host   string `json:"host"`
}

// HealthRow is one server's row of the batch.
type HealthRow struct {
	Server string
	// Entry is the server's healthcheck.Entry as JSON.
	Entry []byte
	Rev   int64
	Host  string
}

// HealthRows are every row of the batch.
func (db *DB) HealthRows(ctx context.Context) ([]HealthRow, error) {
	rows, err := db.Pool.Query(ctx, "SELECT server, entry, rev, host FROM nightwatch_health WHERE batch = $1 ORDER BY server", db.Batch)
	if err != nil {
		return nil, fmt.Errorf("read the shared health: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (HealthRow, error) {
		var h HealthRow
		err := r.Scan(&h.Server, &h.Entry, &h.Rev, &h.Host)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the shared health: %w", err)
	}
	return out, nil
}

// HealthRowOf is server's row (ok false when it has none).
func (db *DB) HealthRowOf(ctx context.Context, server string) (HealthRow, bool, error) {
	h := HealthRow{Server: server}
	err := db.Pool.QueryRow(ctx, "SELECT entry, rev, host FROM nightwatch_health WHERE batch = $1 AND server = $2",
		db.Batch, server).Scan(&h.Entry, &h.Rev, &h.Host)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("read the shared health of %s: %w", server, err)
	}
	return h, true, nil
}

// PutHealth writes server's entry as host, deciding under the row's lock:
// merge gets the row's current entry (nil when there is none) and returns
// the entry to write, or nil to leave the row as it is. A written row's
// revision grows by one and HealthChannel is notified in the same
// transaction, so no reader sees a notice before the row. wrote says
// whether it wrote; row is the row as it is now either way.
func (db *DB) PutHealth(ctx context.Context, host, server string, merge func(current []byte) ([]byte, error)) (row HealthRow, wrote bool, err error) {
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		row, wrote = HealthRow{Server: server}, false
		for try := 0; ; try++ {
			err := tx.QueryRow(ctx, "SELECT entry, rev, host FROM nightwatch_health WHERE batch = $1 AND server = $2 FOR UPDATE",
				db.Batch, server).Scan(&row.Entry, &row.Rev, &row.Host)
			if err == nil {
				break
			}
			if !errors.Is(err, pgx.ErrNoRows) || try > 0 {
				return err
			}
			next, err := merge(nil)
			if err != nil || next == nil {
				return err
			}
			// Two hosts may insert the first row at once: the loser
			// waits for the winner's commit, conflicts, and merges with
			// its row like any later write.
			tag, err := tx.Exec(ctx, `INSERT INTO nightwatch_health (batch, server, entry, rev, host) VALUES ($1, $2, $3, 1, $4)
				ON CONFLICT (batch, server) DO NOTHING`, db.Batch, server, next, host)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				row = HealthRow{Server: server, Entry: next, Rev: 1, Host: host}
				wrote = true
				return db.notify(ctx, tx, row)
			}
		}
		next, err := merge(row.Entry)
		if err != nil || next == nil {
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE nightwatch_health SET entry = $3, rev = rev + 1, host = $4, updated_at = now()
			WHERE batch = $1 AND server = $2 RETURNING rev`, db.Batch, server, next, host).Scan(&row.Rev); err != nil {
			return err
		}
		row.Entry, row.Host, wrote = next, host, true
		return db.notify(ctx, tx, row)
	})
	if err != nil {
		return row, false, fmt.Errorf("write the shared health of %s: %w", server, err)
	}
	return row, wrote, nil
}

func (db *DB) notify(ctx context.Context, tx pgx.Tx, row HealthRow) error {
	b, _ := json.Marshal(HealthNotice{Batch: db.Batch, Server: row.Server, Rev: row.Rev, Host: row.Host})
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", HealthChannel, string(b))
	return err
}

// Claim asks for the one claim of kind on server as holder, for ttl: it is
// granted when nobody holds it or the holder's time ran out. When it is
// not, the holder is returned ("" if it was released meanwhile).
func (db *DB) Claim(ctx context.Context, server, kind, holder string, ttl time.Duration) (granted bool, current string, err error) {
	err = db.Pool.QueryRow(ctx, `INSERT INTO nightwatch_claims (batch, server, kind, holder, until)
		VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond')
		ON CONFLICT (batch, server, kind) DO UPDATE SET holder = EXCLUDED.holder, until = EXCLUDED.until
		WHERE nightwatch_claims.until < now()
		RETURNING holder`, db.Batch, server, kind, holder, ttl.Milliseconds()).Scan(&current)
	if err == nil {
		return true, current, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, "", fmt.Errorf("claim the %s of %s: %w", kind, server, err)
	}
	err = db.Pool.QueryRow(ctx, "SELECT holder FROM nightwatch_claims WHERE batch = $1 AND server = $2 AND kind = $3",
		db.Batch, server, kind).Scan(&current)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, "", fmt.Errorf("claim the %s of %s: %w", kind, server, err)
	}
	return false, current, nil
}

// ReleaseClaim gives holder's claim back (nothing when another holds it).
func (db *DB) ReleaseClaim(ctx context.Context, server, kind, holder string) error {
	_, err := db.Pool.Exec(ctx, "DELETE FROM nightwatch_claims WHERE batch = $1 AND server = $2 AND kind = $3 AND holder = $4",
		db.Batch, server, kind, holder)
	if err != nil {
		return fmt.Errorf("release the %s of %s: %w", kind, server, err)
	}
	return nil
}
